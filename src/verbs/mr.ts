import type { NativeMr } from '../native/binding';
import { ACCESS, AccessFlag } from '../core/constants';
import type { Pd } from './pd';

/**
 * A registered memory region (`ibv_mr`): the buffer a device may read and
 * write. It holds the memory until closed, whatever happens to the buffer's
 * JS objects; closing revokes its keys at once (later accesses complete with
 * protection errors). From {@link Pd.registerMemory} or {@link Pd.allocMemory};
 * see the README's "Registered memory" for what a detached buffer does.
 */
export class Mr {
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

  /** @internal */
  constructor(native: NativeMr, pd: Pd, buffer: Buffer) {
    this.native = native;
    this.pd = pd;
    this.buffer = buffer;
    this.lkey = native.lkey;
    this.rkey = native.rkey;
    this.addr = native.addr;
    this.length = native.length;
    this.access = (Object.keys(ACCESS) as AccessFlag[]).filter((k) => native.access & ACCESS[k]);
  }

  /** True once deregistered. */
  get closed(): boolean {
    return this.native.closed;
  }

  /** Deregisters the region (`ibv_dereg_mr`); idempotent. */
  close(): void {
    if (this.native.closed) return;
    this.native.close();
    this.pd.forget(this);
  }

  /** The remote address of byte `offset` in this region (for a peer's `remote.addr`). */
  remoteAddr(offset = 0): bigint {
    return this.addr + BigInt(offset);
  }
}
