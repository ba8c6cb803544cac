/**
 * `rx-verbs nc`: netcat over RDMA byte-stream sockets. One connection:
 * what comes on `input` goes to the peer, what the peer sends goes to
 * `output`. The end of `input` ends this side's stream (the peer reads to
 * its end and may still answer); the end of the peer's stream ends the
 * session once `output` took it all. Resolves with the exit status: 0
 * after a clean end, 1 when the connection failed or broke.
 */
import type { Readable, Writable } from 'stream';
import { connectSocket, createSocketServer, type CmProvider, type RdmaSocket } from '../../index';

/** Where `nc` reads, writes and reports (the process's own streams by default). */
export interface NcIo {
  input: Readable;
  output: Writable;
  report: (line: string) => void;
}

/** What one `nc` session does. */
export type NcPlan =
  | { mode: 'connect'; host: string; port: number; provider?: CmProvider; verbose: boolean }
  | { mode: 'listen'; host: string; port: number; provider?: CmProvider; verbose: boolean; onListening?: (port: number) => void };

/** Runs one session; resolves with the exit status. */
export function runNc(plan: NcPlan, io: NcIo): Promise<number> {
  if (plan.mode === 'connect') {
    const socket = connectSocket({ host: plan.host, port: plan.port, provider: plan.provider });
    socket.once('connect', () => plan.verbose && io.report(`connected to ${plan.host} ${plan.port}`));
    return session(socket, io);
  }
  return new Promise<number>((resolve) => {
    const server = createSocketServer({ provider: plan.provider, allowHalfOpen: true });
    server.once('error', (err: Error) => {
      io.report(err.message);
      resolve(1);
    });
    server.once('connection', (socket: RdmaSocket) => {
      // One connection, as netcat takes: the listener stops at once.
      server.close();
      if (plan.verbose) io.report(`connection from ${socket.remoteAddress} ${socket.remotePort}`);
      void session(socket, io).then(resolve);
    });
    server.listen(plan.port, plan.host, () => {
      const port = server.address()?.port ?? plan.port;
      if (plan.verbose) io.report(`listening on ${plan.host} ${port}`);
      plan.onListening?.(port);
    });
  });
}

/** Pumps both ways until both streams ended (0) or the socket failed (1). */
function session(socket: RdmaSocket, io: NcIo): Promise<number> {
  return new Promise<number>((resolve) => {
    let failed = false;
    socket.on('error', (err: Error) => {
      failed = true;
      io.report(err.message);
    });
    socket.once('close', () => {
      io.input.unpipe(socket);
      resolve(failed ? 1 : 0);
    });
    // Peer to output, keeping output open (stdout is not ours to end).
    socket.pipe(io.output, { end: false });
    // Input to peer; its end ends our stream (half-close).
    io.input.pipe(socket);
    socket.once('end', () => {
      // The peer is done: what input still has is not wanted, as netcat stops reading then.
      io.input.unpipe(socket);
      if (!socket.writableEnded) socket.end();
    });
  });
}
