import type { Observable, Subscriber, Subscription } from 'rxjs';

/**
 * What an operator does with its source's notifications; whatever it
 * leaves out passes through unchanged.
 * @internal
 */
export interface OperateHooks<T> {
  /** Handles one value; what it throws errors the result. */
  next(value: T): void;
  /**
   * Runs when the source errors, before the error is passed on (to hand
   * over or release what the operator holds). What it throws is dropped:
   * the source's error is the one to report.
   */
  error?(err: unknown): void;
  /**
   * Runs when the source completes, before completion is passed on. What
   * it throws errors the result instead.
   */
  complete?(): void;
  /**
   * Decides when the end (error or completion) reaches the subscriber:
   * called with the step that delivers it, for an operator that still has
   * items to deliver on a scheduler. Without it the end goes at once.
   */
  end?(deliver: () => void): void;
}

/**
 * Subscribes an operator's `subscriber` to `source` through `hooks`: the
 * one place the operators pass errors and completion on, in the manner of
 * RxJS's own operators (whose helper for this is internal to RxJS).
 * @return The subscription to the source (the operator's teardown
 *   unsubscribes it).
 * @internal
 */
export function operate<T, R>(source: Observable<T>, subscriber: Subscriber<R>, hooks: OperateHooks<T>): Subscription {
  const end = (deliver: () => void) => (hooks.end ? hooks.end(deliver) : deliver());
  return source.subscribe({
    next(value) {
      try {
        hooks.next(value);
      } catch (err) {
        subscriber.error(err);
      }
    },
    error(err: unknown) {
      try {
        hooks.error?.(err);
      } catch {
        // The source's error is the one to report.
      }
      end(() => subscriber.error(err));
    },
    complete() {
      try {
        hooks.complete?.();
      } catch (err) {
        subscriber.error(err);
        return;
      }
      end(() => subscriber.complete());
    },
  });
}
