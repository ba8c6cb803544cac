/**
 * The roles of `rx-verbs rdma-server` / `rdma-client`: rdma-core's
 * rdma_server and rdma_client, step for step (one receive posted, one
 * 16-byte message each way, disconnect), framed by their report lines.
 */
import { firstValueFrom } from 'rxjs';
import { connect, listen, type Connection, type ConnectionRequest, type VerbsResources } from '../../index';
import { numericHost, refuseSoftAcrossProcesses } from '../shared/cm';
import { withDeadline } from '../shared/deadline';
import { MessageEnd, MESSAGE_BYTES } from './message-end';
import type { RdmaPairOptions } from './options';

/** Where lines go (stdout, or a test's collector). */
export type Print = (line: string) => void;

/** Their QP: one WR each way, one SGE, 16 bytes inline where the device can. */
const RESOURCES = { cqe: 4, cap: { maxSendWr: 1, maxRecvWr: 1, maxSendSge: 1, maxRecvSge: 1, maxInlineData: MESSAGE_BYTES } };

/** What our client sends (rdma_client sends zeros; neither server reads it). */
export const CLIENT_MESSAGE = Buffer.from('rx-verbs client\0', 'latin1');

function hex(b: Uint8Array): string {
  return Buffer.from(b).toString('hex');
}

/**
 * Makes a connection with `open` (connect or accept), its message end made
 * in `prepare` (receive posted before the peer can send), runs `body`, then
 * closes both (the connection first).
 */
async function exchange<T>(
  open: (prepare: (r: VerbsResources) => void) => Promise<Connection>,
  body: (end: MessageEnd) => Promise<T>,
): Promise<T> {
  let end: MessageEnd | undefined;
  let conn: Connection;
  try {
    conn = await open((r) => (end = new MessageEnd(r)));
  } catch (err) {
    end?.close();
    throw err;
  }
  try {
    (end as MessageEnd).start(conn);
    return await body(end as MessageEnd);
  } finally {
    try {
      conn.close();
    } finally {
      end?.close();
    }
  }
}

/** Frames `body` with `<name>: start` and `<name>: end 0` (or `end -1` and the error). */
async function framed(name: string, print: Print, body: () => Promise<void>): Promise<void> {
  print(`${name}: start`);
  try {
    await body();
  } catch (err) {
    print(`${name}: end -1`);
    throw err;
  }
  print(`${name}: end 0`);
}

/** Server: wait for one client, take its message, answer with the same bytes, disconnect. */
async function serveOne(host: string, port: number, opts: RdmaPairOptions, print: Print, ready?: (port: number) => void): Promise<void> {
  const listener = listen({ host, port, backlog: 1, provider: opts.cm });
  let request: ConnectionRequest;
  try {
    ready?.(listener.address?.port ?? port);
    request = await firstValueFrom(listener.requests$);
  } catch (err) {
    listener.close();
    throw err;
  }
  // The CM ends a set-up the client gave up on (DisconnectedError): no deadline of ours here.
  const accept = (prepare: (r: VerbsResources) => void) => request.accept({ ...RESOURCES, prepare }).finally(() => listener.close());
  await exchange(accept, async (end) => {
    const got = await withDeadline(end.receive(), opts.timeoutMs, "the client's message");
    if (opts.verbose) print(`rdma_server: received ${hex(got)}`);
    await withDeadline(end.send(got), opts.timeoutMs, 'the answer to be sent');
  });
}

/** Client: connect, send our message, wait for the answer, disconnect. Resolves with the answer. */
function askOnce(host: string, port: number, opts: RdmaPairOptions, print: Print): Promise<Buffer> {
  const open = (prepare: (r: VerbsResources) => void) => connect({ host, port, timeoutMs: opts.timeoutMs, provider: opts.cm, ...RESOURCES, prepare });
  return exchange(open, async (end) => {
    await withDeadline(end.send(CLIENT_MESSAGE), opts.timeoutMs, 'the message to be sent');
    const got = await withDeadline(end.receive(), opts.timeoutMs, "the server's answer");
    if (opts.verbose) print(`rdma_client: received ${hex(got)}`);
    return got;
  });
}

/** Runs the role `opts.role`: server, client, or both in this process (127.0.0.1, where our server's echo is checked). */
export async function runPair(opts: RdmaPairOptions, print: Print): Promise<void> {
  if (opts.role === 'server') {
    await framed('rdma_server', print, async () => {
      const host = await numericHost(opts.host);
      refuseSoftAcrossProcesses(host, opts.cm);
      await serveOne(host, opts.port, opts, print);
    });
    return;
  }
  if (opts.role === 'client') {
    await framed('rdma_client', print, async () => {
      const host = await numericHost(opts.host);
      refuseSoftAcrossProcesses(host, opts.cm);
      await askOnce(host, opts.port, opts, print);
    });
    return;
  }
  let listening!: (port: number) => void;
  const bound = new Promise<number>((resolve) => (listening = resolve));
  const server = framed('rdma_server', print, () => serveOne(opts.host, opts.port, opts, print, listening));
  const client = framed('rdma_client', print, async () => {
    const port = await Promise.race([bound, server.then(() => opts.port)]);
    const answer = await askOnce(opts.host, port, opts, print);
    if (!answer.equals(CLIENT_MESSAGE)) throw new Error(`the echo differs: sent ${hex(CLIENT_MESSAGE)}, got ${hex(answer)}`);
  });
  const [s, c] = await Promise.allSettled([server, client]);
  if (s.status === 'rejected') throw s.reason;
  if (c.status === 'rejected') throw c.reason;
}
