import type { CqEvent, CqLike } from './types';

/**
 * The ack obligation an event carries, so that the documented operators ack
 * every event a channel delivers exactly once, in whatever order they come.
 *
 * An event a channel's `events$` hands to its push subscribers is marked
 * "owed". Whoever discharges the mark first is the one who acks:
 * - `ackEvents()` takes it over when the event reaches it (and acks in
 *   batches, flushing on every way the subscription ends);
 * - an operator that fails on the event before `ackEvents()` saw it —
 *   `rearm()` on an overrun or closed CQ, `drainCq()` whose poll fails —
 *   acks it itself before it errors: nothing downstream will ever count it.
 * A second `ackEvents()` on the same multicast stream finds the mark
 * discharged and skips the event. Events without the mark (taken with
 * `tryTake()`, read with `tryGetEvent()`, or made by hand) are their
 * taker's to ack; `ackEvents()` counts them as it always did.
 *
 * The mark lives on the event object: a channel makes a fresh one per event.
 */
const OWED = Symbol('rx-verbs.ackOwed');

/** true: owed; false: taken over or acked; undefined: never marked. */
type Marked = CqEvent & { [OWED]?: boolean };

/**
 * A channel delivered `event` to its push subscribers: its ack is owed.
 * Channels call it through `withAckMarks` (src/observables), which wraps
 * their hot-source driver.
 */
export function markOwed(event: CqEvent): void {
  const marked = event as Marked;
  if (marked[OWED] === undefined) marked[OWED] = true;
}

/**
 * Takes the ack of `event` over: true when the caller must now ack it,
 * false when someone already did (or took it over). Unmarked events are
 * always the caller's.
 */
export function claimAck(event: CqEvent): boolean {
  const marked = event as Marked;
  if (marked[OWED] === false) return false;
  if (marked[OWED]) marked[OWED] = false;
  return true;
}

/**
 * For an operator about to fail on `event`: acks it now if it is still owed
 * (no `ackEvents()` took it over), since nothing downstream will. Unmarked
 * events are left to their taker. Throws what `cq.ack` throws.
 */
export function ackIfOwed(event: CqEvent): void {
  const marked = event as Marked;
  if (marked[OWED] !== true) return;
  marked[OWED] = false;
  ackAtMost(event.cq, 1);
}

/**
 * Acks `n` events, or fewer when the CQ says fewer are outstanding: acking
 * more than were read is an error in rdma-core, and someone (a context
 * closing in the safe order, a hand-written `cq.ack`) may have acked them
 * already. A closed CQ needs no acks.
 */
export function ackAtMost(cq: CqLike, n: number): void {
  if (cq.closed) return;
  const k = cq.unacked === undefined ? n : Math.min(n, cq.unacked);
  if (k > 0) cq.ack(k);
}

/**
 * How an operator fails on a CQ event (a re-arm or poll that threw): the
 * event is acked first if nobody took its ack over, since nothing downstream
 * will see it; then `subscriber` errors with the verb's error, which stays
 * the one reported even if acking fails too (the CQ is broken either way).
 */
export function failOnEvent(event: CqEvent, err: unknown, subscriber: { error(err: unknown): void }): void {
  try {
    ackIfOwed(event);
  } catch {
    // The verb's failure is the one to report.
  }
  subscriber.error(err);
}
