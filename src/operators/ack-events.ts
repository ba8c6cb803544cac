import { MonoTypeOperatorFunction, Observable } from 'rxjs';
import type { CqEvent, CqLike } from '../verbs/interfaces';

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
 * A CQ's count is reset before `ack()` and before the event is forwarded,
 * so re-entrant events and an unsubscribe from downstream never ack twice.
 *
 * ## Example
 * ```ts
 * channel.events$.pipe(rearm(), ackEvents({ every: 32 }), drainCq())
 * ```
 *
 * @param options `every`: events per CQ per `ack()` call.
 * @return An operator that acks the events it forwards.
 * @see {@link rearm}
 * @see {@link drainCq}
 */
export function ackEvents<E extends CqEvent>(options: AckEventsOptions = {}): MonoTypeOperatorFunction<E> {
  const every = options.every ?? 16;
  if (!Number.isSafeInteger(every) || every < 1) {
    throw new RangeError(`ackEvents: every must be an integer >= 1, got ${every}`);
  }
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
      const upstream = source.subscribe({
        next(event) {
          const n = (unacked.get(event.cq) ?? 0) + 1;
          if (n >= every) {
            unacked.delete(event.cq);
            try {
              ackAtMost(event.cq, n);
            } catch (err) {
              subscriber.error(err);
              return;
            }
          } else {
            unacked.set(event.cq, n);
          }
          subscriber.next(event);
        },
        error(err: unknown) {
          try {
            flush();
          } catch {
            // The upstream error is the one to report.
          }
          subscriber.error(err);
        },
        complete() {
          try {
            flush();
          } catch (err) {
            subscriber.error(err);
            return;
          }
          subscriber.complete();
        },
      });
      return () => {
        upstream.unsubscribe();
        flush();
      };
    });
}

/**
 * Acks `n` events, or fewer when the CQ says fewer are outstanding: someone
 * else (another ackEvents on the same multicast stream, a context closing in
 * the safe order) may have acked them, and acking more than were read is an
 * error in rdma-core. A closed CQ needs no acks.
 */
function ackAtMost(cq: CqLike, n: number): void {
  if (cq.closed) return;
  const k = cq.unacked === undefined ? n : Math.min(n, cq.unacked);
  if (k > 0) cq.ack(k);
}
