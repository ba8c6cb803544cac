import { Observable, Subscriber, Subscription, TeardownLogic } from 'rxjs';
import type { Takeable } from '../core/types';
import { BufferOverflowError } from '../core/errors';
import { BufferOptions, ResolvedBufferOptions, resolveBufferOptions } from './buffer-options';
import { RingQueue } from './ring-queue';
import { checkSpinUs, spinTake } from './spin-take';

/**
 * What a hot source needs of the native side behind it. The source calls
 * `start()`/`stop()` only on transitions (never twice in a row). Both can be
 * re-entrant: `stop()` from inside `start()` or `push()` when what was pushed
 * synchronously filled the buffer (pause) or a subscriber left from its
 * callback, `start()` from inside a subscriber's or taker's code.
 */
export interface HotSourceDriver<T> {
  /** Begin reading (watch the fd, arm): there is demand. Items arrive via `push()`. */
  start(): void;
  /** Stop reading and arming: no demand any more, paused, or terminated. */
  stop(): void;
  /** One synchronous, non-blocking native read for `tryTake()`; `undefined` if none. */
  pull(): T | undefined;
  /**
   * Optional: like `pull()`, but waits up to `spinUs` microseconds for an
   * item by busy-polling natively (a CQ polls in the addon), for
   * `take({ spinUs })`. Without it, `take()` spins on `pull()` from JS.
   */
  pullSpinning?(spinUs: number): T | undefined;
  /**
   * Optional: `item` is being handed to the push subscribers (live or
   * replayed from the buffer; not items taken by pull consumers). A channel
   * marks its events as owed an ack here.
   */
  delivered?(item: T): void;
}

/** Options of a {@link HotSource}: its bounded buffer. */
export type HotSourceOptions<T> = BufferOptions<T>;

type Terminal = { readonly kind: 'complete' } | { readonly kind: 'error'; readonly error: unknown };

interface Waiter<T> {
  resolve(result: IteratorResult<T, undefined>): void;
  reject(error: unknown): void;
}

/**
 * The core of every hot source (`channel.events$`, `cq.completions$`,
 * `context.asyncEvents$`): a multicast Observable over a native driver, with
 * a bounded buffer that push subscribers, `tryTake()` and async iterators
 * share so that every item goes to exactly one place.
 *
 * - An item pushed while there are push subscribers goes to all of them,
 *   synchronously. An item pushed during that delivery (re-entrancy) is
 *   delivered after the current one, in order.
 * - Otherwise it is buffered, and exactly one taker gets it: `tryTake()`, a
 *   parked async iterator / `take()`, or the next push subscriber, which
 *   first receives the buffered items in order, then live ones.
 * - Demand drives the driver: it runs while there is a push subscriber, an
 *   active async iterator, a waiting `take()` or a `retain()` hold, and is
 *   not paused or terminated. Without demand the native side reads nothing
 *   and events stay pending there, for a later subscriber or `tryTake()`.
 * - Terminal states are sticky, and neither loses what was already read:
 *   the buffered items stay takeable, in order, and the terminal
 *   notification comes after the last of them — to push subscribers, to
 *   `tryTake()` (which throws the error once the buffer is empty) and to
 *   iterators. A failed CQ's buffered completions carry the wr_ids the
 *   application needs to reclaim its buffers, so an error is never allowed
 *   to overtake them.
 *
 * Backpressure (`overflow`) only matters for pull consumers: push
 * subscribers are fed synchronously, so the buffer fills only while nobody
 * subscribes. With `'pause'` the driver is stopped above `highWaterMark` and
 * started again at `lowWaterMark`; items the native side had already handed
 * over are kept. Pause is bounded by CQ depth — the CQ holds the rest — so
 * gate posts with `credits()`.
 */
export class HotSource<T> extends Observable<T> implements Takeable<T>, AsyncIterable<T> {
  private readonly driver: HotSourceDriver<T>;
  private readonly options: ResolvedBufferOptions<T>;
  private readonly buffer = new RingQueue<T>();
  /** Copy-on-write, so a delivery loop can iterate a stable snapshot. */
  private subscribers: ReadonlyArray<Subscriber<T>> = [];
  /** Parked pull consumers (iterators, `take()`), FIFO. Non-empty only while the buffer is empty. */
  private readonly waiters = new Set<Waiter<T>>();
  /** Demand that is not a push subscriber: iterators, `take()`, `retain()`. */
  private holds = 0;
  private running = false;
  private paused = false;
  private flushing = false;
  private terminal: Terminal | undefined;

  /**
   * @param driver the native side (see {@link HotSourceDriver}).
   * @param options the bounded buffer: `highWaterMark` (1024), `lowWaterMark`
   *   (hwm / 2), `overflow` (`'pause'`), `onDropped`.
   * @throws RangeError for bad marks; TypeError for a bad strategy or a
   *   drop strategy without `onDropped`.
   */
  constructor(driver: HotSourceDriver<T>, options?: HotSourceOptions<T>) {
    // Observable calls this function with `this` bound to the source itself.
    super(function (this: Observable<T>, subscriber: Subscriber<T>) {
      return (this as HotSource<T>).attach(subscriber);
    });
    this.driver = driver;
    this.options = resolveBufferOptions(options, 'pause');
  }

  /** How many items are buffered: what `tryTake()` could take without polling. */
  get pending(): number {
    return this.buffer.length;
  }

  /** Whether the driver is started (reading natively). */
  get isRunning(): boolean {
    return this.running;
  }

  /** Whether the `'pause'` strategy has the driver stopped. */
  get isPaused(): boolean {
    return this.paused;
  }

  /** Whether there is at least one push subscriber. */
  get observed(): boolean {
    return this.openSubscribers() > 0;
  }

  /** `'complete'` or `'error'` once terminated, else `undefined`. */
  get terminated(): 'complete' | 'error' | undefined {
    return this.terminal?.kind;
  }

  // ---- driver side -------------------------------------------------------

  /** Driver: one item read natively. Ignored after a terminal state. */
  push(item: T): void {
    if (this.terminal) return;
    const hadSubscribers = this.subscribers.length > 0;
    if (this.openSubscribers() > 0) {
      if (!this.flushing && this.buffer.length === 0) {
        // Fast path: deliver straight to every subscriber.
        this.flushing = true;
        try {
          this.deliver(item);
        } finally {
          this.flushing = false;
        }
        if (this.buffer.length !== 0 || this.terminal) this.flush();
        return;
      }
      // Re-entrant push (or replay in progress): queue behind, in order.
      this.enqueue(item);
      if (!this.flushing) this.flush();
      return;
    }
    // The last subscriber closed before its teardown ran: demand may be gone.
    if (hadSubscribers) this.reconcile();
    const waiter = this.firstWaiter();
    if (waiter) {
      // The buffer is empty whenever a consumer is parked: hand over directly.
      this.waiters.delete(waiter);
      waiter.resolve({ value: item, done: false });
      return;
    }
    this.enqueue(item);
  }

  /**
   * Driver: the source failed (sticky). Stops the driver; buffered items
   * stay takeable and are delivered before the error.
   */
  error(err: unknown): void {
    this.terminate({ kind: 'error', error: err });
  }

  /** Driver: the source ended (sticky). Buffered items stay takeable. */
  complete(): void {
    this.terminate({ kind: 'complete' });
  }

  // ---- pull side ---------------------------------------------------------

  /**
   * Takes one item if one is available: from the buffer, else one
   * non-blocking native read (`driver.pull()`). Never blocks.
   * @returns the item, or `undefined` (none now, or completed and empty).
   * @throws the terminal error once the source has failed and its buffer is empty.
   */
  tryTake(): T | undefined {
    if (this.buffer.length > 0) {
      const item = this.buffer.shift() as T;
      this.maybeResume();
      return item;
    }
    const terminal = this.terminal;
    if (terminal?.kind === 'error') throw terminal.error;
    return terminal ? undefined : this.driver.pull();
  }

  /**
   * The hybrid poller: spins on `tryTake()` for up to `spinUs` microseconds,
   * then parks — starts the driver (arms) and waits for the next item.
   * @returns the item, or `undefined` when the source completed.
   * @throws (rejects with) the terminal error.
   */
  async take(options?: { spinUs?: number }): Promise<T | undefined> {
    const spun = this.spinTake(options?.spinUs ?? 0);
    if (spun !== undefined) return spun;
    this.hold(+1);
    try {
      const result = await this.nextResult();
      return result.done ? undefined : result.value;
    } finally {
      this.hold(-1);
    }
  }

  /** `take()`'s spin: in the driver when it can spin natively, else on `tryTake()`. */
  private spinTake(spinUs: number): T | undefined {
    const pullSpinning = this.driver.pullSpinning;
    if (!pullSpinning || spinUs === 0) return spinTake(this, spinUs);
    checkSpinUs(spinUs);
    const first = this.tryTake();
    if (first !== undefined || this.terminal) return first;
    return pullSpinning.call(this.driver, spinUs);
  }

  /**
   * Holds demand without a push subscriber: the driver runs and items are
   * buffered for `tryTake()` / iterators until the returned subscription is
   * unsubscribed. (`toTakeable()` is built on it.)
   */
  retain(): Subscription {
    this.hold(+1);
    return new Subscription(() => this.hold(-1));
  }

  /**
   * A demand-driven pull consumer for `for await`: it keeps the driver
   * started from its first `next()` until it is done or returned, and takes
   * from the same buffer as `tryTake()` (push subscribers get live items
   * first). A slow consumer is what `'pause'` protects: above the high mark
   * the driver stops, at the low mark it starts again; nothing is lost.
   */
  [Symbol.asyncIterator](): AsyncIterator<T, undefined> {
    let holding = false;
    let finished = false;
    let parked: Waiter<T> | undefined;
    const release = () => {
      finished = true;
      if (holding) {
        holding = false;
        this.hold(-1);
      }
    };
    const done: IteratorResult<T, undefined> = { value: undefined, done: true };
    return {
      next: () => {
        if (finished) return Promise.resolve(done);
        if (!holding) {
          holding = true;
          this.hold(+1);
        }
        return this.nextResult((w) => (parked = w)).then(
          (result) => {
            parked = undefined;
            if (result.done) release();
            return result;
          },
          (err: unknown) => {
            parked = undefined;
            release();
            throw err;
          },
        );
      },
      return: () => {
        release();
        if (parked && this.waiters.delete(parked)) parked.resolve(done);
        parked = undefined;
        return Promise.resolve(done);
      },
    };
  }

  // ---- internals ---------------------------------------------------------

  /** Enters the terminal state; what is buffered still goes out first. */
  private terminate(terminal: Terminal): void {
    if (this.terminal) return;
    this.terminal = terminal;
    this.flush(); // no-op while a delivery is in progress: that loop flushes and settles
    this.reconcile();
  }

  private attach(subscriber: Subscriber<T>): TeardownLogic {
    const terminal = this.terminal;
    if (terminal && this.buffer.length === 0) {
      if (terminal.kind === 'error') subscriber.error(terminal.error);
      else subscriber.complete();
      return;
    }
    this.subscribers = [...this.subscribers, subscriber];
    this.flush(); // replay the buffer to it first (then the terminal notification, if any)
    this.reconcile();
    return () => {
      this.subscribers = this.subscribers.filter((s) => s !== subscriber);
      this.reconcile();
    };
  }

  /** Delivers one item to the current subscribers (a stable snapshot). */
  private deliver(item: T): void {
    this.driver.delivered?.(item);
    const targets = this.subscribers;
    for (let i = 0; i < targets.length; i++) {
      const s = targets[i];
      if (!s.closed) s.next(item);
    }
  }

  /** Drains the buffer to push subscribers, then settles. Not re-entrant. */
  private flush(): void {
    if (this.flushing) return;
    this.flushing = true;
    try {
      while (this.buffer.length > 0 && this.openSubscribers() > 0) {
        this.deliver(this.buffer.shift() as T);
      }
    } finally {
      this.flushing = false;
    }
    this.settle();
  }

  /**
   * After items left the buffer or the state changed: hand buffered items to
   * parked consumers when no push subscriber wants them, resume a pause, and
   * deliver a terminal notification once it is due.
   */
  private settle(): void {
    if (this.openSubscribers() === 0) {
      for (let w = this.firstWaiter(); w && this.buffer.length > 0; w = this.firstWaiter()) {
        this.waiters.delete(w);
        w.resolve({ value: this.buffer.shift() as T, done: false });
      }
    }
    this.maybeResume();
    const terminal = this.terminal;
    // Buffered items go first: the terminal notification waits for the last.
    if (!terminal || this.buffer.length > 0) return;
    const subscribers = this.subscribers;
    const waiters = [...this.waiters];
    this.subscribers = [];
    this.waiters.clear();
    for (const s of subscribers) {
      if (terminal.kind === 'error') s.error(terminal.error);
      else s.complete();
    }
    for (const w of waiters) {
      if (terminal.kind === 'error') w.reject(terminal.error);
      else w.resolve({ value: undefined, done: true });
    }
  }

  /** Buffers one item, applying the overflow strategy when the buffer is full. */
  private enqueue(item: T): void {
    const { highWaterMark, overflow, onDropped } = this.options;
    if (this.buffer.length < highWaterMark) {
      this.buffer.push(item);
      return;
    }
    switch (overflow) {
      case 'pause':
        this.buffer.push(item); // never lose: the driver stops, the CQ holds the rest
        if (!this.paused) {
          this.paused = true;
          this.reconcile();
        }
        return;
      case 'error':
        this.buffer.push(item); // read already: it stays takeable, ahead of the error
        this.error(new BufferOverflowError(highWaterMark));
        return;
      case 'dropNewest':
        onDropped!(item);
        return;
      case 'dropOldest': {
        const oldest = this.buffer.shift() as T;
        this.buffer.push(item);
        onDropped!(oldest);
        return;
      }
    }
  }

  private maybeResume(): void {
    if (this.paused && this.buffer.length <= this.options.lowWaterMark) {
      this.paused = false;
      this.reconcile();
    }
  }

  private hold(delta: 1 | -1): void {
    this.holds += delta;
    this.reconcile();
  }

  /** Starts or stops the driver so that it runs exactly while it should. */
  private reconcile(): void {
    const want = !this.terminal && !this.paused && (this.openSubscribers() > 0 || this.holds > 0);
    if (want === this.running) return;
    this.running = want;
    try {
      if (want) this.driver.start();
      else this.driver.stop();
    } catch (err) {
      // A driver that cannot start or stop has failed: that is terminal.
      this.running = false;
      this.error(err);
    }
  }

  /**
   * The number of subscribers still open. A subscriber can close before its
   * teardown is registered — e.g. `take(1)` during its own synchronous
   * replay inside `subscribe()` — and must not swallow items meanwhile.
   */
  private openSubscribers(): number {
    const subs = this.subscribers;
    for (let i = 0; i < subs.length; i++) {
      if (subs[i].closed) {
        this.subscribers = subs.filter((s) => !s.closed);
        break;
      }
    }
    return this.subscribers.length;
  }

  private firstWaiter(): Waiter<T> | undefined {
    return this.waiters.size > 0 ? this.waiters.values().next().value : undefined;
  }

  /** The next item for a pull consumer: buffered, terminal, or parked until pushed. */
  private nextResult(onPark?: (w: Waiter<T>) => void): Promise<IteratorResult<T, undefined>> {
    if (this.buffer.length > 0) {
      const value = this.buffer.shift() as T;
      this.maybeResume();
      return Promise.resolve({ value, done: false });
    }
    const terminal = this.terminal;
    if (terminal?.kind === 'error') return Promise.reject(terminal.error);
    if (terminal) return Promise.resolve({ value: undefined, done: true });
    return new Promise((resolve, reject) => {
      const waiter: Waiter<T> = { resolve, reject };
      this.waiters.add(waiter);
      onPark?.(waiter);
    });
  }
}
