/**
 * The roles of `rx-verbs rping`: server (one client, or with -P any number,
 * one after another or at once), client, and both in one process.
 *
 * Each connection is made by the package's `listen()` / `connect()` with a
 * QP sized as rping sizes its own (16 send slots, 2 receive slots), its
 * receive posted before the connection is up (`prepare`), and rping's
 * connection parameters (responder resources 1, initiator depth 1, retry 7,
 * RNR retry 7: the CM's defaults).
 */
import { connect, listen, type Connection, type ConnectionRequest, type Listener, type VerbsResources } from '../../index';
import { formatAddress, numericHost, refuseSoftAcrossProcesses } from '../shared/cm';
import type { RpingOptions } from './options';
import { RpingSession, type Print, type SessionOptions } from './session';

export type { Print } from './session';

/** rping's QP and CQ sizes. */
const RESOURCES = { cqe: 32, cap: { maxSendWr: 16, maxRecvWr: 2, maxSendSge: 1, maxRecvSge: 1 } };

/** rping's listen backlog. */
const BACKLOG = 3;

/**
 * Test hook: `RX_VERBS_TEST_RPING_CORRUPT=<n>` makes our server spoil its
 * copy of ping n before writing it back, so a client's -V has something to
 * catch. Read once, here, never by the protocol code.
 */
function corruptPing(): number | undefined {
  const v = process.env.RX_VERBS_TEST_RPING_CORRUPT;
  return v === undefined || v === '' ? undefined : Number(v);
}

function sessionOptions(opts: RpingOptions): SessionOptions {
  return { size: opts.size, count: opts.count, verbose: opts.verbose, validate: opts.validate, debug: opts.debug };
}

/**
 * Makes a connection with `open` (connect or accept), the session's buffers
 * registered and its receive posted in `prepare`, before the peer can send;
 * then runs the session and closes both (the connection first: it
 * disconnects and stops the device).
 */
async function runSession(
  open: (prepare: (r: VerbsResources) => void) => Promise<Connection>,
  role: 'server' | 'client',
  opts: RpingOptions,
  print: Print,
  connected?: (conn: Connection) => void,
): Promise<number> {
  const options = { ...sessionOptions(opts), corruptPing: role === 'server' ? corruptPing() : undefined };
  let session: RpingSession | undefined;
  let conn: Connection;
  try {
    conn = await open((r) => (session = new RpingSession(r, role, options, print)));
  } catch (err) {
    session?.close();
    throw err;
  }
  try {
    connected?.(conn);
    (session as RpingSession).start(conn);
    return role === 'server' ? await (session as RpingSession).serve() : await (session as RpingSession).ping();
  } finally {
    try {
      conn.close();
    } finally {
      session?.close();
    }
  }
}

/** Accepts `request` and serves it until the client disconnects. */
async function serveRequest(request: ConnectionRequest, opts: RpingOptions, print: Print): Promise<void> {
  const peer = formatAddress(request.peerAddress);
  if (opts.debug) print(`server: connection request from ${peer}`);
  const pings = await runSession((prepare) => request.accept({ ...RESOURCES, prepare }), 'server', opts, print, () => {
    if (opts.debug) print(`server: connected to ${peer}`);
  });
  if (opts.debug) print(`server: ${peer} disconnected after ${pings} pings`);
}

/**
 * Serves `listener`'s requests. Without -P: the first request, then it
 * returns (later requests are turned away). With -P: every request, at
 * once, until `stop` resolves; a failed connection is reported and the
 * server goes on. Resolves when the served connections are done.
 */
async function serve(listener: Listener, opts: RpingOptions, print: Print, stop: Promise<void>): Promise<void> {
  const running = new Set<Promise<void>>();
  let first: Promise<void> | undefined;
  let failed!: (err: unknown) => void;
  // The listener's end (its device went away) ends the server with that error.
  const listenerFailed = new Promise<never>((_, reject) => (failed = reject));
  listenerFailed.catch(() => undefined);
  let served!: () => void;
  const firstServed = new Promise<void>((resolve) => (served = resolve));
  const onRequest = (request: ConnectionRequest) => {
    if (!opts.persistent && first) {
      request.reject({ privateData: 'busy' });
      return;
    }
    const task = serveRequest(request, opts, print);
    if (!opts.persistent) {
      first = task;
      task.then(served, served);
      return;
    }
    const tracked = task.catch((err: Error) => {
      process.stderr.write(`rx-verbs rping: ${formatAddress(request.peerAddress)}: ${err.message}\n`);
    });
    running.add(tracked);
    void tracked.finally(() => running.delete(tracked));
  };
  const subscription = listener.requests$.subscribe({ next: onRequest, error: (err: unknown) => failed(err) });
  try {
    await Promise.race([opts.persistent ? stop : Promise.race([firstServed, stop]), listenerFailed]);
    if (first && !opts.persistent) await first;
  } finally {
    subscription.unsubscribe();
    listener.close();
  }
  await Promise.all(running);
}

/** Server: listen on -a (default 0.0.0.0) and -p, serve. A persistent server runs until killed. */
export async function runServer(opts: RpingOptions, print: Print): Promise<void> {
  const host = await numericHost(opts.addr ?? '0.0.0.0');
  refuseSoftAcrossProcesses(host, opts.cm);
  const listener = listen({ host, port: opts.port, backlog: BACKLOG, provider: opts.cm });
  if (opts.debug) print(`server: listening on ${formatAddress(listener.address)}`);
  await serve(listener, opts, print, new Promise<void>(() => undefined));
}

/** Client: connect to -a, ping -C times (0: until the server disconnects). */
export async function runClient(opts: RpingOptions, print: Print): Promise<void> {
  const host = await numericHost(opts.addr as string);
  const localHost = opts.sourceAddr === undefined ? undefined : await numericHost(opts.sourceAddr);
  refuseSoftAcrossProcesses(host, opts.cm);
  await pingServer(host, opts.port, opts, print, localHost);
}

function pingServer(host: string, port: number, opts: RpingOptions, print: Print, localHost?: string): Promise<number> {
  const where = { host, port, ...(localHost === undefined ? {} : { localHost }) };
  const open = (prepare: (r: VerbsResources) => void) => connect({ ...where, timeoutMs: opts.timeoutMs, provider: opts.cm, ...RESOURCES, prepare });
  return runSession(open, 'client', opts, print, (conn) => {
    if (opts.debug) print(`client: connected to ${formatAddress(conn.peerAddress)}`);
  });
}

/**
 * Server and client(s) in this process, over 127.0.0.1 (the soft CM's
 * address of soft0 unless --cm says otherwise): the way to use soft
 * devices, whose CM exists inside one process. With -P and --clients N,
 * N clients ping one persistent server at once. Ends with one line saying
 * how many pings went through: a check says how it went, even without -v.
 */
export async function runLoopback(opts: RpingOptions, print: Print): Promise<void> {
  const host = '127.0.0.1';
  const listener = listen({ host, port: opts.port, backlog: Math.max(BACKLOG, opts.clients), provider: opts.cm });
  const port = listener.address?.port ?? opts.port;
  if (opts.debug) print(`server: listening on ${formatAddress(listener.address)}`);
  let stop!: () => void;
  const stopped = new Promise<void>((resolve) => (stop = resolve));
  const server = serve(listener, opts, print, stopped);
  try {
    const localHost = opts.sourceAddr === undefined ? undefined : await numericHost(opts.sourceAddr);
    const clients = Array.from({ length: opts.clients }, () => pingServer(host, port, opts, print, localHost));
    const results = await Promise.allSettled(clients);
    const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed) throw failed.reason;
    const pings = results.reduce((sum, r) => sum + (r.status === 'fulfilled' ? r.value : 0), 0);
    const who = opts.clients === 1 ? '' : ` from ${opts.clients} clients`;
    print(`rping --loopback: ${pings} pings of ${opts.size} bytes${who}${opts.validate ? ', data verified' : ''}`);
  } finally {
    stop();
    await server;
  }
}
