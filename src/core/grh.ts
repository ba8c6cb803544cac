/**
 * The 40 bytes a device writes in front of every UD receive: a GRH (the
 * IPv6 header's layout: InfiniBand, RoCE v1, RoCE v2 over IPv6), or on
 * RoCE v2 over IPv4 twenty undefined bytes and then the IPv4 header. Which
 * of the two it is, is told as rdma-core's `ibv_init_ah_from_wc` tells it:
 * IP version 6 in the first byte means a GRH unless the last 20 bytes are
 * a valid IPv4 header (version 4, five words, a correct checksum); any
 * other first byte means IPv4 when byte 20 says version 4.
 */

/** Bytes of the GRH area in front of every UD receive. */
export const GRH_BYTES = 40;

/** What {@link readGrh} finds in a GRH area. GIDs are spelled as `context.queryGid()` spells them. */
export interface Grh {
  /** 6: a GRH (IPv6 header layout); 4: RoCE v2 over IPv4 (the IPv4 header in bytes 20-39). */
  version: 4 | 6;
  /**
   * The sender's GID: bytes 8-23 of a GRH; for version 4, the IPv4 source
   * address (bytes 32-35) as an IPv4-mapped GID (`0000:...:ffff:c0a8:0001`).
   */
  sgid: string;
  /** The GID it was sent to (this port's): bytes 24-39, or the IPv4 destination (bytes 36-39) mapped. */
  dgid: string;
  /** Traffic class (the IPv4 TOS for version 4). */
  trafficClass: number;
  /** Flow label, 20 bits (0 for version 4: IPv4 has none). */
  flowLabel: number;
  /** Hop limit (the IPv4 TTL for version 4). */
  hopLimit: number;
  /** The next header (IPv4 protocol): 17 (UDP) on RoCE v2, 0x1b (the IB transport) on InfiniBand and RoCE v1. */
  nextHeader: number;
}

/** 16 GID bytes as `xxxx:xxxx:...:xxxx` (8 groups of 4 lower-case hex digits). */
function gidString(raw: Uint8Array): string {
  const groups: string[] = [];
  for (let i = 0; i < 16; i += 2) groups.push(((raw[i] << 8) | raw[i + 1]).toString(16).padStart(4, '0'));
  return groups.join(':');
}

/** An IPv4 address as the GID RoCE v2 gives it (::ffff:a.b.c.d). */
function mappedGid(addr: Uint8Array): string {
  const raw = new Uint8Array(16);
  raw[10] = 0xff;
  raw[11] = 0xff;
  raw.set(addr, 12);
  return gidString(raw);
}

/** Whether `ip` (20 bytes) is an IPv4 header with no options and a correct checksum. */
function isIpv4Header(ip: Uint8Array): boolean {
  if (ip[0] !== 0x45) return false; // version 4, 5 words (RoCE v2 sends no options)
  let sum = 0;
  for (let i = 0; i < 20; i += 2) sum += (ip[i] << 8) | ip[i + 1];
  while (sum > 0xffff) sum = (sum & 0xffff) + (sum >>> 16);
  return sum === 0xffff; // the one's-complement sum over a correct header, checksum included
}

/**
 * Reads the GRH area at the start of a UD receive buffer (its first 40
 * bytes; the message follows them).
 * @example
 * ```ts
 * const { sgid } = readGrh(recv.buffer.subarray(offset)); // who sent the datagram
 * ```
 * @param bytes the receive buffer from where the receive started (at least 40 bytes).
 * @throws TypeError when `bytes` is not an ArrayBuffer or a view; RangeError when it is
 *   shorter than 40 bytes or holds neither header.
 */
export function readGrh(bytes: ArrayBufferView | ArrayBufferLike): Grh {
  let raw: Uint8Array;
  const tag = Object.prototype.toString.call(bytes); // any realm's buffers, shared ones too
  if (ArrayBuffer.isView(bytes)) raw = new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  else if (tag === '[object ArrayBuffer]' || tag === '[object SharedArrayBuffer]') raw = new Uint8Array(bytes as ArrayBufferLike);
  else throw new TypeError('the GRH must be an ArrayBuffer or a view of one (the start of the receive buffer)');
  if (raw.byteLength < GRH_BYTES) {
    throw new RangeError(`a GRH area is ${GRH_BYTES} bytes, got ${raw.byteLength}: pass the receive buffer from where the receive started`);
  }
  const ip4 = raw.subarray(20, 40);
  const six = raw[0] >> 4 === 6;
  // The first 20 bytes of an IPv4 datagram's area are undefined: they may
  // read as version 6 by chance, so then only a checksummed header counts.
  if (six ? isIpv4Header(ip4) : ip4[0] >> 4 === 4) {
    return {
      version: 4,
      sgid: mappedGid(ip4.subarray(12, 16)),
      dgid: mappedGid(ip4.subarray(16, 20)),
      trafficClass: ip4[1],
      flowLabel: 0,
      hopLimit: ip4[8],
      nextHeader: ip4[9],
    };
  }
  if (!six) {
    throw new RangeError(`not a GRH: its first byte says IP version ${raw[0] >> 4}, and bytes 20-39 hold no IPv4 header`);
  }
  const word = ((raw[0] << 24) | (raw[1] << 16) | (raw[2] << 8) | raw[3]) >>> 0;
  return {
    version: 6,
    sgid: gidString(raw.subarray(8, 24)),
    dgid: gidString(raw.subarray(24, 40)),
    trafficClass: (word >>> 20) & 0xff,
    flowLabel: word & 0xfffff,
    hopLimit: raw[7],
    nextHeader: raw[6],
  };
}
