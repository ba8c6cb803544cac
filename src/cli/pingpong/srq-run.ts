/** The three roles of `rx-verbs pingpong --srq` (ibv_srq_pingpong's mode). */
import { eventsUntilDone, pollUntilDone } from './loops';
import type { PingPongOptions } from './options';
import type { Print } from './run';
import { SrqSide } from './srq-side';
import { exchangeSrqAsClient, listenSrq } from './srq-wire';
import { describeDest } from './wire';

function checkSide(side: SrqSide, opts: PingPongOptions): void {
  if (side.ctx.provider === 'soft' && !opts.loopback) {
    throw new Error(`${opts.device} is a soft device: it exists inside one process, so two processes cannot connect through it; use --loopback`);
  }
}

async function runLoop(sides: SrqSide[], opts: PingPongOptions): Promise<void> {
  const timeoutMs = opts.timeout * 1000;
  if (opts.events) await Promise.all(sides.map((s) => eventsUntilDone(s, opts.pipeline, timeoutMs)));
  else pollUntilDone(sides, timeoutMs);
}

/** Server: wait for one client, then every QP ping-pongs. */
export async function runSrqServer(opts: PingPongOptions, print: Print): Promise<void> {
  const side = new SrqSide(opts);
  try {
    checkSide(side, opts);
    const listener = await listenSrq(opts.tcpPort, opts.bind);
    try {
      side.locals.forEach((d) => print(describeDest('local', d)));
      const remotes = await listener.exchange(side.locals, (r) => side.connect(r));
      remotes.forEach((d) => print(describeDest('remote', d)));
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

/** Client: connect to the server at `opts.server`, then every QP ping-pongs. */
export async function runSrqClient(opts: PingPongOptions, print: Print): Promise<void> {
  const side = new SrqSide(opts);
  try {
    checkSide(side, opts);
    side.locals.forEach((d) => print(describeDest('local', d)));
    const remotes = await exchangeSrqAsClient(opts.server as string, opts.tcpPort, side.locals);
    remotes.forEach((d) => print(describeDest('remote', d)));
    side.connect(remotes);
    side.start(true);
    await runLoop([side], opts);
    side.report().forEach((l) => print(l));
  } finally {
    side.close();
  }
}

/** Both roles in this process, each with its own context, over 127.0.0.1. */
export async function runSrqLoopback(opts: PingPongOptions, print: Print): Promise<void> {
  const server = new SrqSide(opts);
  let client: SrqSide | undefined;
  try {
    client = new SrqSide(opts);
    const listener = await listenSrq(opts.tcpPort, '127.0.0.1');
    let serverRemotes;
    let clientRemotes;
    try {
      const serverSide = listener.exchange(server.locals, (r) => server.connect(r));
      clientRemotes = await exchangeSrqAsClient('127.0.0.1', listener.port, client.locals);
      serverRemotes = await serverSide;
    } finally {
      listener.close();
    }
    client.connect(clientRemotes);
    server.locals.forEach((d) => print(`[server]${describeDest('local', d)}`));
    serverRemotes.forEach((d) => print(`[server]${describeDest('remote', d)}`));
    client.locals.forEach((d) => print(`[client]${describeDest('local', d)}`));
    clientRemotes.forEach((d) => print(`[client]${describeDest('remote', d)}`));
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
