import { HotSource, HotSourceOptions } from '../observables/hot-source';
import { RingQueue } from '../observables/ring-queue';

/**
 * A hot source of items that hold resources until released (messages in
 * pooled receive buffers): while it has no demand, or its `'pause'`
 * strategy has stopped it, arriving items wait here, unreleased, so the
 * peer's credits are not returned and it slows down; nothing is read
 * natively on its behalf, since the layer reads every completion anyway.
 */
export class LentSource<T> {
  readonly source: HotSource<T>;
  private readonly waiting = new RingQueue<T>();
  private running = false;

  /**
   * @param options the source's buffer options.
   * @param overflowed called once when the source failed on its own: its
   *   `'error'` strategy overflowed. It takes nothing more after that.
   */
  constructor(
    options: HotSourceOptions<T> | undefined,
    private readonly overflowed: () => void,
  ) {
    this.source = new HotSource<T>(
      {
        start: () => {
          this.running = true;
          while (this.running && this.waiting.length > 0) this.push(this.waiting.shift() as T);
        },
        stop: () => {
          this.running = false;
        },
        pull: () => (this.waiting.length > 0 ? (this.waiting.shift() as T) : undefined),
      },
      options,
    );
  }

  /** Items that arrived and wait for demand. */
  get queued(): number {
    return this.waiting.length;
  }

  /** One item arrived. */
  deliver(item: T): void {
    if (this.running && this.waiting.length === 0) this.push(item);
    else this.waiting.push(item);
  }

  /** Takes every waiting item (to release them when the layer ends). */
  drain(): T[] {
    const out: T[] = [];
    while (this.waiting.length > 0) out.push(this.waiting.shift() as T);
    return out;
  }

  private push(item: T): void {
    const before = this.source.terminated;
    this.source.push(item);
    // Only an overflow fails the source from inside push(); the layer ends it otherwise.
    if (before === undefined && this.source.terminated === 'error') this.overflowed();
  }
}
