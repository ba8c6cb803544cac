import type { TransportMr as Mr, TransportPd as Pd } from './transport';

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
  /** The largest size class taken so far: `reads + 1` of it are kept whatever `keepBytes` says. */
  private largest = 0;
  /** Buffers allocated and registered. */
  allocations = 0;

  /**
   * @param reads READs in flight at once: that many buffers and the one
   *   being delivered are kept even past `keepBytes`, so a steady stream of
   *   large messages registers nothing.
   */
  constructor(
    private readonly pd: Pd,
    private readonly reads = 4,
    private readonly keepBytes = 64 << 20,
  ) {}

  /** A buffer of at least `length` bytes. */
  take(length: number): Mr {
    const size = sizeClass(length);
    if (size > this.largest) this.largest = size;
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
    if (this.closed || this.freeBytes + size > Math.max(this.keepBytes, (this.reads + 1) * this.largest)) {
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
