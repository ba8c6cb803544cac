import type { HotSourceDriver } from '../observables/hot-source';
import type { CqEvent, CqLike } from './interfaces';

/**
 * The ack obligation of every CQ event a channel hands to push subscribers.
 *
 * Every event read from a channel must be acked exactly once on its CQ. An
 * operator cannot promise that on its own: an operator upstream of
 * `ackEvents()` may fail (a re-arm of an overrun CQ) before `ackEvents()`
 * ever counted the event. So the obligation belongs to the source: each
 * event it delivers is owed an ack; `ackEvents()` takes the obligation over
 * (and acks in batches); whatever is still owed when a push subscriber leaves
 * — an error anywhere downstream, unsubscribe, complete — the source acks
 * itself. Each event can be discharged once only, so no operator order, no
 * multicast and no termination path acks an event twice or never.
 *
 * The mark lives on the event object: events a channel emits are fresh
 * objects. Events from elsewhere (a hand-made `{ cq, context }`) carry no
 * mark, and `ackEvents()` counts them as it always did.
 */
const OWED = Symbol('rx-verbs.ackOwedTo');

/** An event as the ledger marks it: owed to a ledger, discharged (null), or never seen (undefined). */
type Marked = CqEvent & { [OWED]?: AckLedger | null };

/** The events one source delivered and nobody has acked yet, per CQ, oldest first. */
export class AckLedger {
  private readonly owed = new Map<CqLike, Set<CqEvent>>();

  /** How many delivered events are still owed an ack (all CQs). */
  get size(): number {
    let n = 0;
    for (const set of this.owed.values()) n += set.size;
    return n;
  }

  /** The source delivered `event` to its push subscribers: its ack is now owed. */
  owe(event: CqEvent): void {
    const marked = event as Marked;
    if (marked[OWED] !== undefined) return; // delivered before (a replay): owed once
    let set = this.owed.get(event.cq);
    if (!set) {
      set = new Set();
      this.owed.set(event.cq, set);
    }
    marked[OWED] = this;
    set.add(event);
    this.forgetAckedElsewhere(event.cq, set);
  }

  /** `ackEvents()` takes the obligation over. @internal use {@link claimAck}. */
  release(event: CqEvent): void {
    const set = this.owed.get(event.cq);
    (event as Marked)[OWED] = null;
    if (set?.delete(event) && set.size === 0) this.owed.delete(event.cq);
  }

  /**
   * Acks every event still owed (a push subscriber left, or the source
   * ended). Tries every CQ, then throws the first failure.
   */
  settle(): void {
    if (this.owed.size === 0) return;
    const owed = [...this.owed];
    this.owed.clear();
    let failure: { err: unknown } | undefined;
    for (const [cq, set] of owed) {
      for (const event of set) (event as Marked)[OWED] = null;
      try {
        ackAtMost(cq, set.size);
      } catch (err) {
        failure ??= { err };
      }
    }
    if (failure) throw failure.err;
  }

  /**
   * Someone acked this CQ's events by hand (`cq.ack(n)`, a context closing in
   * the safe order): the CQ says fewer are unacked than we think we owe, so
   * the oldest of ours were among them. Forgetting them keeps the ledger
   * bounded and keeps `settle()` from acking what is no longer owed.
   */
  private forgetAckedElsewhere(cq: CqLike, set: Set<CqEvent>): void {
    const unacked = cq.closed ? 0 : cq.unacked;
    if (unacked === undefined) return;
    while (set.size > unacked) {
      const oldest = set.values().next().value as Marked;
      set.delete(oldest);
      oldest[OWED] = null;
    }
    if (set.size === 0) this.owed.delete(cq);
  }
}

/**
 * Takes over the ack of `event`: true when the caller must now ack it,
 * false when it was acked already (by another `ackEvents()` on the same
 * multicast stream, or by its source). Unmarked events are always the
 * caller's.
 */
export function claimAck(event: CqEvent): boolean {
  const owner = (event as Marked)[OWED];
  if (owner === null) return false;
  owner?.release(event);
  return true;
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
 * A channel's `events$` driver with the ack ledger wired in: every event
 * delivered to push subscribers is owed, and what is owed when one of them
 * leaves is acked. The native channel and the testing kit's virtual one
 * both use it, so marble tests see the native behaviour.
 */
export function withAckLedger<E extends CqEvent>(driver: HotSourceDriver<E>): HotSourceDriver<E> {
  const ledger = new AckLedger();
  return {
    start: () => driver.start(),
    stop: () => driver.stop(),
    pull: () => driver.pull(),
    delivered: (event) => ledger.owe(event),
    detached: () => ledger.settle(),
  };
}
