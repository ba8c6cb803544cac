/**
 * The connection exchange of rdma-core's pingpongs, so that either side can
 * be ours: over TCP each side sends a table of NUL-terminated messages, one
 * per QP (one for `ibv_rc_pingpong` and `ibv_ud_pingpong`; always 256 for
 * `ibv_srq_pingpong`, all zeros past its `-q`), each
 *
 * ```
 * LLLL:QQQQQQ:PPPPPP:GGGGGGGGGGGGGGGGGGGGGGGGGGGGGGGG\0     (52 bytes)
 * ```
 *
 * (LID, QP number, PSN and the 16 GID bytes in order, all lower-case hex).
 * The client connects and sends its table first; the server reads it,
 * connects its QPs (RTR, RTS), answers with its own table, and the client
 * ends with `"done\0"`.
 */
import * as net from 'net';

/** One side of a connection, as the exchange carries it. */
export interface Dest {
  lid: number;
  qpn: number;
  psn: number;
  /** 16 bytes. */
  gid: Uint8Array;
}

/** Bytes of one message, the terminating NUL included (as rc_pingpong sends `sizeof msg`). */
export const MESSAGE_BYTES = '0000:000000:000000:00000000000000000000000000000000'.length + 1;
/** The client's last message (`"done"` and its NUL). */
export const DONE = Buffer.from('done\0', 'latin1');
const MESSAGE_RE = /^([0-9a-f]{1,4}):([0-9a-f]{1,6}):([0-9a-f]{1,6}):([0-9a-f]{32})$/i;

/** Encodes `dest` as the 52-byte message. */
export function encodeDest(dest: Dest): Buffer {
  const hex = (n: number, w: number) => n.toString(16).padStart(w, '0');
  const text = `${hex(dest.lid, 4)}:${hex(dest.qpn, 6)}:${hex(dest.psn, 6)}:${Buffer.from(dest.gid).toString('hex')}`;
  if (text.length + 1 !== MESSAGE_BYTES) throw new RangeError(`connection message out of range: ${text}`);
  return Buffer.concat([Buffer.from(text, 'latin1'), Buffer.alloc(1)]);
}

/** Decodes a message (up to its NUL); throws on anything malformed. */
export function decodeDest(msg: Buffer): Dest {
  const nul = msg.indexOf(0);
  const text = msg.subarray(0, nul < 0 ? msg.length : nul).toString('latin1');
  const m = MESSAGE_RE.exec(text);
  if (!m) throw new Error(`malformed connection message from the peer: ${JSON.stringify(text)}`);
  return {
    lid: parseInt(m[1], 16),
    qpn: parseInt(m[2], 16),
    psn: parseInt(m[3], 16),
    gid: Uint8Array.from(Buffer.from(m[4], 'hex')),
  };
}

/** A GID as the addon spells it (`fe80:0000:...`, 8 groups) to its 16 bytes. */
export function gidBytes(gid: string | undefined): Uint8Array {
  if (gid === undefined) return new Uint8Array(16);
  const hex = gid.replace(/:/g, '');
  if (!/^[0-9a-f]{32}$/i.test(hex)) throw new RangeError(`not a GID: ${gid}`);
  return Uint8Array.from(Buffer.from(hex, 'hex'));
}

/** 16 GID bytes to the addon's spelling. */
export function gidString(gid: Uint8Array): string {
  const hex = Buffer.from(gid).toString('hex');
  return hex.replace(/(.{4})(?!$)/g, '$1:');
}

/** Whether a GID's interface id (its last 8 bytes) is set: rc_pingpong's test for using the GRH. */
export function hasInterfaceId(gid: Uint8Array): boolean {
  return gid.subarray(8).some((b) => b !== 0);
}

/** A GID as `inet_ntop(AF_INET6)` writes it (`::`, `::ffff:127.0.0.1`, `fe80::1`). */
export function formatGid(gid: Uint8Array): string {
  const words: number[] = [];
  for (let i = 0; i < 16; i += 2) words.push((gid[i] << 8) | gid[i + 1]);
  if (words.slice(0, 5).every((w) => w === 0) && words[5] === 0xffff) {
    return `::ffff:${gid[12]}.${gid[13]}.${gid[14]}.${gid[15]}`;
  }
  // the longest run (>= 2) of zero words becomes '::'
  let best = -1;
  let bestLen = 1;
  for (let i = 0; i < 8; ) {
    if (words[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && words[j] === 0) j++;
    if (j - i > bestLen) {
      best = i;
      bestLen = j - i;
    }
    i = j;
  }
  const hex = (ws: number[]) => ws.map((w) => w.toString(16)).join(':');
  if (best < 0) return hex(words);
  return `${hex(words.slice(0, best))}::${hex(words.slice(best + bestLen))}`;
}

/** The line rc_pingpong prints for each side. */
export function describeDest(which: 'local' | 'remote', d: Dest): string {
  const hex = (n: number, w: number) => n.toString(16).padStart(w, '0');
  const label = which === 'local' ? '  local address: ' : '  remote address:';
  return `${label} LID 0x${hex(d.lid, 4)}, QPN 0x${hex(d.qpn, 6)}, PSN 0x${hex(d.psn, 6)}, GID ${formatGid(d.gid)}`;
}

/** Reads exactly `n` bytes (or fewer if the peer ends first) from a socket. */
export class Reader {
  private chunks: Buffer[] = [];
  private have = 0;
  private ended = false;
  private failure: Error | undefined;
  private wake: (() => void) | undefined;

  constructor(socket: net.Socket) {
    socket.on('data', (b: Buffer) => {
      this.chunks.push(b);
      this.have += b.length;
      this.wake?.();
    });
    socket.on('end', () => {
      this.ended = true;
      this.wake?.();
    });
    socket.on('error', (err) => {
      this.failure = err;
      this.wake?.();
    });
    socket.on('close', () => {
      this.ended = true;
      this.wake?.();
    });
  }

  async read(n: number): Promise<Buffer> {
    while (this.have < n && !this.ended && !this.failure) {
      await new Promise<void>((resolve) => (this.wake = resolve));
      this.wake = undefined;
    }
    if (this.failure && this.have < n) throw this.failure;
    const all = Buffer.concat(this.chunks);
    const out = all.subarray(0, Math.min(n, all.length));
    this.chunks = [all.subarray(out.length)];
    this.have -= out.length;
    return out;
  }
}

/** Writes `data`, resolving once the socket took it. */
export function write(socket: net.Socket, data: Buffer): Promise<void> {
  return new Promise((resolve, reject) => socket.write(data, (err) => (err ? reject(err) : resolve())));
}

const ZERO: Dest = { lid: 0, qpn: 0, psn: 0, gid: new Uint8Array(16) };

/** `table` messages: `mine`, then all-zero ones (srq_pingpong always sends its whole table). */
function encodeTable(mine: readonly Dest[], table: number): Buffer {
  return Buffer.concat(Array.from({ length: table }, (_, i) => encodeDest(mine[i] ?? ZERO)));
}

/** Reads `table` messages and keeps the first `want`. */
async function readTable(reader: Reader, table: number, want: number): Promise<Dest[]> {
  const out: Dest[] = [];
  for (let i = 0; i < table; i++) {
    const msg = await reader.read(MESSAGE_BYTES);
    if (msg.length !== MESSAGE_BYTES) {
      throw new Error(`${msg.length}/${MESSAGE_BYTES}: Couldn't read remote address${table > 1 ? ` [${i}]` : ''}`);
    }
    if (i < want) out.push(decodeDest(msg));
  }
  return out;
}

/** A listening server, waiting for one client. */
export interface Listener {
  /** The TCP port it listens on (useful with port 0). */
  port: number;
  /**
   * Accepts one client, reads its table, lets `connect` bring the QPs up
   * (the programs connect before answering), answers with `mine` (padded to
   * the table), waits for the client's `done`, and closes. Resolves to the
   * client's first `mine.length` addresses.
   */
  exchange(mine: readonly Dest[], connect: (remotes: Dest[]) => void): Promise<Dest[]>;
  close(): void;
}

/**
 * Listens on `port` (all addresses unless `host` is given), as the
 * programs' servers, for an exchange of `table` addresses each way (1:
 * rc_pingpong and ud_pingpong; 256: srq_pingpong).
 */
export async function listen(port: number, host?: string, table = 1): Promise<Listener> {
  const server = net.createServer({ noDelay: true });
  const accepted: net.Socket[] = [];
  let onAccept: ((s: net.Socket) => void) | undefined;
  server.on('connection', (s) => {
    if (onAccept) onAccept(s);
    else accepted.push(s);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen({ port, host, exclusive: true }, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address();
  const actual = typeof address === 'object' && address ? address.port : port;
  return {
    port: actual,
    async exchange(mine, connect) {
      const socket = accepted.shift() ?? (await new Promise<net.Socket>((resolve) => (onAccept = resolve)));
      server.close(); // one client, as the programs (they close the listening socket after accept)
      try {
        const reader = new Reader(socket);
        const remotes = await readTable(reader, table, mine.length);
        connect(remotes);
        await write(socket, encodeTable(mine, table));
        await reader.read(DONE.length); // the client's "done" (or its end)
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

/** Connects to the server at `host:port`, as the programs' clients; resolves to the server's first `mine.length` addresses. */
export async function exchangeAsClient(host: string, port: number, mine: readonly Dest[], table = 1): Promise<Dest[]> {
  const socket = net.connect({ host, port, noDelay: true });
  try {
    await new Promise<void>((resolve, reject) => {
      socket.once('connect', resolve);
      socket.once('error', (err) => reject(new Error(`Couldn't connect to ${host}:${port}: ${err.message}`)));
    });
    const reader = new Reader(socket);
    await write(socket, encodeTable(mine, table));
    const remotes = await readTable(reader, table, mine.length);
    await write(socket, DONE);
    return remotes;
  } finally {
    socket.end();
    socket.destroy();
  }
}
