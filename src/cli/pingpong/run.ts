/** The three roles of `rx-verbs pingpong`: server, client, and both in one process. */
import { eventsUntilDone, pollUntilDone } from './loops';
import type { PingPongOptions } from './options';
import { Side } from './side';
import { describeDest, exchangeAsClient, listen } from './wire';

/** Where the report lines go (stdout, or a test's collector). */
export type Print = (line: string) => void;

function checkSide(side: Side, opts: PingPongOptions): void {
  if (side.ctx.provider === 'soft' && !opts.loopback) {
    throw new Error(
      `${opts.device} is a soft device: it exists inside one process, so two processes cannot connect through it; use --loopback`,
    );
  }
}

async function runLoop(sides: Side[], opts: PingPongOptions): Promise<void> {
  const timeoutMs = opts.timeout * 1000;
  if (opts.events) await Promise.all(sides.map((s) => eventsUntilDone(s, opts.pipeline, timeoutMs)));
  else pollUntilDone(sides, timeoutMs);
}

/** Server: wait for one client, then ping-pong. */
export async function runServer(opts: PingPongOptions, print: Print): Promise<void> {
  const side = new Side(opts);
  try {
    checkSide(side, opts);
    const listener = await listen(opts.tcpPort, opts.bind);
    try {
      print(describeDest('local', side.local));
      const remote = await listener.exchange(side.local, (r) => side.connect(r));
      print(describeDest('remote', remote));
    } finally {
      listener.close();
    }
    side.start(false);
    await runLoop([side], opts);
    side.report().forEach((l) => print(l));
  } finally {
    side.close();
  }
}

/** Client: connect to the server at `opts.server`, then ping-pong. */
export async function runClient(opts: PingPongOptions, print: Print): Promise<void> {
  const side = new Side(opts);
  try {
    checkSide(side, opts);
    print(describeDest('local', side.local));
    const remote = await exchangeAsClient(opts.server as string, opts.tcpPort, side.local);
    print(describeDest('remote', remote));
    side.connect(remote);
    side.start(true);
    await runLoop([side], opts);
    side.report().forEach((l) => print(l));
  } finally {
    side.close();
  }
}

/**
 * Both roles in this process, each with its own context on the device,
 * exchanging over 127.0.0.1 exactly as two processes would. Polling drives
 * both sides from one loop; with events each side has its own pipeline.
 */
export async function runLoopback(opts: PingPongOptions, print: Print): Promise<void> {
  const server = new Side(opts);
  let client: Side | undefined;
  try {
    client = new Side(opts);
    const listener = await listen(opts.tcpPort, '127.0.0.1');
    let serverRemote;
    let clientRemote;
    try {
      const serverSide = listener.exchange(server.local, (r) => server.connect(r));
      clientRemote = await exchangeAsClient('127.0.0.1', listener.port, client.local);
      serverRemote = await serverSide;
    } finally {
      listener.close();
    }
    client.connect(clientRemote);
    print(`[server]${describeDest('local', server.local)}`);
    print(`[server]${describeDest('remote', serverRemote)}`);
    print(`[client]${describeDest('local', client.local)}`);
    print(`[client]${describeDest('remote', clientRemote)}`);
    server.start(false);
    client.start(true);
    await runLoop([server, client], opts);
    server.report().forEach((l) => print(`[server] ${l}`));
    client.report().forEach((l) => print(`[client] ${l}`));
  } finally {
    client?.close();
    server.close();
  }
}
