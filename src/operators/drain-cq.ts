import { Observable, OperatorFunction } from 'rxjs';
import { failOnEvent } from '../core/event-acks';
import type { CqEvent } from '../core/types';
import { checkInt } from '../core/validate';
import { operate } from './operate';
import type { WcBatch } from '../core/wc-batch';

/** Options of {@link drainCq}. */
export interface DrainCqOptions {
  /** Completions per `poll()` call (integer >= 1, default 64). */
  max?: number;
}

/**
 * Turns each CQ event into the work completions on its CQ: polls the CQ
 * (`ibv_poll_cq`, at most `max` per call) until a poll returns nothing,
 * emitting each non-empty poll result as its own `WcBatch` — one batch per
 * poll call, not one per event, so no copy is made; follow with
 * `batchCompletions()` to merge them. An event whose CQ is already empty
 * emits nothing (normal: its completions were taken by an earlier poll).
 *
 * ```
 * events$:  --e--------e----e--|
 * CQ holds:   3 WCs    0    70
 * result:   --a--------------(bc)|     a: 3 WCs; b: 64, c: 6 (max: 64)
 * ```
 *
 * Put it after `rearm()`: polling an armed CQ until empty is what makes the
 * loop lose nothing (a completion that lands after the arm raises a new
 * event). Stops polling as soon as the subscriber is closed; a poll that
 * throws (e.g. an overrun CQ) errors the result, the event acked first if
 * no `ackEvents()` took it over.
 *
 * ## Example
 * ```ts
 * channel.events$.pipe(ackEvents(), rearm(), drainCq({ max: 32 }))
 *   .subscribe((batch) => { for (const wc of batch) settle(wc.wrId); });
 * ```
 *
 * @param options `max`: completions per poll call.
 * @return An operator from CQ events to non-empty `WcBatch`es.
 * @see {@link rearm}
 * @see {@link batchCompletions}
 */
export function drainCq<E extends CqEvent>(options: DrainCqOptions = {}): OperatorFunction<E, WcBatch> {
  const max = checkInt(options.max ?? 64, 'drainCq: max', 1);
  return (source) =>
    new Observable<WcBatch>((subscriber) =>
      operate(source, subscriber, {
        next(event) {
          while (!subscriber.closed) {
            let batch: WcBatch;
            try {
              batch = event.cq.poll(max);
            } catch (err) {
              failOnEvent(event, err, subscriber);
              return;
            }
            if (batch.length === 0) return;
            subscriber.next(batch);
          }
        },
      }),
    );
}
