import { ThreadBound } from '../core/thread-bound';
import type { NativeMr } from '../native/binding';
import { AccessFlag, accessFlagNames } from '../core/constants';
import type { Pd } from './pd';

/**
 * A registered memory region (`ibv_mr`): the buffer a device may read and
 * write. It holds the memory until closed, whatever happens to the buffer's
 * JS objects; closing revokes its keys at once (later accesses complete with
 * protection errors). From {@link Pd.registerMemory} or {@link Pd.allocMemory};
 * see the README's "Registered memory" for what a detached buffer does.
 */
export class Mr extends ThreadBound {
  /** @internal */
  readonly native: NativeMr;
  /** The registered memory (a view: empty once its ArrayBuffer was detached). */
  readonly buffer: Buffer;
  /** The PD it belongs to. */
  readonly pd: Pd;
  /** Local key, for this side's scatter/gather entries. */
  readonly lkey: number;
  /** Remote key, for a peer's RDMA READ/WRITE into this region. */
  readonly rkey: number;
  /** The region's start address, as a peer addresses it. */
  readonly addr: bigint;
  /** The region's size in bytes. */
  readonly length: number;
  /** The access flags it was registered with, by name. */
  readonly access: readonly AccessFlag[];
  // The start address as a number where every byte's address is a safe
  // integer (user-space addresses are): posts then pack sg entries without
  // making a BigInt.
  private readonly addrNumber: number | undefined;

  /** @internal */
  constructor(native: NativeMr, pd: Pd, buffer: Buffer) {
    super();
    this.native = native;
    this.pd = pd;
    this.buffer = buffer;
    this.lkey = native.lkey;
    this.rkey = native.rkey;
    this.addr = native.addr;
    this.length = native.length;
    const start = Number(this.addr);
    this.addrNumber = Number.isSafeInteger(start + this.length) ? start : undefined;
    this.access = accessFlagNames(native.access);
  }

  // Kept here, not asked of the addon: every posted sg entry checks it, and
  // a call into the addon costs more than the rest of that check. Only
  // close() deregisters (the PD and context close their MRs through it).
  private deregistered = false;

  /** True once deregistered. */
  get closed(): boolean {
    return this.deregistered;
  }

  /** Deregisters the region (`ibv_dereg_mr`); idempotent. */
  close(): void {
    if (this.deregistered) return;
    this.native.close();
    this.deregistered = true;
    this.pd.forget(this);
  }

  /** @internal The address of byte `offset`, as a post packs it (a number where it is a safe integer). */
  addressOf(offset: number): bigint | number {
    return this.addrNumber === undefined ? this.addr + BigInt(offset) : this.addrNumber + offset;
  }

  /** The remote address of byte `offset` in this region (for a peer's `remote.addr`). */
  remoteAddr(offset = 0): bigint {
    return this.addr + BigInt(offset);
  }
}
