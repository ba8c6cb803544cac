import { asapScheduler, Observable, OperatorFunction, SchedulerLike, Subscription } from 'rxjs';
import { checkFinite, checkInt } from '../core/validate';
import { WcBatch } from '../core/wc-batch';
import { operate } from './operate';

/** Options of {@link batchCompletions}. */
export interface BatchCompletionsOptions {
  /** Emit as soon as this many completions accumulated (integer >= 1, default Infinity). Output batches never exceed it. */
  maxSize?: number;
  /** Extra time to wait for more before emitting, in scheduler time (ms; default 0: none). */
  maxWait?: number;
  /** Where the flush is scheduled (default `asapScheduler`). */
  scheduler?: SchedulerLike;
}

/**
 * Natural batching: merges the `WcBatch`es that arrive within one wakeup
 * into one, and emits it when that wakeup is over — it never adds latency
 * unless `maxWait` asks for it.
 *
 * ```
 * source:   --(ab)--c--|       a, b, c: WcBatch
 * result:   --x-----y--|       x = a+b (same wakeup), y = c
 *
 * with maxWait: 3 (frames): gathers for 3 frames after the first
 * source:   -a-b----c---|
 * result:   ----x------y|      x = a+b, y = c
 * ```
 *
 * The first completion of a batch schedules a flush `maxWait` later on the
 * scheduler. The default `asapScheduler` with delay 0 runs it at the end of
 * the current macrotask — on a native source, the end of the uv callback
 * that delivered the events, after every event of that wakeup was drained;
 * under `TestScheduler.run` the same frame, so marble tests are
 * deterministic. Reaching `maxSize` emits at once (split into batches of
 * exactly `maxSize`; the remainder keeps waiting). Empty batches are
 * ignored. What accumulated is emitted before complete, and before error
 * too — a buffered completion carries a wr_id the caller must settle.
 * Teardown cancels the scheduled flush and drops the accumulation.
 *
 * ## Example
 * ```ts
 * cqEvents$.pipe(ackEvents(), rearm(), drainCq(), batchCompletions({ maxSize: 256 }))
 *   .subscribe((batch) => settleAll(batch));
 * ```
 *
 * @param options `maxSize`, `maxWait`, `scheduler` (see {@link BatchCompletionsOptions}).
 * @return An operator that merges each wakeup's `WcBatch`es.
 * @see {@link drainCq}
 */
export function batchCompletions(options: BatchCompletionsOptions = {}): OperatorFunction<WcBatch, WcBatch> {
  const maxSize = checkInt(options.maxSize ?? Infinity, 'batchCompletions: maxSize', 1, Infinity);
  const maxWait = checkFinite(options.maxWait ?? 0, 'batchCompletions: maxWait', 0);
  const scheduler = options.scheduler ?? asapScheduler;
  return (source) =>
    new Observable<WcBatch>((subscriber) => {
      let parts: WcBatch[] = [];
      let count = 0;
      let timer: Subscription | undefined;

      // State is cleared before next(), so a re-entrant emission starts a new batch.
      const emitAll = () => {
        timer?.unsubscribe();
        timer = undefined;
        if (count === 0) return;
        const merged = WcBatch.concat(parts);
        parts = [];
        count = 0;
        subscriber.next(merged);
      };
      const emitFull = () => {
        let merged = WcBatch.concat(parts);
        parts = [];
        count = 0;
        let at = 0;
        while (merged.length - at >= maxSize) {
          const full = merged.slice(at, at + maxSize);
          at += maxSize;
          if (at === merged.length) {
            timer?.unsubscribe();
            timer = undefined;
          }
          subscriber.next(full);
          if (subscriber.closed) return;
        }
        if (at < merged.length) {
          merged = merged.slice(at);
          parts.push(merged);
          count += merged.length;
        }
      };

      const upstream = operate(source, subscriber, {
        next(batch) {
          if (batch.length === 0) return;
          parts.push(batch);
          count += batch.length;
          if (count >= maxSize) emitFull();
          if (count > 0 && !timer) timer = scheduler.schedule(emitAll, maxWait);
        },
        error: emitAll,
        complete: emitAll,
      });
      return () => {
        upstream.unsubscribe();
        timer?.unsubscribe();
        timer = undefined;
        parts = [];
        count = 0;
      };
    });
}
