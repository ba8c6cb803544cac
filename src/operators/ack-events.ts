import { MonoTypeOperatorFunction, Observable } from 'rxjs';
import { ackAtMost, claimAck } from '../core/event-acks';
import type { CqEvent, CqLike } from '../core/types';
import { checkInt } from '../core/validate';
import { operate } from './operate';

/** Options of {@link ackEvents}. */
export interface AckEventsOptions {
  /** Ack a CQ once this many of its events passed (integer >= 1, default 16). */
  every?: number;
}

/**
 * Acknowledges CQ events in batches (`ibv_ack_cq_events`): counts the events
 * of each CQ and calls `cq.ack(n)` every `every` events of that CQ.
 *
 * ```
 * events$:  --a--a--b--a--|
 * result:   --a--a--b--a--|
 * acks (every: 2):
 *   cq A:   -----2--------1   (the rest is flushed before complete)
 *   cq B:   --------------1
 * ```
 *
 * Acking takes a lock in libibverbs, hence the batching. Every event must be
 * acked before its CQ can be destroyed, so all outstanding counts are
 * flushed on unsubscribe, and on complete and error — before forwarding them,
 * so whoever reacts to the end (e.g. by closing the CQ) finds it acked.
 *
 * Exactly once: an event from a channel's `events$` carries its ack
 * obligation, and `ackEvents()` takes it over. So an event counted here is
 * never acked by anyone else (another `ackEvents()` on the same multicast
 * stream skips it), and one that never gets here because `rearm()` or
 * `drainCq()` failed on it first is acked by that operator. Put it first
 * all the same — the canonical loop is event -> ack -> re-arm -> poll — so
 * that no operator of yours between the channel and the ack can drop an
 * event unacked. It never acks more than the CQ says are unacked, and never
 * a closed CQ.
 *
 * ## Example
 * ```ts
 * channel.events$.pipe(ackEvents({ every: 32 }), rearm(), drainCq())
 * ```
 *
 * @param options `every`: events per CQ per `ack()` call.
 * @return An operator that acks the events it forwards.
 * @see {@link rearm}
 * @see {@link drainCq}
 */
export function ackEvents<E extends CqEvent>(options: AckEventsOptions = {}): MonoTypeOperatorFunction<E> {
  const every = checkInt(options.every ?? 16, 'ackEvents: every', 1);
  return (source) =>
    new Observable<E>((subscriber) => {
      let unacked = new Map<CqLike, number>();
      // Acks every outstanding count; the map is swapped first so an ack()
      // that re-enters (or throws) cannot ack the same events twice.
      const flush = () => {
        const counts = unacked;
        unacked = new Map();
        let failure: { err: unknown } | undefined;
        for (const [cq, n] of counts) {
          try {
            ackAtMost(cq, n);
          } catch (err) {
            failure ??= { err };
          }
        }
        if (failure) throw failure.err;
      };
      const upstream = operate(source, subscriber, {
        next(event) {
          if (!claimAck(event)) {
            subscriber.next(event); // acked already, by another ackEvents or the source
            return;
          }
          const n = (unacked.get(event.cq) ?? 0) + 1;
          if (n >= every) {
            unacked.delete(event.cq);
            ackAtMost(event.cq, n); // a failed ack errors the result, and the event is not passed on
          } else {
            unacked.set(event.cq, n);
          }
          subscriber.next(event);
        },
        error: flush,
        complete: flush,
      });
      return () => {
        upstream.unsubscribe();
        flush();
      };
    });
}
