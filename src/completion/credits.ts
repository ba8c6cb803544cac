import { Observable, Subscription } from 'rxjs';
import { checkInt } from '../core/validate';
import type { WcBatch } from '../core/wc-batch';
import { CountingCompletion } from './counting-completion';

/** Options of {@link credits}. */
export interface CreditsOptions {
  /** How many work requests may be in flight: usually the CQ depth (`cq.cqe`). Integer >= 1. */
  capacity: number;
  /**
   * Completions that return credits. Subscribed at once; unsubscribed by
   * `close()`. Each item returns `weigh(item)` credits.
   */
  release$?: Observable<WcBatch | number>;
  /**
   * Credits an item of `release$` returns: default `batch.length` for a
   * `WcBatch` (one per completion) and the number itself for a number. With
   * unsignaled sends, weigh a completion by the WRs it retires.
   */
  weigh?: (item: WcBatch | number) => number;
}

/**
 * Credits: a {@link CountingCompletion} whose count is the number of work
 * requests that may still be posted. Take one before each post
 * (`tryWaitForCompletion()`, or `tryAcquire(n)` for a chain of n WRs); each
 * completion returns one. In-flight WRs then never exceed `capacity`, so a
 * CQ of that depth cannot overrun — the bound that makes a hot source's
 * `'pause'` strategy safe. Create it with {@link credits}.
 */
export class Credits extends CountingCompletion {
  /** The most credits there can be. */
  readonly capacity: number;
  private readonly subscription = new Subscription();

  /** @param capacity the initial (and maximum) number of credits. */
  constructor(capacity: number) {
    super(checkInt(capacity, 'credits: capacity', 1));
    this.capacity = capacity;
  }

  /** Credits that can be taken now. */
  get available(): number {
    return this.count;
  }

  /** Work requests in flight: taken and not yet returned. */
  get inFlight(): number {
    return this.capacity - this.count;
  }

  /**
   * Takes `n` credits at once, or none: true if all were taken. For posting
   * a chain of `n` work requests with one `ibv_post_send`.
   */
  tryAcquire(n = 1): boolean {
    checkInt(n, 'tryAcquire: n', 1);
    if (this.count < n) return false;
    for (let i = 0; i < n; i++) this.tryWaitForCompletion();
    return true;
  }

  /**
   * Returns `n` credits (waking up to `n` waiters).
   * @throws RangeError when that would exceed `capacity`: a completion came
   *   back for a work request that was posted without a credit.
   */
  release(n = 1): void {
    checkInt(n, 'release: n', 0);
    if (this.count + n > this.capacity) {
      throw new RangeError(
        `credits: releasing ${n} would make ${this.count + n} > capacity ${this.capacity} (a WR was posted without a credit)`,
      );
    }
    for (let i = 0; i < n; i++) this.complete();
  }

  /** Adds a subscription that `close()` ends (used by {@link credits} for `release$`). */
  add(subscription: Subscription): void {
    this.subscription.add(subscription);
  }

  /** Stops listening to `release$`. Idempotent. */
  close(): void {
    this.subscription.unsubscribe();
  }
}

/**
 * Builds {@link Credits} of `capacity` that `release$` refills: the cure for
 * CQ overrun. Post only when a credit can be taken; every completion gives
 * one back.
 *
 * ## Example
 * ```ts
 * const completions$ = cq.completions$.pipe(share());
 * const credit = credits({ capacity: cq.cqe, release$: completions$ });
 * function pump() {
 *   while (queue.length && credit.tryWaitForCompletion()) qp.postSend(queue.shift()!);
 * }
 * completions$.subscribe(pump);  // subscribed after credits: credits are returned first
 * ```
 *
 * A `release$` error or an over-release (see `Credits.release`) is thrown
 * as RxJS reports unhandled errors: it is a bug in the caller's accounting.
 *
 * @param options `capacity`, `release$`, `weigh`.
 */
export function credits(options: CreditsOptions): Credits {
  const { capacity, release$, weigh = defaultWeigh } = options;
  const result = new Credits(capacity);
  if (release$) result.add(release$.subscribe((item) => result.release(weigh(item))));
  return result;
}

function defaultWeigh(item: WcBatch | number): number {
  return typeof item === 'number' ? item : item.length;
}
