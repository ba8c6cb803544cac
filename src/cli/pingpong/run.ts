/**
 * The three roles of `rx-verbs pingpong` (server, client, both in one
 * process), the same for every mode: the mode decides the QPs, the size of
 * the address exchange and the look of the address lines.
 */
import { PingPongEnd, type Mode } from './end';
import { eventsUntilDone, pollUntilDone } from './loops';
import type { PingPongOptions } from './options';
import { rcMode } from './rc';
import { srqMode } from './srq';
import { udMode } from './ud';
import { exchangeAsClient, listen, type Dest } from './wire';

/** Where the report lines go (stdout, or a test's collector). */
export type Print = (line: string) => void;

/** The mode the options pick. */
export function modeOf(opts: Pick<PingPongOptions, 'srq' | 'ud'>): Mode {
  return opts.srq ? srqMode : opts.ud ? udMode : rcMode;
}

/** An end of the mode the options pick. */
export function makeEnd(opts: PingPongOptions): PingPongEnd {
  const end = new PingPongEnd(opts, modeOf(opts));
  if (end.ctx.provider === 'soft' && !opts.loopback) {
    end.close();
    throw new Error(`${opts.device} is a soft device: it exists inside one process, so two processes cannot connect through it; use --loopback`);
  }
  return end;
}

function printDests(print: Print, end: PingPongEnd, which: 'local' | 'remote', dests: readonly Dest[], prefix = ''): void {
  for (const d of dests) print(`${prefix}${end.mode.describe(which, d)}`);
}

async function runLoop(ends: PingPongEnd[], opts: PingPongOptions): Promise<void> {
  const timeoutMs = opts.timeout * 1000;
  if (opts.events) await Promise.all(ends.map((e) => eventsUntilDone(e, opts.pipeline, timeoutMs)));
  else pollUntilDone(ends, timeoutMs);
}

/** Server: wait for one client, then ping-pong. */
export async function runServer(opts: PingPongOptions, print: Print): Promise<void> {
  const end = makeEnd(opts);
  try {
    const listener = await listen(opts.tcpPort, opts.bind, end.mode.table);
    try {
      printDests(print, end, 'local', end.locals);
      const remotes = await listener.exchange(end.locals, (r) => end.connect(r));
      printDests(print, end, 'remote', remotes);
    } finally {
      listener.close();
    }
    end.start(false);
    await runLoop([end], opts);
    end.report().forEach((l) => print(l));
  } finally {
    end.close();
  }
}

/** Client: connect to the server at `opts.server`, then ping-pong. */
export async function runClient(opts: PingPongOptions, print: Print): Promise<void> {
  const end = makeEnd(opts);
  try {
    printDests(print, end, 'local', end.locals);
    const remotes = await exchangeAsClient(opts.server as string, opts.tcpPort, end.locals, end.mode.table);
    printDests(print, end, 'remote', remotes);
    end.connect(remotes);
    end.start(true);
    await runLoop([end], opts);
    end.report().forEach((l) => print(l));
  } finally {
    end.close();
  }
}

/**
 * Both roles in this process, each with its own context on the device,
 * exchanging over 127.0.0.1 exactly as two processes would. Polling drives
 * both ends from one loop; with events each end has its own pipeline.
 */
export async function runLoopback(opts: PingPongOptions, print: Print): Promise<void> {
  await runPair(opts, opts, print);
}

/**
 * {@link runLoopback} with options of its own for each end, as two
 * processes could have them (tests give the ends different `-c`); the loop
 * (`-e`, `--pipeline`, `--timeout`) follows the server's.
 */
export async function runPair(serverOpts: PingPongOptions, clientOpts: PingPongOptions, print: Print): Promise<void> {
  const server = makeEnd(serverOpts);
  let client: PingPongEnd | undefined;
  try {
    client = makeEnd(clientOpts);
    const listener = await listen(serverOpts.tcpPort, '127.0.0.1', server.mode.table);
    let serverRemotes: Dest[];
    let clientRemotes: Dest[];
    try {
      const serverSide = listener.exchange(server.locals, (r) => server.connect(r));
      clientRemotes = await exchangeAsClient('127.0.0.1', listener.port, client.locals, client.mode.table);
      serverRemotes = await serverSide;
    } finally {
      listener.close();
    }
    client.connect(clientRemotes);
    printDests(print, server, 'local', server.locals, '[server]');
    printDests(print, server, 'remote', serverRemotes, '[server]');
    printDests(print, client, 'local', client.locals, '[client]');
    printDests(print, client, 'remote', clientRemotes, '[client]');
    server.start(false);
    client.start(true);
    await runLoop([server, client], serverOpts);
    server.report().forEach((l) => print(`[server] ${l}`));
    client.report().forEach((l) => print(`[client] ${l}`));
  } finally {
    client?.close();
    server.close();
  }
}
