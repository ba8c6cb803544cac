/**
 * A growable FIFO ring buffer: O(1) push and shift without `Array#shift`'s
 * O(n) copy, which matters on the hot path where every buffered completion
 * passes through here. Internal to the hot sources.
 */
export class RingQueue<T> {
  private items: (T | undefined)[];
  private head = 0;
  private size = 0;

  constructor(initialCapacity = 16) {
    let capacity = 1;
    while (capacity < initialCapacity) capacity <<= 1;
    this.items = new Array(capacity);
  }

  /** Number of queued items. */
  get length(): number {
    return this.size;
  }

  /** Appends one item. */
  push(item: T): void {
    if (this.size === this.items.length) this.grow();
    this.items[(this.head + this.size) & (this.items.length - 1)] = item;
    this.size++;
  }

  /** Removes and returns the oldest item (`undefined` when empty). */
  shift(): T | undefined {
    if (this.size === 0) return undefined;
    const item = this.items[this.head];
    this.items[this.head] = undefined; // drop the reference for the GC
    this.head = (this.head + 1) & (this.items.length - 1);
    this.size--;
    return item;
  }

  /** The oldest item, left in place (`undefined` when empty). */
  peek(): T | undefined {
    return this.size === 0 ? undefined : this.items[this.head];
  }

  /** Removes `item` wherever it is (O(n): for rare withdrawals); whether it was there. */
  remove(item: T): boolean {
    const all = this.toArray();
    const at = all.indexOf(item);
    if (at < 0) return false;
    all.splice(at, 1);
    this.clear();
    for (const x of all) this.push(x);
    return true;
  }

  /** Removes every item and returns them oldest first. */
  drain(): T[] {
    const out: T[] = [];
    while (this.size > 0) out.push(this.shift() as T);
    return out;
  }

  /** The items, oldest first, without removing them. */
  toArray(): T[] {
    const out: T[] = [];
    for (let i = 0; i < this.size; i++) out.push(this.items[(this.head + i) & (this.items.length - 1)] as T);
    return out;
  }

  /** Removes every item. */
  clear(): void {
    this.items = new Array(16);
    this.head = 0;
    this.size = 0;
  }

  private grow(): void {
    const next = new Array<T | undefined>(this.items.length * 2);
    for (let i = 0; i < this.size; i++) next[i] = this.items[(this.head + i) & (this.items.length - 1)];
    this.items = next;
    this.head = 0;
  }
}
