import type { NativeAh } from '../native/binding';
import type { Ah } from './ah';
import { Mr } from './mr';
import { packUdTarget } from './ud-target';
import { WR_OPCODES, WrOpcode } from '../core/constants';
import { checkInt, checkObject, checkU64, describe, optBool } from '../core/validate';

/** A scatter/gather entry: `length` bytes at `offset` in a registered region. */
export interface Sge {
  mr: Mr;
  /** Byte offset in the region (default 0). */
  offset?: number;
  /** Bytes (default: the rest of the region; 8 in an atomic). */
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
  /** The peer's memory for RDMA operations and atomics (an atomic's `addr` is 8-byte aligned). */
  remote?: { addr: bigint | number; rkey: number };
  /** UD only: where the datagram goes (required on a UD QP). */
  ah?: Ah;
  /** UD only: the destination QP number. */
  remoteQpn?: number;
  /** UD only: the destination's qkey (high bit set: this QP's own qkey). */
  remoteQkey?: number;
  /**
   * Atomics: the value to compare (`ATOMIC_CMP_AND_SWP`) or to add
   * (`ATOMIC_FETCH_AND_ADD`, modulo 2^64: `-1n` decrements). A bigint in
   * [-2^63, 2^64); negatives are taken as two's complement.
   */
  compareAdd?: bigint;
  /** `ATOMIC_CMP_AND_SWP`: the value stored when the word equals `compareAdd`. */
  swap?: bigint;
}

/** A receive work request (`ibv_recv_wr`). */
export interface RecvWr {
  wrId: bigint | number;
  sg: SgEntry | SgEntry[];
}

const SEND_HEADER = 40;
const RECV_HEADER = 16;
const SGE_BYTES = 16;
const ATOMIC_OPERANDS = 16;
/** An atomic's local buffer: one 64-bit word. */
const ATOMIC_BYTES = 8;
const FLAG_SIGNALED = 2;
const FLAG_SOLICITED = 4;
const FLAG_INLINE = 8;

/** What errors call the fields of one scatter/gather entry (`wr[0].sg`, `wr[0].sg[1]`, ...). */
interface SgeNames {
  at: string;
  offset: string;
  length: string;
  addr: string;
  lkey: string;
}

/** What errors call the fields of WR i. */
interface WrNames {
  wr: string;
  wrId: string;
  signaled: string;
  solicited: string;
  inline: string;
  imm: string;
  remoteAddr: string;
  remoteRkey: string;
  /** `remote`, as an RDMA or atomic opcode requires it, by opcode (made on first use). */
  remoteFor: Record<string, string>;
  /** The entry of `sg` given alone. */
  sg: SgeNames;
  /** Entry k of `sg` given as an array, made on first use. */
  sgAt: SgeNames[];
}

function sgeNames(at: string): SgeNames {
  return { at, offset: `${at}.offset`, length: `${at}.length`, addr: `${at}.addr`, lkey: `${at}.lkey` };
}

function wrNames(i: number): WrNames {
  const wr = `wr[${i}]`;
  const n = (field: string) => `${wr}.${field}`;
  return {
    wr,
    wrId: n('wrId'),
    signaled: n('signaled'),
    solicited: n('solicited'),
    inline: n('inline'),
    imm: n('imm'),
    remoteAddr: n('remote.addr'),
    remoteRkey: n('remote.rkey'),
    remoteFor: {},
    sg: sgeNames(n('sg')),
    sgAt: [],
  };
}

// The names are made once per index and kept: building them on every post
// (a dozen strings, whether or not a check failed) cost about 300
// instructions a post, and posts name the same few indices over and over.
// Indices past the cache get fresh names.
const NAMED = 64;
const namesCache: WrNames[] = [];
const namesOf = (i: number): WrNames => (i < NAMED ? (namesCache[i] ??= wrNames(i)) : wrNames(i));
const sgNamesOf = (names: WrNames, k: number): SgeNames => (names.sgAt[k] ??= sgeNames(`${names.sg.at}[${k}]`));

/** A u64 read from the user: a number (a safe integer) is kept as one, no BigInt made. */
type U64 = bigint | number;

/** A send WR read once into plain values (see {@link WrEncoder}). */
interface ResolvedSend {
  wrId: U64;
  remoteAddr: U64;
  opcode: number;
  flags: number;
  imm: number;
  rkey: number;
  sges: ResolvedSge[];
  /** Set for atomics only (packed after the header). */
  atomic?: { compareAdd: bigint; swap: bigint };
}

/** A receive WR read once into plain values. */
interface ResolvedRecv {
  wrId: U64;
  sges: ResolvedSge[];
}

/**
 * Packs work requests into the addon's wire form (see src/native/wr_codec.h),
 * validating every field first so the native side sees only sane values and
 * nothing is posted if any request is malformed. One buffer, reused.
 *
 * Two passes: every field of every request is read exactly once into plain
 * values (user getters run here, and may even post on another QP), and only
 * then is the shared buffer written, with no user code running, so a nested
 * post cannot overwrite a half-packed batch.
 */
export class WrEncoder {
  private buf = new ArrayBuffer(4096);
  private view = new DataView(this.buf);
  /**
   * The whole buffer, for the addon: the last encode's WRs start at 0 and
   * the addon reads only as many as it is told (one view, not one per post).
   */
  bytes = new Uint8Array(this.buf);

  /**
   * Packs send WRs into {@link WrEncoder.bytes}; returns how many WRs it
   * holds. With `ahs` (a UD QP's post) every WR must name a destination, and
   * the address handles they use are collected there.
   */
  encodeSend(wrs: SendWr | readonly SendWr[], ahs?: NativeAh[]): number {
    const list = readAll(wrs, (wr, i) => readSend(wr, i, ahs));
    let at = 0;
    for (const wr of list) {
      this.reserve(at + SEND_HEADER + ATOMIC_OPERANDS + wr.sges.length * SGE_BYTES);
      const v = this.view;
      this.setU64(at, wr.wrId);
      this.setU64(at + 8, wr.remoteAddr);
      v.setUint32(at + 16, wr.opcode, true);
      v.setUint32(at + 20, wr.flags, true);
      v.setUint32(at + 24, wr.imm, true);
      v.setUint32(at + 28, wr.rkey, true);
      v.setUint32(at + 32, wr.sges.length, true);
      v.setUint32(at + 36, 0, true);
      at += SEND_HEADER;
      if (wr.atomic) {
        v.setBigUint64(at, wr.atomic.compareAdd, true);
        v.setBigUint64(at + 8, wr.atomic.swap, true);
        at += ATOMIC_OPERANDS;
      }
      at = this.writeSges(at, wr.sges);
    }
    return list.length;
  }

  /** Packs receive WRs into {@link WrEncoder.bytes}; returns how many WRs it holds. */
  encodeRecv(wrs: RecvWr | readonly RecvWr[]): number {
    const list = readAll(wrs, readRecv);
    let at = 0;
    for (const wr of list) {
      this.reserve(at + RECV_HEADER + wr.sges.length * SGE_BYTES);
      this.setU64(at, wr.wrId);
      this.view.setUint32(at + 8, wr.sges.length, true);
      this.view.setUint32(at + 12, 0, true);
      at = this.writeSges(at + RECV_HEADER, wr.sges);
    }
    return list.length;
  }

  /** A u64, little-endian; a number (a safe integer) as two words, with no BigInt made. */
  private setU64(at: number, value: U64): void {
    if (typeof value === 'bigint') {
      this.view.setBigUint64(at, value, true);
    } else {
      this.view.setUint32(at, value >>> 0, true);
      this.view.setUint32(at + 4, Math.floor(value / 0x1_0000_0000), true);
    }
  }

  private writeSges(at: number, sges: ResolvedSge[]): number {
    for (const s of sges) {
      this.setU64(at, s.addr);
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
    this.bytes = new Uint8Array(next);
  }
}

/**
 * One WR or an array of them, each read once by `read` (an array's length
 * once too, then every element once, by index). A plain loop: Array.from
 * with a map function took half of a post's time.
 */
function readAll<W, R>(wrs: W | readonly W[], read: (wr: W, i: number) => R): R[] {
  if (!Array.isArray(wrs)) return [read(wrs as W, 0)];
  const n = wrs.length;
  const out = new Array<R>(n);
  for (let i = 0; i < n; i++) out[i] = read(wrs[i], i);
  return out;
}

function readSend(wr: SendWr, i: number, ahs?: NativeAh[]): ResolvedSend {
  const names = namesOf(i);
  const where = names.wr;
  checkObject(wr, where);
  const { wrId: rawId, opcode: rawOpcode, sg, signaled, solicited, inline, imm: rawImm, remote: rawRemote, compareAdd: rawCompareAdd, swap: rawSwap } = wr;
  const { ah, remoteQpn, remoteQkey } = wr;
  const wrId = checkU64(rawId, names.wrId);
  const opcodeName = rawOpcode ?? 'SEND';
  const opcode = WR_OPCODES[opcodeName as WrOpcode];
  if (opcode === undefined) {
    throw new RangeError(`${where}.opcode must be one of ${Object.keys(WR_OPCODES).join(', ')}, got ${describe(rawOpcode)}`);
  }
  const isAtomic = opcodeName === 'ATOMIC_CMP_AND_SWP' || opcodeName === 'ATOMIC_FETCH_AND_ADD';
  // An atomic writes one word: an entry without a length means those 8 bytes.
  const sges = normaliseSg(sg, names, isAtomic ? ATOMIC_BYTES : undefined);
  let flags = 0;
  if (optBool(signaled, names.signaled, true)) flags |= FLAG_SIGNALED;
  if (optBool(solicited, names.solicited, false)) flags |= FLAG_SOLICITED;
  if (optBool(inline, names.inline, false)) flags |= FLAG_INLINE;
  const needsImm = opcodeName === 'SEND_WITH_IMM' || opcodeName === 'RDMA_WRITE_WITH_IMM';
  const imm = rawImm === undefined ? 0 : checkInt(rawImm, names.imm, 0, 0xffffffff);
  if (needsImm && rawImm === undefined) throw new TypeError(`${where}.imm is required for ${opcodeName}`);
  let remoteAddr: U64 = 0;
  let rkey = 0;
  if (!ahs && (opcodeName.startsWith('RDMA_') || isAtomic)) {
    const remote = checkObject(rawRemote, (names.remoteFor[opcodeName] ??= `${where}.remote (required for ${opcodeName})`));
    const { addr, rkey: rawRkey } = remote;
    remoteAddr = checkU64(addr, names.remoteAddr);
    rkey = checkInt(rawRkey, names.remoteRkey, 0, 0xffffffff);
  }
  if (ahs) ({ remoteAddr, rkey } = packUdTarget(where, opcodeName, { ah, remoteQpn, remoteQkey }, ahs));
  else if (ah !== undefined) throw new TypeError(`${where}.ah is for UD queue pairs only`);
  const atomic = readAtomic(opcodeName, rawCompareAdd, rawSwap, where);
  return { wrId, remoteAddr, opcode, flags, imm, rkey, sges, atomic };
}

/** An atomic's operands as u64 bit patterns; a non-atomic WR must carry none. */
function readAtomic(opcodeName: string, compareAdd: unknown, swap: unknown, where: string): ResolvedSend['atomic'] {
  if (opcodeName !== 'ATOMIC_CMP_AND_SWP' && opcodeName !== 'ATOMIC_FETCH_AND_ADD') {
    if (compareAdd !== undefined || swap !== undefined) {
      throw new TypeError(`${where}: compareAdd and swap are only for ATOMIC_CMP_AND_SWP and ATOMIC_FETCH_AND_ADD`);
    }
    return undefined;
  }
  const cas = opcodeName === 'ATOMIC_CMP_AND_SWP';
  if (!cas && swap !== undefined) throw new TypeError(`${where}.swap is only for ATOMIC_CMP_AND_SWP`);
  return {
    compareAdd: checkWord(compareAdd, `${where}.compareAdd (required for ${opcodeName})`),
    swap: cas ? checkWord(swap, `${where}.swap (required for ATOMIC_CMP_AND_SWP)`) : 0n,
  };
}

/** A 64-bit operand: a bigint in [-2^63, 2^64), as its two's complement bits. */
function checkWord(value: unknown, what: string): bigint {
  if (typeof value !== 'bigint') throw new TypeError(`${what} must be a bigint, got ${describe(value)}`);
  if (value < -(1n << 63n) || value >= 1n << 64n) {
    throw new RangeError(`${what} must be a bigint in [-2^63, 2^64), got ${value}`);
  }
  return BigInt.asUintN(64, value);
}

function readRecv(wr: RecvWr, i: number): ResolvedRecv {
  const names = namesOf(i);
  checkObject(wr, names.wr);
  const { wrId: rawId, sg } = wr;
  return { wrId: checkU64(rawId, names.wrId), sges: normaliseSg(sg, names) };
}

interface ResolvedSge {
  addr: U64;
  length: number;
  lkey: number;
}

function normaliseSg(sg: SgEntry | SgEntry[] | undefined, names: WrNames, defaultLength?: number): ResolvedSge[] {
  const where = names.sg.at;
  if (sg === undefined) throw new TypeError(`${where} is required: { mr, offset, length } or an array of them`);
  if (!Array.isArray(sg)) return [readSge(sg, names.sg, defaultLength)];
  const n = sg.length;
  if (n > 64) throw new RangeError(`${where} has ${n} entries; at most 64`);
  // A copy: the caller's array is read once, whatever its getters do.
  const list: SgEntry[] = new Array(n);
  for (let k = 0; k < n; k++) list[k] = sg[k];
  const out: ResolvedSge[] = new Array(n);
  for (let k = 0; k < n; k++) out[k] = readSge(list[k], sgNamesOf(names, k), defaultLength);
  return out;
}

/** One scatter/gather entry, `names` naming it and its fields in errors. */
function readSge(entry: SgEntry, names: SgeNames, defaultLength?: number): ResolvedSge {
  const at = names.at;
  checkObject(entry, at);
  if (isRawSge(entry)) {
    const { addr, length, lkey } = entry;
    return {
      addr: checkU64(addr, names.addr),
      length: checkInt(length, names.length, 0, 0xffffffff),
      lkey: checkInt(lkey, names.lkey, 0, 0xffffffff),
    };
  }
  const { mr, offset: rawOffset, length: rawLength } = entry;
  if (!(mr instanceof Mr)) throw new TypeError(`${at}.mr must be an Mr from pd.registerMemory() or pd.allocMemory()`);
  if (mr.closed) {
    const err = new Error(`${at}.mr is deregistered`) as Error & { code: string };
    err.code = 'EBADF';
    throw err;
  }
  const offset = rawOffset === undefined ? 0 : checkInt(rawOffset, names.offset, 0, mr.length);
  const length =
    rawLength === undefined
      ? (defaultLength ?? mr.length - offset)
      : checkInt(rawLength, names.length, 0, 0xffffffff);
  if (offset + length > mr.length) {
    throw new RangeError(`${at}: offset ${offset} + length ${length} is past the end of the region (${mr.length} bytes)`);
  }
  return { addr: mr.addressOf(offset), length, lkey: mr.lkey };
}
