/** The three roles of `rx-verbs pingpong`: server, client, and both in one process. */
import { eventsUntilDone, pollUntilDone } from './loops';
import type { PingPongOptions } from './options';
import { makeEnd, PingPongEnd as Side } from './end';
import { describeUdDest } from './ud-side';
import { Dest, describeDest as describeRcDest, exchangeAsClient, listen } from './wire';

/** Where the report lines go (stdout, or a test's collector). */
export type Print = (line: string) => void;

/** An address line as the mode's rdma-core program prints it. */
function describeDest(opts: PingPongOptions, which: 'local' | 'remote', d: Dest): string {
  return opts.ud ? describeUdDest(which, d) : describeRcDest(which, d);
}

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
  const side = makeEnd(opts);
  try {
    checkSide(side, opts);
    const listener = await listen(opts.tcpPort, opts.bind);
    try {
      print(describeDest(opts, 'local', side.local));
      const remote = await listener.exchange(side.local, (r) => side.connect(r));
      print(describeDest(opts, 'remote', remote));
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
  const side = makeEnd(opts);
  try {
    checkSide(side, opts);
    print(describeDest(opts, 'local', side.local));
    const remote = await exchangeAsClient(opts.server as string, opts.tcpPort, side.local);
    print(describeDest(opts, 'remote', remote));
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
  const server = makeEnd(opts);
  let client: Side | undefined;
  try {
    client = makeEnd(opts);
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
    print(`[server]${describeDest(opts, 'local', server.local)}`);
    print(`[server]${describeDest(opts, 'remote', serverRemote)}`);
    print(`[client]${describeDest(opts, 'local', client.local)}`);
    print(`[client]${describeDest(opts, 'remote', clientRemote)}`);
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
