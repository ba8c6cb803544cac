import { MonoTypeOperatorFunction, Observable, SchedulerLike, Subscription } from 'rxjs';
import { operate } from './operate';

/** Options of {@link steer}. */
export interface SteerOptions<T, K> {
  /** The routing key of an item (a CQ, a QP number, a wr_id tag, ...). */
  by: (item: T) => K;
  /** The scheduler a key's items are delivered on. Called when a key's queue goes from empty to non-empty. */
  to: (key: K) => SchedulerLike;
}

interface Lane<T> {
  items: T[];
  action: Subscription;
}

/**
 * Routes items to RxJS schedulers by key, like `observeOn` per key: each
 * item is re-emitted from the scheduler `to(by(item))` picks, and items of
 * one key keep their order. Items of different keys may overtake each other
 * — that is the point: latency-critical CQs on `asapScheduler`, bulk on
 * `asyncScheduler`.
 *
 * ```
 * source:   -a1-b1-a2-b2-|        a*: key A -> asap, b*: key B -> async (delay 0)
 * result:   -a1-b1-a2-b2-|        (in virtual time; per key, in order)
 * ```
 *
 * Each key has a lane: items queue in it, and one action per burst is
 * scheduled to deliver the lane in order (so a burst of N items costs one
 * scheduled action, not N). Complete and error are delivered after every
 * lane has drained — nothing already received is lost. Unsubscribing
 * cancels the scheduled actions and drops what was queued.
 *
 * ## Example
 * ```ts
 * completions$.pipe(
 *   steer({ by: (b: WcBatch) => b.qpNum[0], to: (qp) => (qp === controlQp ? asapScheduler : asyncScheduler) }),
 * )
 * ```
 *
 * @param options `by` (key of an item) and `to` (scheduler of a key).
 * @return An operator that re-emits each item on its key's scheduler.
 * @see {@link https://rxjs.dev/api/operators/observeOn observeOn}
 */
export function steer<T, K>(options: SteerOptions<T, K>): MonoTypeOperatorFunction<T> {
  const { by, to } = options;
  if (typeof by !== 'function' || typeof to !== 'function') {
    throw new TypeError('steer: options.by and options.to must be functions');
  }
  return (source) =>
    new Observable<T>((subscriber) => {
      const lanes = new Map<K, Lane<T>>();
      let ending: (() => void) | undefined;

      const drain = (key: K, lane: Lane<T>) => {
        // Detach the lane first: items arriving while we deliver open a new
        // lane whose action runs after this one (the scheduler is FIFO).
        lanes.delete(key);
        for (const item of lane.items) {
          if (subscriber.closed) return;
          subscriber.next(item);
        }
        if (lanes.size === 0) ending?.();
      };

      const upstream = operate(source, subscriber, {
        next(item) {
          // A `by` or `to` that throws errors the result.
          const key = by(item);
          const lane = lanes.get(key);
          if (lane) {
            lane.items.push(item);
            return;
          }
          const scheduler = to(key);
          const fresh: Lane<T> = { items: [item], action: Subscription.EMPTY };
          lanes.set(key, fresh);
          fresh.action = scheduler.schedule(() => drain(key, fresh));
        },
        // The end waits behind the items still queued on their schedulers.
        end(deliver) {
          ending = deliver;
          if (lanes.size === 0) deliver();
        },
      });
      return () => {
        upstream.unsubscribe();
        for (const lane of lanes.values()) lane.action.unsubscribe();
        lanes.clear();
      };
    });
}
