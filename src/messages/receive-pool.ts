import type { Mr } from '../verbs/mr';
import type { Pd } from '../verbs/pd';

/**
 * Registered buffers that rendezvous READs land in, by power-of-two size
 * class from 64 KiB, reused: steady state allocates and registers nothing.
 * At most `keepBytes` of free buffers are kept; a buffer handed back
 * beyond that is deregistered.
 */
export class ReceivePool {
  private readonly free = new Map<number, Mr[]>();
  private freeBytes = 0;
  private closed = false;
  /** Buffers allocated and registered. */
  allocations = 0;

  constructor(
    private readonly pd: Pd,
    private readonly keepBytes = 64 << 20,
  ) {}

  /** A buffer of at least `length` bytes. */
  take(length: number): Mr {
    const size = sizeClass(length);
    const list = this.free.get(size);
    const mr = list?.pop();
    if (mr) {
      this.freeBytes -= size;
      return mr;
    }
    this.allocations++;
    return this.pd.allocMemory(size, { access: ['LOCAL_WRITE'] });
  }

  /** A buffer from {@link ReceivePool.take} is free again (deregistered once the pool is closed). */
  give(mr: Mr): void {
    if (mr.closed) return;
    const size = mr.length;
    if (this.closed || this.freeBytes + size > this.keepBytes) {
      mr.close();
      return;
    }
    let list = this.free.get(size);
    if (!list) this.free.set(size, (list = []));
    list.push(mr);
    this.freeBytes += size;
  }

  /** Buffers free now (taken and given back). */
  get idle(): number {
    let n = 0;
    for (const list of this.free.values()) n += list.length;
    return n;
  }

  /** Deregisters every free buffer, and every one given back later. */
  close(): void {
    this.closed = true;
    for (const list of this.free.values()) for (const mr of list) mr.close();
    this.free.clear();
    this.freeBytes = 0;
  }
}

function sizeClass(length: number): number {
  let size = 64 << 10;
  while (size < length) size *= 2;
  return size;
}
