import { wcOpcodeName, wcStatusName, WcOpcode, WcStatus, WC_FLAGS } from './constants';

/**
 * Bytes one work completion takes in a batch buffer: a u64 `wr_id`, 8 u32
 * columns, `slid` (u16), `sl` and `dlidPathBits` (u8 each) and 4 reserved
 * bytes (zero). A multiple of 8, so every batch in a slab starts aligned.
 */
export const WC_BYTES = 48;

// Where the narrow columns start, in bytes per completion before them: the
// column of a batch of n begins at n times this.
const SLID_AT = 40;
const SL_AT = 42;
const PATH_BITS_AT = 43;
// The narrow columns as [where, bytes per completion], for byte-wise copies.
const NARROW: ReadonlyArray<readonly [number, number]> = [[SLID_AT, 2], [SL_AT, 1], [PATH_BITS_AT, 1]];

/** One work completion as a plain object (made on demand by {@link WcBatch.at}). */
export interface WorkCompletion {
  /** The full 64-bit `wr_id` the work request was posted with. */
  wrId: bigint;
  /** Status as rdma-core names it (`'SUCCESS'`, `'REM_ACCESS_ERR'`, ...). */
  status: WcStatus | 'UNKNOWN';
  /** Opcode as rdma-core names it (`'SEND'`, `'RECV'`, ...). */
  opcode: WcOpcode | 'UNKNOWN';
  /** Bytes transferred (receives, RDMA READ). */
  byteLen: number;
  /** Immediate data (host order), when `flags` has `WITH_IMM`. */
  imm: number | undefined;
  /** The local QP number the completion belongs to. */
  qpNum: number;
  /** The remote QP number (receives). */
  srcQp: number;
  /** `ibv_wc_flags` bits. */
  flags: number;
  /** Vendor error syndrome (0 when none). */
  vendorErr: number;
  /**
   * The sender's LID (`ibv_wc.slid`), for successful receives: on an
   * InfiniBand port the LID of the port the message came from (UD and RC);
   * on RoCE 0 (there are no LIDs: the sender is in the GRH, see `flags`).
   */
  slid: number;
  /** The service level the message travelled on (`ibv_wc.sl`, 0-15), for successful receives. */
  sl: number;
  /** The low bits of the destination LID that chose this port's path (`ibv_wc.dlid_path_bits`; 0 when the port's LMC is 0). */
  dlidPathBits: number;
}

/**
 * A batch of work completions in structure-of-arrays form: one buffer, one
 * typed array per field, so a batch of N completions costs one allocation
 * rather than N objects.
 *
 * Layout of the buffer (little-endian, as the native side writes it):
 * `wrId: u64[n]`, then `status, opcode, byteLen, imm, qpNum, srcQp, flags,
 * vendorErr: u32[n]` each, then `slid: u16[n]`, `sl: u8[n]`,
 * `dlidPathBits: u8[n]` and 4n reserved bytes ({@link WC_BYTES} per
 * completion).
 *
 * @example
 * ```ts
 * for (let i = 0; i < batch.length; i++) {
 *   if (batch.status[i] !== 0) console.error(batch.at(i));
 *   else done(batch.wrIdLow(i));
 * }
 * ```
 */
export class WcBatch {
  /** Number of completions in the batch. */
  readonly length: number;
  /**
   * The underlying buffer (see the class comment for its layout). A batch
   * from the addon views a region of its CQ's own slab: the buffer may hold
   * earlier (and, until the next batch is made, later) completions of the
   * same CQ, never another CQ's. Transferring or detaching it affects only
   * batches of that CQ already delivered; the addon then starts a new slab.
   * A batch made in JS ({@link WcBatch.concat}, `slice`, `filter`, `from`)
   * owns its buffer.
   */
  readonly buffer: ArrayBuffer;
  /** Where this batch starts in `buffer` (a multiple of 8). */
  readonly byteOffset: number;
  // Column views are made on first use: a consumer that reads wr_id and
  // status pays for two views per batch, not ten.
  private readonly views: Array<Uint32Array | undefined> = [];
  private wrIdView: BigUint64Array | undefined;
  private wordsView: Uint32Array | undefined;
  private slidView: Uint16Array | undefined;
  private slView: Uint8Array | undefined;
  private pathBitsView: Uint8Array | undefined;
  // The whole buffer as 32-bit words, for the `...At(i)` readers: a batch
  // from the addon shares its CQ's view of the slab, so reading a field
  // makes no view per batch (see `WcBatch.inSlab`).
  private allWords: Uint32Array | undefined;
  // Where this batch starts in `allWords`.
  private readonly firstWord: number;

  /**
   * Wraps `length` completions laid out in `buffer` from `byteOffset` (see
   * the class comment).
   * @throws RangeError when the buffer is too small for `length` or the
   *   offset is not a multiple of 8.
   */
  constructor(buffer: ArrayBuffer, length: number, byteOffset = 0) {
    if (!Number.isInteger(length) || length < 0) {
      throw new RangeError(`WcBatch length must be a non-negative integer, got ${length}`);
    }
    if (!Number.isInteger(byteOffset) || byteOffset < 0 || byteOffset % 8 !== 0) {
      throw new RangeError(`WcBatch byteOffset must be a non-negative multiple of 8, got ${byteOffset}`);
    }
    if (buffer.byteLength - byteOffset < length * WC_BYTES) {
      throw new RangeError(`WcBatch buffer holds ${buffer.byteLength - byteOffset} bytes from its offset, ${length * WC_BYTES} needed`);
    }
    this.length = length;
    this.buffer = buffer;
    this.byteOffset = byteOffset;
    this.firstWord = byteOffset / 4;
  }

  /** A batch over bytes laid out as the class comment says (what the addon hands over). */
  static fromBytes(bytes: Uint8Array): WcBatch {
    return new WcBatch(bytes.buffer as ArrayBuffer, bytes.byteLength / WC_BYTES, bytes.byteOffset);
  }

  /**
   * @internal A batch of `length` completions the addon laid out at
   * `byteOffset` of its slab `buffer`, reading its fields through
   * `slabWords`: a `Uint32Array` over all of `buffer`, kept by the CQ for
   * every batch of that slab.
   */
  static inSlab(buffer: ArrayBuffer, length: number, byteOffset: number, slabWords: Uint32Array): WcBatch {
    const batch = new WcBatch(buffer, length, byteOffset);
    batch.allWords = slabWords;
    return batch;
  }

  /** `wr_id` as full 64-bit values (each read makes a BigInt). */
  get wrId(): BigUint64Array {
    return (this.wrIdView ??= new BigUint64Array(this.buffer, this.byteOffset, this.length));
  }

  /**
   * The `wr_id` column as 32-bit words (low word of completion i at 2i, high
   * at 2i+1): read ids that fit in 32 bits without making a BigInt.
   */
  get wrIdWords(): Uint32Array {
    return (this.wordsView ??= new Uint32Array(this.buffer, this.byteOffset, this.length * 2));
  }

  /** Numeric `ibv_wc_status`; 0 is success. */
  get status(): Uint32Array {
    return this.views[0] ?? this.column(0);
  }

  /** Numeric `ibv_wc_opcode`. */
  get opcode(): Uint32Array {
    return this.views[1] ?? this.column(1);
  }

  /** Bytes transferred. */
  get byteLen(): Uint32Array {
    return this.views[2] ?? this.column(2);
  }

  /** Immediate data, host order. */
  get imm(): Uint32Array {
    return this.views[3] ?? this.column(3);
  }

  /** Local QP number. */
  get qpNum(): Uint32Array {
    return this.views[4] ?? this.column(4);
  }

  /** Source QP number. */
  get srcQp(): Uint32Array {
    return this.views[5] ?? this.column(5);
  }

  /** `ibv_wc_flags`. */
  get flags(): Uint32Array {
    return this.views[6] ?? this.column(6);
  }

  /** Vendor error syndrome. */
  get vendorErr(): Uint32Array {
    return this.views[7] ?? this.column(7);
  }

  /** The sender's LID (successful receives; 0 on RoCE). */
  get slid(): Uint16Array {
    return (this.slidView ??= new Uint16Array(this.buffer, this.byteOffset + this.length * SLID_AT, this.length));
  }

  /** Service level (successful receives). */
  get sl(): Uint8Array {
    return (this.slView ??= new Uint8Array(this.buffer, this.byteOffset + this.length * SL_AT, this.length));
  }

  /** Destination LID path bits (successful receives). */
  get dlidPathBits(): Uint8Array {
    return (this.pathBitsView ??= new Uint8Array(this.buffer, this.byteOffset + this.length * PATH_BITS_AT, this.length));
  }

  private column(k: number): Uint32Array {
    const n = this.length;
    return (this.views[k] = new Uint32Array(this.buffer, this.byteOffset + n * 8 + k * n * 4, n));
  }

  /** Low 32 bits of `wr_id` i, as a number (no BigInt made); `undefined` out of range. */
  wrIdLow(i: number): number {
    return this.inRange(i) ? this.words()[this.firstWord + 2 * i] : (undefined as unknown as number);
  }

  // The `...At(i)` readers: one field of completion i, read in place. A
  // handler that reads a few fields of a small batch this way makes no
  // typed array at all; the column getters make one view per column per
  // batch (cheaper per field once a batch is large). Like a typed array's
  // index, they give `undefined` for an i out of range.

  /** `status` of completion i (0 is success). */
  statusAt(i: number): number {
    return this.column32At(0, i);
  }

  /** `opcode` of completion i. */
  opcodeAt(i: number): number {
    return this.column32At(1, i);
  }

  /** `byteLen` of completion i. */
  byteLenAt(i: number): number {
    return this.column32At(2, i);
  }

  /** `imm` of completion i (host order). */
  immAt(i: number): number {
    return this.column32At(3, i);
  }

  /** `qpNum` of completion i. */
  qpNumAt(i: number): number {
    return this.column32At(4, i);
  }

  /** `srcQp` of completion i. */
  srcQpAt(i: number): number {
    return this.column32At(5, i);
  }

  /** `flags` of completion i. */
  flagsAt(i: number): number {
    return this.column32At(6, i);
  }

  /** `vendorErr` of completion i. */
  vendorErrAt(i: number): number {
    return this.column32At(7, i);
  }

  // Word k*n + i after the 2n words of wr_id: column k of completion i.
  private column32At(k: number, i: number): number {
    const n = this.length;
    return this.inRange(i) ? this.words()[this.firstWord + 2 * n + k * n + i] : (undefined as unknown as number);
  }

  // An index check first: the words view spans the whole buffer, which may
  // hold other batches (and a string index would be concatenated).
  private inRange(i: number): boolean {
    return Number.isInteger(i) && i >= 0 && i < this.length;
  }

  private words(): Uint32Array {
    return (this.allWords ??= wordsOf(this.buffer));
  }

  /** The empty batch (shared: there is nothing in it to change, and its buffer cannot be detached). */
  static empty(): WcBatch {
    return EMPTY ?? new WcBatch(new ArrayBuffer(0), 0);
  }

  /**
   * Builds a batch from plain completion objects (tests, the testing kit).
   * Missing fields default to a successful, zeroed completion.
   */
  static from(wcs: ReadonlyArray<Partial<WorkCompletionInit>>): WcBatch {
    const n = wcs.length;
    const { buffer, byteOffset } = allocate(n);
    const batch = new WcBatch(buffer, n, byteOffset);
    wcs.forEach((wc, i) => {
      batch.wrId[i] = BigInt.asUintN(64, BigInt(wc.wrId ?? 0));
      batch.status[i] = wc.status ?? 0;
      batch.opcode[i] = wc.opcode ?? 0;
      batch.byteLen[i] = wc.byteLen ?? 0;
      batch.imm[i] = wc.imm ?? 0;
      batch.qpNum[i] = wc.qpNum ?? 0;
      batch.srcQp[i] = wc.srcQp ?? 0;
      batch.flags[i] = wc.flags ?? (wc.imm !== undefined ? WC_FLAGS.WITH_IMM : 0);
      batch.vendorErr[i] = wc.vendorErr ?? 0;
      batch.slid[i] = wc.slid ?? 0;
      batch.sl[i] = wc.sl ?? 0;
      batch.dlidPathBits[i] = wc.dlidPathBits ?? 0;
    });
    return batch;
  }

  /** Concatenates batches into one (one allocation; a single batch is returned as is). */
  static concat(batches: ReadonlyArray<WcBatch>): WcBatch {
    if (batches.length === 1) return batches[0];
    let n = 0;
    for (const b of batches) n += b.length;
    const { buffer: out, byteOffset } = allocate(n);
    const dst = new Uint32Array(out, byteOffset, n * (WC_BYTES / 4));
    const dst8 = new Uint8Array(out, byteOffset, n * WC_BYTES);
    let at = 0;
    // In 32-bit words a batch of m is: wr_id at [0, 2m), column k at 2m + k*m;
    // in bytes, the narrow columns of width w start at m times their *_AT.
    // The reserved bytes stay zero.
    for (const b of batches) {
      const m = b.length;
      if (m === 0) continue;
      const src = new Uint32Array(b.buffer, b.byteOffset, m * (WC_BYTES / 4));
      const src8 = new Uint8Array(b.buffer, b.byteOffset, m * WC_BYTES);
      if (m >= 256) {
        // Large parts: bulk copies (each view costs more than a short loop).
        dst.set(src.subarray(0, 2 * m), 2 * at);
        for (let k = 0; k < 8; k++) dst.set(src.subarray(2 * m + k * m, 2 * m + (k + 1) * m), 2 * n + k * n + at);
        for (const [from, w] of NARROW) dst8.set(src8.subarray(from * m, from * m + w * m), from * n + w * at);
      } else {
        for (let i = 0, t = 2 * at; i < 2 * m; i++) dst[t + i] = src[i];
        for (let k = 0; k < 8; k++) {
          for (let i = 0, f = 2 * m + k * m, t = 2 * n + k * n + at; i < m; i++) dst[t + i] = src[f + i];
        }
        for (const [from, w] of NARROW) {
          for (let i = 0, f = from * m, t = from * n + w * at; i < w * m; i++) dst8[t + i] = src8[f + i];
        }
      }
      at += m;
    }
    return new WcBatch(out, n, byteOffset);
  }

  /** A sub-range `[start, end)` as a new batch (copies). */
  slice(start: number, end = this.length): WcBatch {
    const s = Math.max(0, Math.min(start, this.length));
    const e = Math.max(s, Math.min(end, this.length));
    const n = e - s;
    const { buffer, byteOffset } = allocate(n);
    const out = new WcBatch(buffer, n, byteOffset);
    out.wrId.set(this.wrId.subarray(s, e));
    out.status.set(this.status.subarray(s, e));
    out.opcode.set(this.opcode.subarray(s, e));
    out.byteLen.set(this.byteLen.subarray(s, e));
    out.imm.set(this.imm.subarray(s, e));
    out.qpNum.set(this.qpNum.subarray(s, e));
    out.srcQp.set(this.srcQp.subarray(s, e));
    out.flags.set(this.flags.subarray(s, e));
    out.vendorErr.set(this.vendorErr.subarray(s, e));
    out.slid.set(this.slid.subarray(s, e));
    out.sl.set(this.sl.subarray(s, e));
    out.dlidPathBits.set(this.dlidPathBits.subarray(s, e));
    return out;
  }

  /** Keeps the completions for which `keep(i)` is true (copies). */
  filter(keep: (index: number) => boolean): WcBatch {
    const picked: number[] = [];
    for (let i = 0; i < this.length; i++) if (keep(i)) picked.push(i);
    if (picked.length === this.length) return this;
    return WcBatch.concat(picked.map((i) => this.slice(i, i + 1)));
  }

  /** True when every completion succeeded. */
  allOk(): boolean {
    for (let i = 0; i < this.length; i++) if (this.status[i] !== 0) return false;
    return true;
  }

  /** Completion `i` as a plain object; `undefined` out of range. */
  at(i: number): WorkCompletion | undefined {
    if (i < 0) i += this.length;
    if (!(i >= 0 && i < this.length)) return undefined;
    const flags = this.flags[i];
    return {
      wrId: this.wrId[i],
      status: wcStatusName(this.status[i]),
      opcode: wcOpcodeName(this.opcode[i]),
      byteLen: this.byteLen[i],
      imm: flags & WC_FLAGS.WITH_IMM ? this.imm[i] : undefined,
      qpNum: this.qpNum[i],
      srcQp: this.srcQp[i],
      flags,
      vendorErr: this.vendorErr[i],
      slid: this.slid[i],
      sl: this.sl[i],
      dlidPathBits: this.dlidPathBits[i],
    };
  }

  /** Iterates the completions as plain objects. */
  *[Symbol.iterator](): IterableIterator<WorkCompletion> {
    for (let i = 0; i < this.length; i++) yield this.at(i)!;
  }

  /** All completions as plain objects. */
  toArray(): WorkCompletion[] {
    return [...this];
  }
}

/** @internal All of `buffer` as 32-bit words: the view the `...At(i)` readers read through. */
export function wordsOf(buffer: ArrayBuffer): Uint32Array {
  return new Uint32Array(buffer, 0, buffer.byteLength >>> 2);
}

/** Numeric fields accepted by {@link WcBatch.from}. */
export interface WorkCompletionInit {
  wrId: bigint | number;
  status: number;
  opcode: number;
  byteLen: number;
  imm: number;
  qpNum: number;
  srcQp: number;
  flags: number;
  vendorErr: number;
  /** 0-0xffff (the column is a `Uint16Array`). */
  slid: number;
  /** 0-15 (the column is a `Uint8Array`). */
  sl: number;
  /** 0-127 (the column is a `Uint8Array`). */
  dlidPathBits: number;
}

// Every empty batch shares one buffer, so it must be one JS cannot detach:
// views over a detached buffer cannot be made, and a consumer transferring
// it would break every later empty batch of every CQ. A WebAssembly
// memory's buffer is such a buffer (0 pages, never grown). Without
// WebAssembly (node --jitless) each empty batch gets a buffer of its own.
// The shared object itself is frozen, its column views made first, so no
// consumer can change what the others see (say, its length).
const EMPTY: WcBatch | undefined = (() => {
  const wasm = (globalThis as { WebAssembly?: { Memory: new (d: { initial: number }) => { buffer: ArrayBuffer } } }).WebAssembly;
  if (!wasm) return undefined;
  const empty = new WcBatch(new wasm.Memory({ initial: 0 }).buffer, 0);
  const columns = [empty.wrId, empty.wrIdWords, empty.status, empty.opcode, empty.byteLen, empty.imm, empty.qpNum, empty.srcQp, empty.flags, empty.vendorErr, empty.slid, empty.sl, empty.dlidPathBits];
  for (const c of columns) Object.freeze(c);
  Object.freeze((empty as unknown as { views: unknown[] }).views);
  Object.freeze(empty);
  return empty;
})();

/**
 * Fresh, zeroed room for `n` completions, in a buffer of its own. Not carved
 * from a shared slab (the addon's per-CQ slabs are what keeps the fast path
 * cheap): a batch made in JS may merge several CQs' completions, and a
 * shared slab would let its consumer read, rewrite or detach batches handed
 * to other consumers.
 */
function allocate(n: number): { buffer: ArrayBuffer; byteOffset: number } {
  if (n === 0) return { buffer: WcBatch.empty().buffer, byteOffset: 0 };
  return { buffer: new ArrayBuffer(n * WC_BYTES), byteOffset: 0 };
}
