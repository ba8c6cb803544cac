/**
 * The message layer's wire format, version 1 (README, "Message protocol").
 * Everything little-endian. Written once here, so a C peer (bench/) can
 * speak it from the README alone.
 *
 * Set-up, in the CM's private data, before the caller's own bytes:
 *
 *   0  'R' 'X' 'M'   magic
 *   3  u8   version (1)
 *   4  u32  maxEager: the largest payload a SEND carries (equal on both sides)
 *   8  u16  depth: receives this side keeps posted for the peer's data; it
 *           posts depth + reserve(depth) in all (credits.ts), the extra
 *           ones for credit updates, and the peer starts with that many
 *   10 u8   flags (1: this is a refusal: the request was rejected because
 *           the layers disagree; the fields say this side's values)
 *   11 u8   reserved (0)
 *   12 u32  maxMessage: the largest message this side takes
 *
 * Every SEND starts with a 16-byte header:
 *
 *   0  u8   type: 1 EAGER (payload follows), 2 RENDEZVOUS (a 20-byte
 *           descriptor follows: u64 address, u32 rkey, u32 length of the
 *           sender's registered buffer, to be RDMA READ, and u32 the
 *           request id of a request or reply, else 0), 3 DONE (the
 *           rendezvous `id` was read, or declined with flag CANCELLED), 4
 *           CREDIT (no payload: only the grant)
 *   1  u8   flags: 1 REQUEST, 2 RESPONSE, 4 ERROR (a response whose payload
 *           is the handler's error message, UTF-8), 8 CANCELLED (DONE only)
 *   2  u16  reserved (0)
 *   4  u32  grant: how many receives the sender has posted for its peer in
 *           all (mod 2^32); the peer may have at most this many SENDs out
 *   8  u32  id: the request id (REQUEST, RESPONSE) or the rendezvous id
 *           (RENDEZVOUS, DONE); 0 otherwise
 *   12 u32  payload length (EAGER: bytes after the header; RENDEZVOUS: 20)
 */

/** Protocol version this code speaks. */
export const WIRE_VERSION = 1;
/** Bytes of the set-up part of the private data. */
export const SETUP_BYTES = 16;
/** Bytes of every message header. */
export const HEADER_BYTES = 16;
/** Bytes of a rendezvous descriptor. */
export const RENDEZVOUS_BYTES = 20;

export const TYPE = { EAGER: 1, RENDEZVOUS: 2, DONE: 3, CREDIT: 4 } as const;
export const FLAG = { REQUEST: 1, RESPONSE: 2, ERROR: 4, CANCELLED: 8 } as const;
const SETUP_REFUSAL = 1;

/** What each side announces at set-up. */
export interface Setup {
  version: number;
  maxEager: number;
  depth: number;
  maxMessage: number;
  /** True when the peer rejected the request because the layers disagree. */
  refusal: boolean;
}

/** The set-up bytes followed by `user`. */
export function encodeSetup(setup: Omit<Setup, 'refusal'>, user: Uint8Array, refusal = false): Uint8Array {
  const out = new Uint8Array(SETUP_BYTES + user.length);
  const v = new DataView(out.buffer);
  out.set([0x52, 0x58, 0x4d], 0);
  v.setUint8(3, setup.version);
  v.setUint32(4, setup.maxEager, true);
  v.setUint16(8, setup.depth, true);
  v.setUint8(10, refusal ? SETUP_REFUSAL : 0);
  v.setUint32(12, setup.maxMessage, true);
  out.set(user, SETUP_BYTES);
  return out;
}

/**
 * The set-up a peer sent, and its caller's bytes after it; `undefined`
 * when the private data does not start with one (a peer without the layer).
 * librdmacm pads private data with zeros to the CM message's size, so the
 * caller's bytes may carry trailing zeros, as without the layer.
 */
export function decodeSetup(data: Uint8Array): { setup: Setup; user: Uint8Array } | undefined {
  if (data.length < SETUP_BYTES || data[0] !== 0x52 || data[1] !== 0x58 || data[2] !== 0x4d) return undefined;
  const v = new DataView(data.buffer, data.byteOffset, data.byteLength);
  return {
    setup: {
      version: v.getUint8(3),
      maxEager: v.getUint32(4, true),
      depth: v.getUint16(8, true),
      maxMessage: v.getUint32(12, true),
      refusal: (v.getUint8(10) & SETUP_REFUSAL) !== 0,
    },
    user: data.subarray(SETUP_BYTES),
  };
}

/** One message header, read. */
export interface Header {
  type: number;
  flags: number;
  /** The reserved field (0 from a correct peer). */
  reserved: number;
  grant: number;
  id: number;
  length: number;
}

/** Writes a header at `at` of `view`. */
export function writeHeader(view: DataView, at: number, type: number, flags: number, grant: number, id: number, length: number): void {
  view.setUint8(at, type);
  view.setUint8(at + 1, flags);
  view.setUint16(at + 2, 0, true);
  view.setUint32(at + 4, grant >>> 0, true);
  view.setUint32(at + 8, id >>> 0, true);
  view.setUint32(at + 12, length >>> 0, true);
}

/** Reads the header at `at` of `view`. */
export function readHeader(view: DataView, at: number): Header {
  return {
    type: view.getUint8(at),
    flags: view.getUint8(at + 1),
    reserved: view.getUint16(at + 2, true),
    grant: view.getUint32(at + 4, true),
    id: view.getUint32(at + 8, true),
    length: view.getUint32(at + 12, true),
  };
}
