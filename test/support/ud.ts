/**
 * UD set-ups for the native suites: active UD QPs on the device under test,
 * addressed by GID (RoCE needs a GRH; the soft device accepts either), and
 * the GRH a receiver finds in front of a datagram, decoded.
 */
import { Context, Cq, Pd, UdQp, Ah, Mr, openDevice, WcBatch } from '../../src';
import { TEST_DEVICE, TEST_GID_INDEX, pollN } from './device';

/** The GID index UD addresses use here. */
export const UD_GID_INDEX = TEST_GID_INDEX ?? 0;
/** The qkey the suites give their QPs. */
export const QKEY = 0x11111111;

/** One UD QP with its own CQ and buffers. */
export interface UdEnd {
  qp: UdQp;
  cq: Cq;
  gid: string;
}

/** A context, a PD and `n` active UD QPs on one channel. */
export interface UdSet {
  ctx: Context;
  pd: Pd;
  ends: UdEnd[];
  /** An address handle to `end` from this set's PD. */
  ahTo(end: UdEnd): Ah;
  close(): void;
}

/** Opens the test device and activates `n` UD QPs (qkey QKEY unless given). */
export function makeUdSet(n: number, options: { qkeys?: number[]; ctx?: Context; maxRecvWr?: number } = {}): UdSet {
  const ctx = options.ctx ?? openDevice(TEST_DEVICE);
  try {
    const channel = ctx.createCompChannel();
    const pd = ctx.allocPd();
    const gid = ctx.queryGid(1, UD_GID_INDEX);
    const ends: UdEnd[] = [];
    for (let i = 0; i < n; i++) {
      const cq = ctx.createCq({ cqe: 256, channel, context: `ud${i}` });
      const qp = pd.createQp({
        type: 'UD',
        qkey: options.qkeys?.[i] ?? QKEY,
        sendCq: cq,
        recvCq: cq,
        cap: { maxSendWr: 64, maxRecvWr: options.maxRecvWr ?? 64, maxSendSge: 2, maxRecvSge: 2 },
      });
      qp.activate();
      ends.push({ qp, cq, gid });
    }
    return {
      ctx,
      pd,
      ends,
      ahTo: (end) => pd.createAh({ gid: end.gid, gidIndex: UD_GID_INDEX }),
      close: () => {
        if (!options.ctx) ctx.close();
      },
    };
  } catch (err) {
    if (!options.ctx) ctx.close();
    throw err;
  }
}

/** Completions of `cq` until `n` arrived (or the deadline), split by opcode. */
export async function completions(cq: Cq, n: number, ms?: number): Promise<WcBatch> {
  return pollN(cq, n, ms);
}

/** GID string ("fe80:0000:...") to its 16 bytes. */
export function gidBytes(gid: string): Buffer {
  return Buffer.from(gid.replace(/:/g, ''), 'hex');
}

/** True for an IPv4-mapped GID (::ffff:a.b.c.d): RoCE v2 over IPv4. */
export function isIpv4Mapped(gid: Buffer): boolean {
  return gid.subarray(0, 10).every((b) => b === 0) && gid[10] === 0xff && gid[11] === 0xff;
}

/** What the 40 bytes in front of a UD receive say about the datagram. */
export interface DecodedGrh {
  /** The sender's GID, as the GRH or the IPv4 header names it. */
  sgid: Buffer;
  dgid: Buffer;
  /** 17 (UDP: RoCE v2) or 0x1b (IB). */
  nextHeader: number;
  /** IP version in the header: 6, or 4 for RoCE v2 over IPv4. */
  version: number;
}

/**
 * Decodes the GRH area as rxe and the soft device write it: an IPv6 header
 * (or a GRH), or on RoCE v2 over IPv4 twenty unused bytes then the IPv4
 * header, whose addresses map to IPv4-mapped GIDs.
 */
export function decodeGrh(area: Buffer, expectIpv4: boolean): DecodedGrh {
  if (expectIpv4) {
    const ip = area.subarray(20, 40);
    const mapped = (addr: Buffer) => Buffer.concat([Buffer.alloc(10), Buffer.from([0xff, 0xff]), addr]);
    return { version: ip[0] >> 4, nextHeader: ip[9], sgid: mapped(ip.subarray(12, 16)), dgid: mapped(ip.subarray(16, 20)) };
  }
  return { version: area[0] >> 4, nextHeader: area[6], sgid: area.subarray(8, 24), dgid: area.subarray(24, 40) };
}

/** Posts one receive of `length` bytes at `offset` of `mr`. */
export function postRecv(qp: UdQp, mr: Mr, wrId: number, offset: number, length: number): void {
  qp.postRecv({ wrId, sg: { mr, offset, length } });
}
