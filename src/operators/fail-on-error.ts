import { MonoTypeOperatorFunction, Observable } from 'rxjs';
import { WorkCompletionError } from '../core/errors';
import type { WcBatch } from '../core/wc-batch';
import { operate } from './operate';

/**
 * Turns the first failed work completion of a stream of `WcBatch`es (any
 * Observable of them: a CQ's `completions$`, `drainCq()`'s output, a
 * `merge()` of several CQs' `completions$`) into an error: a batch whose
 * completions all succeeded passes through untouched; in a batch with a
 * failure, the completions before the first failed one are emitted (as one
 * batch, if there are any), then the result errors with a
 * `WorkCompletionError` for the failed one (its status named as
 * `ibv_wc_status_str()` names it).
 *
 * ```
 * source:   --a--b--------|        b = [ok, ok, REM_ACCESS_ERR, ok]
 * result:   --a--(c#)              c = [ok, ok];  # = WorkCompletionError
 * ```
 *
 * Completions after the failed one are not emitted (with a QP in the error
 * state they are flushes, `WR_FLUSH_ERR`); use `splitErrors()` to keep them.
 *
 * ## Example
 * ```ts
 * cq.completions$.pipe(failOnError()).subscribe({
 *   next: (batch) => settle(batch),
 *   error: (err) => { if (err instanceof WorkCompletionError) log(err.status, err.completion.wrId); },
 * });
 * ```
 *
 * @return An operator that errors on the first failed completion.
 * @see {@link splitErrors}
 */
export function failOnError(): MonoTypeOperatorFunction<WcBatch> {
  return (source) =>
    new Observable<WcBatch>((subscriber) =>
      operate(source, subscriber, {
        next(batch) {
          let failed = -1;
          for (let i = 0; i < batch.length; i++) {
            if (batch.status[i] !== 0) {
              failed = i;
              break;
            }
          }
          if (failed < 0) {
            subscriber.next(batch);
            return;
          }
          if (failed > 0) subscriber.next(batch.slice(0, failed));
          subscriber.error(WorkCompletionError.fromBatch(batch, failed));
        },
      }),
    );
}
