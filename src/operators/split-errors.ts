import { MonoTypeOperatorFunction, Observable, Observer } from 'rxjs';
import type { WcBatch } from '../core/wc-batch';
import { operate } from './operate';

/** Where {@link splitErrors} sends failed completions: a function, or an Observer / Subject. */
export type WcErrorSink = ((failed: WcBatch) => void) | Partial<Observer<WcBatch>>;

/**
 * Splits a stream of `WcBatch`es in two — any Observable of them: one CQ's
 * `completions$`, `drainCq()`'s output, a `merge()` of several CQs'
 * `completions$` — the successful completions go on downstream, the failed
 * ones — as one `WcBatch` per input batch that had any — go to a side sink,
 * synchronously and in order, at the moment they are read.
 *
 * ```
 * source:   --a-----b-----c--|     b = [ok1, ERR, ok2], c = [ERR]
 * result:   --a-----o--------|     o = [ok1, ok2]
 * errors:   --------e-----f--|     e = [ERR], f = [ERR]
 * ```
 *
 * Why a sink and not a `{ ok$, errors$ }` pair: two Observables over one
 * source must share a subscription, and a failed completion that arrives
 * before both are subscribed would be lost (and its wr_id with it). The sink
 * is given up front, so nothing can fall between the two. Hand it a Subject
 * to get an `errors$`:
 *
 * ## Example
 * ```ts
 * const errors$ = new Subject<WcBatch>();
 * errors$.subscribe((failed) => { for (const wc of failed) retry(wc.wrId); });
 * completions$.pipe(splitErrors(errors$)).subscribe((ok) => settle(ok));
 * // Several CQs at once: their batches, merged, are one stream of batches.
 * merge(sendCq.completions$, recvCq.completions$).pipe(splitErrors(errors$)).subscribe(settle);
 * ```
 *
 * Like `tap`: an Observer sink also gets `complete`/`error` when the source
 * ends (a function sink gets only the failed batches). An empty `ok` batch
 * is not emitted. A sink that throws errors the result.
 *
 * @param errors receives the failed completions of each batch.
 * @return An operator that emits the successful completions only.
 * @see {@link failOnError}
 */
export function splitErrors(errors: WcErrorSink): MonoTypeOperatorFunction<WcBatch> {
  const sink: Partial<Observer<WcBatch>> = typeof errors === 'function' ? { next: errors } : errors;
  if (!sink || typeof sink !== 'object') throw new TypeError('splitErrors: errors must be a function or an Observer');
  return (source) =>
    new Observable<WcBatch>((subscriber) =>
      operate(source, subscriber, {
        next(batch) {
          if (batch.allOk()) {
            if (batch.length > 0) subscriber.next(batch);
            return;
          }
          const ok = batch.filter((i) => batch.status[i] === 0);
          const failed = batch.filter((i) => batch.status[i] !== 0);
          sink.next?.(failed); // a sink that throws errors the result; the good ones are not passed on
          if (ok.length > 0) subscriber.next(ok);
        },
        error: (err) => sink.error?.(err),
        complete: () => sink.complete?.(),
      }),
    );
}
