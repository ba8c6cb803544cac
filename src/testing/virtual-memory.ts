import { ACCESS, AccessFlag } from '../core/constants';
import { refuseClosed } from '../core/refusals';
import { checkInt } from '../core/validate';

/**
 * Where a virtual fabric's regions live: keys and addresses handed out once
 * each, so no two regions of one virtual CM share a key or a byte of
 * address space (a stale rkey or an address past a region's end then
 * matches nothing, as on a device). Regions are page-aligned with a free
 * page between them.
 */
export class VirtualAddressSpace {
  private nextKey = 0x1000;
  private nextAddr = 0x7f0000000000n;

  /** @internal A new key (the same value serves as lkey and rkey). */
  key(): number {
    return this.nextKey++;
  }

  /** @internal The start of `length` new bytes. */
  place(length: number): bigint {
    const at = this.nextAddr;
    const pages = BigInt(Math.ceil(Math.max(length, 1) / 4096) + 1);
    this.nextAddr += pages * 4096n;
    return at;
  }
}

/** The access flag names, checked (a RangeError names an unknown one). */
function accessOf(options: { access?: readonly AccessFlag[] } | undefined): readonly AccessFlag[] {
  if (options !== undefined && (typeof options !== 'object' || options === null)) {
    throw new TypeError(`options must be an object like { access: ['LOCAL_WRITE'] }, got ${typeof options}`);
  }
  const access = options?.access ?? ['LOCAL_WRITE'];
  if (!Array.isArray(access)) throw new TypeError('access must be an array of flag names');
  for (const name of access) {
    if (!(name in ACCESS)) throw new RangeError(`unknown access flag ${String(name)}; expected ${Object.keys(ACCESS).join(', ')}`);
  }
  if ((access.includes('REMOTE_WRITE') || access.includes('REMOTE_ATOMIC')) && !access.includes('LOCAL_WRITE')) {
    throw new RangeError('REMOTE_WRITE and REMOTE_ATOMIC need LOCAL_WRITE too (as ibv_reg_mr requires)');
  }
  return [...access];
}

/**
 * A registered memory region in virtual time, shaped like the native `Mr`:
 * its bytes (`buffer`), the address and keys a peer's RDMA READ names, its
 * access flags. The virtual data path checks work requests against it as a
 * device does: a closed region, one of another PD, a key that names none or
 * a range past its end fails the work request with a protection error.
 */
export class VirtualMr {
  /** The region's bytes (a view: what the data path reads and writes). */
  readonly buffer: Buffer;
  /** Where the region starts, as a peer addresses it. */
  readonly addr: bigint;
  /** Local key (this side's scatter/gather entries). */
  readonly lkey: number;
  /** Remote key (a peer's RDMA READ of this region). */
  readonly rkey: number;
  /** The region's size in bytes. */
  readonly length: number;
  /** The access flags it was registered with. */
  readonly access: readonly AccessFlag[];
  private isClosed = false;

  /** @internal */
  constructor(
    readonly pd: VirtualPd,
    buffer: Buffer,
    access: readonly AccessFlag[],
    space: VirtualAddressSpace,
  ) {
    this.buffer = buffer;
    this.length = buffer.length;
    this.access = access;
    this.lkey = this.rkey = space.key();
    this.addr = space.place(buffer.length);
  }

  /** True once deregistered. */
  get closed(): boolean {
    return this.isClosed;
  }

  /** The address of byte `offset`, for a peer's `remote.addr`. */
  remoteAddr(offset = 0): bigint {
    return this.addr + BigInt(offset);
  }

  /** Deregisters the region: its keys match nothing from now on. Idempotent. */
  close(): void {
    if (this.isClosed) return;
    this.isClosed = true;
    this.pd.forget(this);
  }

  /** @internal Whether `length` bytes at `addr` lie inside the region. */
  covers(addr: bigint, length: number): boolean {
    return addr >= this.addr && addr + BigInt(length) <= this.addr + BigInt(this.length);
  }
}

/**
 * A protection domain in virtual time, shaped like the native `Pd`:
 * `allocMemory` and `registerMemory` give {@link VirtualMr}s whose bytes the
 * virtual data path moves. A connection of the virtual CM makes one for its
 * resources (`resources.pd`) and closes it, and its regions, with them.
 */
export class VirtualPd {
  private readonly regions = new Set<VirtualMr>();
  private isClosed = false;

  /** @param space where its regions' keys and addresses come from (a virtual CM shares one among its PDs). */
  constructor(private readonly space: VirtualAddressSpace = new VirtualAddressSpace()) {}

  /** True once closed. */
  get closed(): boolean {
    return this.isClosed;
  }

  /** Regions registered on it and not closed. */
  get openRegions(): number {
    return this.regions.size;
  }

  /**
   * `size` zeroed bytes, registered.
   * @param size an integer from 1 to 2^31.
   * @param options `access`: flag names, default `['LOCAL_WRITE']`.
   * @throws TypeError / RangeError for bad input; EBADF once closed.
   */
  allocMemory(size: number, options?: { access?: readonly AccessFlag[] }): VirtualMr {
    refuseClosed('protection domain', 'allocMemory', this.isClosed);
    return this.add(Buffer.alloc(checkInt(size, 'size', 1, 2 ** 31)), accessOf(options));
  }

  /**
   * Registers `buffer`'s memory: the region views it, so what the data path
   * writes there shows in `buffer` and what a peer READs is what it holds then.
   * @param options `access`: flag names, default `['LOCAL_WRITE']`.
   * @throws TypeError for something that is not memory, RangeError for an empty one; EBADF once closed.
   */
  registerMemory(buffer: ArrayBufferView | ArrayBuffer, options?: { access?: readonly AccessFlag[] }): VirtualMr {
    refuseClosed('protection domain', 'registerMemory', this.isClosed);
    let view: Buffer;
    if (ArrayBuffer.isView(buffer)) view = Buffer.from(buffer.buffer, buffer.byteOffset, buffer.byteLength);
    else if (buffer instanceof ArrayBuffer) view = Buffer.from(buffer);
    else throw new TypeError('buffer must be a Buffer, typed array, DataView or ArrayBuffer');
    if (view.length === 0) throw new RangeError('cannot register an empty buffer');
    return this.add(view, accessOf(options));
  }

  /** Closes the PD and every region still registered on it. Idempotent. */
  close(): void {
    if (this.isClosed) return;
    for (const mr of [...this.regions]) mr.close();
    this.isClosed = true;
  }

  /** @internal The open region of this PD that `rkey` names, if `length` bytes at `addr` lie in it and it allows `access`. */
  remote(rkey: number, addr: bigint, length: number, access: AccessFlag): VirtualMr | undefined {
    for (const mr of this.regions) {
      if (mr.rkey === rkey) return mr.access.includes(access) && mr.covers(addr, length) ? mr : undefined;
    }
    return undefined;
  }

  /** @internal A region was closed. */
  forget(mr: VirtualMr): void {
    this.regions.delete(mr);
  }

  private add(buffer: Buffer, access: readonly AccessFlag[]): VirtualMr {
    const mr = new VirtualMr(this, buffer, access, this.space);
    this.regions.add(mr);
    return mr;
  }
}
