import { Mr } from './mr';
import { WR_OPCODES, WrOpcode } from './constants';
import { checkInt, checkObject, checkU64, describe, optBool } from './validate';

/** A scatter/gather entry: `length` bytes at `offset` in a registered region. */
export interface Sge {
  mr: Mr;
  /** Byte offset in the region (default 0). */
  offset?: number;
  /** Bytes (default: the rest of the region). */
  length?: number;
}

/**
 * A raw scatter/gather entry as `ibv_sge` has it: an address and a local key,
 * checked only by the device (as with rdma-core). Prefer {@link Sge}.
 */
export interface RawSge {
  addr: bigint | number;
  length: number;
  lkey: number;
}

/** Either form of scatter/gather entry. */
export type SgEntry = Sge | RawSge;

function isRawSge(entry: object): entry is RawSge {
  return !('mr' in entry) && 'lkey' in entry;
}

/** A send work request (`ibv_send_wr`). */
export interface SendWr {
  /** Returned in the completion: any 64-bit value. */
  wrId: bigint | number;
  /** Default `'SEND'`. */
  opcode?: WrOpcode;
  /** One entry or several (up to the QP's `maxSendSge`). */
  sg: SgEntry | SgEntry[];
  /** Produce a completion on success (default true; errors always complete). */
  signaled?: boolean;
  /** Ask the receiver for a solicited event. */
  solicited?: boolean;
  /** Copy the data at post time (up to the QP's `maxInlineData`). */
  inline?: boolean;
  /** Immediate data for `SEND_WITH_IMM` / `RDMA_WRITE_WITH_IMM`. */
  imm?: number;
  /** The peer's memory for RDMA operations. */
  remote?: { addr: bigint | number; rkey: number };
}

/** A receive work request (`ibv_recv_wr`). */
export interface RecvWr {
  wrId: bigint | number;
  sg: SgEntry | SgEntry[];
}

const SEND_HEADER = 40;
const RECV_HEADER = 16;
const SGE_BYTES = 16;
const FLAG_SIGNALED = 2;
const FLAG_SOLICITED = 4;
const FLAG_INLINE = 8;

/**
 * Packs work requests into the addon's wire form (see src/native/wr_codec.h),
 * validating every field first so the native side sees only sane values and
 * nothing is posted if any request is malformed. One buffer, reused.
 */
export class WrEncoder {
  private buf = new ArrayBuffer(4096);
  private view = new DataView(this.buf);

  /** Packs send WRs; returns the bytes to hand to `postSend`. */
  encodeSend(wrs: readonly SendWr[]): Uint8Array {
    let at = 0;
    wrs.forEach((wr, i) => {
      const where = `wr[${i}]`;
      checkObject(wr, where);
      const wrId = checkU64(wr.wrId, `${where}.wrId`);
      const opcodeName = wr.opcode ?? 'SEND';
      const opcode = WR_OPCODES[opcodeName as WrOpcode];
      if (opcode === undefined) {
        throw new RangeError(`${where}.opcode must be one of ${Object.keys(WR_OPCODES).join(', ')}, got ${describe(wr.opcode)}`);
      }
      const sges = normaliseSg(wr.sg, `${where}.sg`);
      let flags = 0;
      if (optBool(wr.signaled, `${where}.signaled`, true)) flags |= FLAG_SIGNALED;
      if (optBool(wr.solicited, `${where}.solicited`, false)) flags |= FLAG_SOLICITED;
      if (optBool(wr.inline, `${where}.inline`, false)) flags |= FLAG_INLINE;
      const needsImm = opcodeName === 'SEND_WITH_IMM' || opcodeName === 'RDMA_WRITE_WITH_IMM';
      const imm = wr.imm === undefined ? 0 : checkInt(wr.imm, `${where}.imm`, 0, 0xffffffff);
      if (needsImm && wr.imm === undefined) throw new TypeError(`${where}.imm is required for ${opcodeName}`);
      let remoteAddr = 0n;
      let rkey = 0;
      if (opcodeName.startsWith('RDMA_')) {
        const remote = checkObject(wr.remote, `${where}.remote (required for ${opcodeName})`);
        remoteAddr = checkU64(remote.addr, `${where}.remote.addr`);
        rkey = checkInt(remote.rkey, `${where}.remote.rkey`, 0, 0xffffffff);
      }
      this.reserve(at + SEND_HEADER + sges.length * SGE_BYTES);
      const v = this.view;
      v.setBigUint64(at, wrId, true);
      v.setBigUint64(at + 8, remoteAddr, true);
      v.setUint32(at + 16, opcode, true);
      v.setUint32(at + 20, flags, true);
      v.setUint32(at + 24, imm, true);
      v.setUint32(at + 28, rkey, true);
      v.setUint32(at + 32, sges.length, true);
      v.setUint32(at + 36, 0, true);
      at = this.writeSges(at + SEND_HEADER, sges);
    });
    return new Uint8Array(this.buf, 0, at);
  }

  /** Packs receive WRs; returns the bytes to hand to `postRecv`. */
  encodeRecv(wrs: readonly RecvWr[]): Uint8Array {
    let at = 0;
    wrs.forEach((wr, i) => {
      const where = `wr[${i}]`;
      checkObject(wr, where);
      const wrId = checkU64(wr.wrId, `${where}.wrId`);
      const sges = normaliseSg(wr.sg, `${where}.sg`);
      this.reserve(at + RECV_HEADER + sges.length * SGE_BYTES);
      this.view.setBigUint64(at, wrId, true);
      this.view.setUint32(at + 8, sges.length, true);
      this.view.setUint32(at + 12, 0, true);
      at = this.writeSges(at + RECV_HEADER, sges);
    });
    return new Uint8Array(this.buf, 0, at);
  }

  private writeSges(at: number, sges: ResolvedSge[]): number {
    for (const s of sges) {
      this.view.setBigUint64(at, s.addr, true);
      this.view.setUint32(at + 8, s.length, true);
      this.view.setUint32(at + 12, s.lkey, true);
      at += SGE_BYTES;
    }
    return at;
  }

  private reserve(bytes: number): void {
    if (bytes <= this.buf.byteLength) return;
    const next = new ArrayBuffer(Math.max(bytes, this.buf.byteLength * 2));
    new Uint8Array(next).set(new Uint8Array(this.buf));
    this.buf = next;
    this.view = new DataView(next);
  }
}

interface ResolvedSge {
  addr: bigint;
  length: number;
  lkey: number;
}

function normaliseSg(sg: SgEntry | SgEntry[] | undefined, where: string): ResolvedSge[] {
  if (sg === undefined) throw new TypeError(`${where} is required: { mr, offset, length } or an array of them`);
  const list = Array.isArray(sg) ? sg : [sg];
  if (list.length > 64) throw new RangeError(`${where} has ${list.length} entries; at most 64`);
  return list.map((entry, k) => {
    const at = Array.isArray(sg) ? `${where}[${k}]` : where;
    checkObject(entry, at);
    if (isRawSge(entry)) {
      return {
        addr: checkU64(entry.addr, `${at}.addr`),
        length: checkInt(entry.length, `${at}.length`, 0, 0xffffffff),
        lkey: checkInt(entry.lkey, `${at}.lkey`, 0, 0xffffffff),
      };
    }
    if (!(entry.mr instanceof Mr)) throw new TypeError(`${at}.mr must be an Mr from pd.registerMemory() or pd.allocMemory()`);
    const mr = entry.mr;
    if (mr.closed) {
      const err = new Error(`${at}.mr is deregistered`) as Error & { code: string };
      err.code = 'EBADF';
      throw err;
    }
    const offset = entry.offset === undefined ? 0 : checkInt(entry.offset, `${at}.offset`, 0, mr.length);
    const length =
      entry.length === undefined ? mr.length - offset : checkInt(entry.length, `${at}.length`, 0, 0xffffffff);
    if (offset + length > mr.length) {
      throw new RangeError(`${at}: offset ${offset} + length ${length} is past the end of the region (${mr.length} bytes)`);
    }
    return { addr: mr.addr + BigInt(offset), length, lkey: mr.lkey };
  });
}
