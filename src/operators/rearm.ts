import { MonoTypeOperatorFunction, Observable } from 'rxjs';
import { failOnEvent } from '../core/event-acks';
import type { CqEvent } from '../core/types';
import { operate } from './operate';

/** Options of {@link rearm}. */
export interface RearmOptions {
  /** Arm for the next solicited or error completion only (default `false`: any completion). */
  solicitedOnly?: boolean;
}

/**
 * Re-arms each event's CQ (`ibv_req_notify_cq`), then passes the event on.
 *
 * ```
 * events$:  --e1----e2--|
 *             |      |
 *           arm(cq1) arm(cq2)
 * result:   --e1----e2--|
 * ```
 *
 * Poll-after-arm safe: the arm happens before the event reaches anything
 * downstream, so a `drainCq()` after it polls a CQ that is already armed —
 * a completion landing before the arm is picked up by that poll, one landing
 * after it raises a new event. Never drain first and arm afterwards: a
 * completion in between would raise nothing and wait forever.
 *
 * If arming throws (an overrun or closed CQ), the result errors with that
 * error; the event is acked all the same — by an `ackEvents()` before this
 * operator, else here, before the error: nothing downstream would count it.
 *
 * ## Example
 * ```ts
 * channel.events$.pipe(ackEvents({ every: 16 }), rearm(), drainCq())
 *   .subscribe((batch) => handle(batch));
 * ```
 *
 * @param options `solicitedOnly`: arm for solicited/error completions only.
 * @return An operator that arms each event's CQ before forwarding the event.
 * @see {@link drainCq}
 * @see {@link ackEvents}
 */
export function rearm<E extends CqEvent>(options: RearmOptions = {}): MonoTypeOperatorFunction<E> {
  const solicitedOnly = options.solicitedOnly ?? false;
  return (source) =>
    new Observable<E>((subscriber) =>
      operate(source, subscriber, {
        next(event) {
          try {
            event.cq.requestNotify(solicitedOnly);
          } catch (err) {
            failOnEvent(event, err, subscriber);
            return;
          }
          subscriber.next(event);
        },
      }),
    );
}
