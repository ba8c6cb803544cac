/**
 * What rdma-core's `rping` puts on the wire, so either side can be ours.
 *
 * Buffer advertisements travel as one SEND of 16 bytes, big-endian:
 *
 * ```
 * offset 0   u64  address of the buffer
 * offset 8   u32  its rkey
 * offset 12  u32  its size (the sender's -S)
 * ```
 *
 * The go-ahead SENDs of the server reuse the same 16-byte message (its
 * contents are not read), so every receive is exactly 16 bytes: anything
 * else is a protocol error, as rping reports it.
 *
 * The ping text: `"rdma-ping-<n>: "` followed by letters from 'A' to 'z'
 * (ASCII 65..122, wrapping), starting one letter later on each ping, the
 * last byte NUL.
 */

/** Bytes of one advertisement. */
export const INFO_BYTES = 16;

/** Smallest ping size rping accepts: room for the text with the largest C int and its NUL. */
export const MIN_SIZE = '2147483647'.length + 1 + 'rdma-ping-%d: '.length + 1;

/** Largest ping size rping accepts (its buffers are 64 KiB, one byte kept back). */
export const MAX_SIZE = 64 * 1024 - 1;

/** A buffer the peer may read or write: where it is, its key, how long it is. */
export interface RdmaInfo {
  addr: bigint;
  rkey: number;
  size: number;
}

/** Writes `info` into `out` (16 bytes at `offset`). */
export function encodeInfo(info: RdmaInfo, out: Buffer, offset = 0): void {
  out.writeBigUInt64BE(BigInt.asUintN(64, info.addr), offset);
  out.writeUInt32BE(info.rkey >>> 0, offset + 8);
  out.writeUInt32BE(info.size >>> 0, offset + 12);
}

/** Reads an advertisement from 16 bytes at `offset`. */
export function decodeInfo(buf: Buffer, offset = 0): RdmaInfo {
  if (buf.length - offset < INFO_BYTES) throw new RangeError(`an advertisement is ${INFO_BYTES} bytes, got ${buf.length - offset}`);
  return { addr: buf.readBigUInt64BE(offset), rkey: buf.readUInt32BE(offset + 8), size: buf.readUInt32BE(offset + 12) };
}

const FIRST = 65; // 'A'
const LAST = 122; // 'z'

/**
 * Fills `buf` with ping number `ping` as rping's client makes it: the text
 * (cut short if the buffer is, as snprintf would), then the rotating
 * letters, then a NUL in the last byte.
 */
export function fillPing(buf: Buffer, ping: number): void {
  const size = buf.length;
  if (size === 0) return;
  const text = `rdma-ping-${ping}: `;
  const written = buf.write(text.slice(0, size - 1), 0, 'latin1');
  // the letters start after the whole text, whether or not it fitted
  let c = FIRST + (ping % (LAST - FIRST + 1));
  for (let i = Math.max(written, text.length); i < size; i++) {
    buf[i] = c;
    c = c === LAST ? FIRST : c + 1;
  }
  buf[size - 1] = 0;
}

/** The C string at the start of `buf` (up to its first NUL), as `printf("%s")` shows it. */
export function cString(buf: Buffer): string {
  const nul = buf.indexOf(0);
  return buf.toString('latin1', 0, nul < 0 ? buf.length : nul);
}

/** Bytes of the C string at the start of `buf` with its NUL (`strlen + 1`), capped at the buffer. */
export function cStringBytes(buf: Buffer): number {
  const nul = buf.indexOf(0);
  return nul < 0 ? buf.length : nul + 1;
}
