import { Observable } from 'rxjs';
import { checkInt } from '../core/validate';

/** `UINT_MAX`: the `done` value `completeAll()` sets, which no wait decrements. */
export const UINT_MAX = 0xffffffff;

interface Waiter {
  wake(): void;
}

/**
 * The Linux kernel's `struct completion`, 1:1, for a single-threaded event
 * loop: a counter `done` that `complete()` increments and waits decrement.
 *
 * | kernel                          | here                        |
 * |---------------------------------|-----------------------------|
 * | `complete(x)`                   | `complete()`                |
 * | `complete_all(x)`               | `completeAll()`             |
 * | `try_wait_for_completion(x)`    | `tryWaitForCompletion()`    |
 * | `wait_for_completion(x)`        | `waitForCompletion()`, `wait$` |
 * | `completion_done(x)`            | `completionDone()`          |
 * | `reinit_completion(x)`          | `reinit()`                  |
 *
 * One deliberate refinement: `complete()` hands its count straight to the
 * oldest waiter (the kernel wakes it and lets it decrement later, so a
 * concurrent try-waiter could steal the count). Waiters are served FIFO
 * and cannot be starved by `tryWaitForCompletion()` callers.
 *
 * ## Example
 * ```ts
 * const ready = new CountingCompletion();
 * source.subscribe(() => ready.complete());
 * if (!ready.tryWaitForCompletion()) await ready.waitForCompletion();
 * ```
 */
export class CountingCompletion {
  private done: number;
  /** FIFO; a Set so a cancelled `wait$` can leave in O(1). */
  private readonly waiters = new Set<Waiter>();

  /** @param initial the initial count (default 0; `UINT_MAX` means completed-all). */
  constructor(initial = 0) {
    this.done = checkInt(initial, 'initial', 0, UINT_MAX);
  }

  /** The current count (`UINT_MAX` after `completeAll()`). Not in the kernel API; for diagnostics. */
  get count(): number {
    return this.done;
  }

  /** How many are parked in `waitForCompletion()` / `wait$`. */
  get waiting(): number {
    return this.waiters.size;
  }

  /** `complete()`: done++ (unless completed-all) and wakes one waiter, which consumes it. */
  complete(): void {
    if (this.done !== UINT_MAX) this.done++;
    this.wakeOne();
  }

  /**
   * `complete_all()`: sets done to `UINT_MAX` and wakes every waiter. Sticky:
   * every later try/wait succeeds without decrementing, until `reinit()`.
   */
  completeAll(): void {
    this.done = UINT_MAX;
    while (this.waiters.size > 0) this.wakeOne();
  }

  /**
   * `try_wait_for_completion()`: if done > 0, consumes one (unless
   * completed-all) and returns true; else returns false. Never blocks.
   */
  tryWaitForCompletion(): boolean {
    if (this.done === 0) return false;
    if (this.done !== UINT_MAX) this.done--;
    return true;
  }

  /** `completion_done()`: true if a try would succeed now. Consumes nothing. */
  completionDone(): boolean {
    return this.done !== 0;
  }

  /** `reinit_completion()`: done = 0 (undoes `completeAll()`); waiters keep waiting. */
  reinit(): void {
    this.done = 0;
  }

  /** `wait_for_completion()`: resolves once one is consumed for this caller (FIFO). */
  waitForCompletion(): Promise<void> {
    if (this.tryWaitForCompletion()) return Promise.resolve();
    return new Promise<void>((resolve) => this.waiters.add({ wake: resolve }));
  }

  /**
   * `wait_for_completion()` as an Observable: each subscription waits for
   * (and consumes) one, then emits once and completes — synchronously, at
   * the `complete()` that served it. Unsubscribing before that cancels the
   * wait without consuming anything, so `wait$.pipe(timeout(ms))` is
   * `wait_for_completion_timeout()`.
   */
  readonly wait$: Observable<void> = new Observable<void>((subscriber) => {
    if (this.tryWaitForCompletion()) {
      subscriber.next();
      subscriber.complete();
      return;
    }
    const waiter: Waiter = {
      wake: () => {
        subscriber.next();
        subscriber.complete();
      },
    };
    this.waiters.add(waiter);
    return () => this.waiters.delete(waiter);
  });

  /** Consumes one count for the oldest waiter and wakes it. */
  private wakeOne(): void {
    if (this.done === 0 || this.waiters.size === 0) return;
    const waiter = this.waiters.values().next().value as Waiter;
    this.waiters.delete(waiter);
    if (this.done !== UINT_MAX) this.done--;
    waiter.wake();
  }
}
