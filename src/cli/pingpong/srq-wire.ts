/**
 * The connection exchange of rdma-core's `ibv_srq_pingpong`: the messages of
 * `ibv_rc_pingpong` (wire.ts), one per QP, and always 256 of them each way
 * (srq_pingpong's table size; entries past `-q` are all zeros). The client
 * writes its 256 and reads the server's; the server reads, connects its QPs,
 * then answers; the client ends with `"done"`.
 */
import * as net from 'net';
import { DONE, Dest, MESSAGE_BYTES, Reader, decodeDest, encodeDest, write } from './wire';

/** How many addresses each side sends, whatever `-q` is. */
export const SRQ_TABLE = 256;

const ZERO: Dest = { lid: 0, qpn: 0, psn: 0, gid: new Uint8Array(16) };

function encodeTable(mine: readonly Dest[]): Buffer {
  return Buffer.concat(Array.from({ length: SRQ_TABLE }, (_, i) => encodeDest(mine[i] ?? ZERO)));
}

async function readTable(reader: Reader, want: number): Promise<Dest[]> {
  const out: Dest[] = [];
  for (let i = 0; i < SRQ_TABLE; i++) {
    const msg = await reader.read(MESSAGE_BYTES);
    if (msg.length !== MESSAGE_BYTES) throw new Error(`${msg.length}/${MESSAGE_BYTES}: Couldn't read remote address [${i}]`);
    if (i < want) out.push(decodeDest(msg));
  }
  return out;
}

/** A listening server of the SRQ exchange, waiting for one client. */
export interface SrqListener {
  port: number;
  /** As wire.ts's Listener.exchange, with `want` addresses each way. */
  exchange(mine: readonly Dest[], connect: (remotes: Dest[]) => void): Promise<Dest[]>;
  close(): void;
}

/** Listens on `port` (all addresses unless `host` is given), as srq_pingpong's server. */
export async function listenSrq(port: number, host?: string): Promise<SrqListener> {
  const server = net.createServer({ noDelay: true });
  const accepted: net.Socket[] = [];
  let onAccept: ((s: net.Socket) => void) | undefined;
  server.on('connection', (s) => (onAccept ? onAccept(s) : accepted.push(s)));
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen({ port, host, exclusive: true }, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address();
  return {
    port: typeof address === 'object' && address ? address.port : port,
    async exchange(mine, connect) {
      const socket = accepted.shift() ?? (await new Promise<net.Socket>((resolve) => (onAccept = resolve)));
      server.close();
      try {
        const reader = new Reader(socket);
        const remotes = await readTable(reader, mine.length);
        connect(remotes);
        await write(socket, encodeTable(mine));
        await reader.read(DONE.length);
        return remotes;
      } finally {
        socket.destroy();
      }
    },
    close() {
      server.close();
      for (const s of accepted) s.destroy();
    },
  };
}

/** Connects to the server at `host:port`, as srq_pingpong's client; resolves to the server's QPs. */
export async function exchangeSrqAsClient(host: string, port: number, mine: readonly Dest[]): Promise<Dest[]> {
  const socket = net.connect({ host, port, noDelay: true });
  try {
    await new Promise<void>((resolve, reject) => {
      socket.once('connect', resolve);
      socket.once('error', (err) => reject(new Error(`Couldn't connect to ${host}:${port}: ${err.message}`)));
    });
    const reader = new Reader(socket);
    await write(socket, encodeTable(mine));
    const remotes = await readTable(reader, mine.length);
    await write(socket, DONE);
    return remotes;
  } finally {
    socket.end();
    socket.destroy();
  }
}
