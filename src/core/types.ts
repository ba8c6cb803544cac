import type { WcBatch } from './wc-batch';

/**
 * What the operators need of a completion queue. The native `Cq` and the
 * testing kit's virtual CQ both implement it, so one pipeline runs on both.
 * Kept free of any native import.
 */
export interface CqLike {
  /**
   * Arms the CQ once (`ibv_req_notify_cq`): the next completion added after
   * this call raises one event. Completions already queued raise nothing:
   * poll after arming.
   */
  requestNotify(solicitedOnly?: boolean): void;
  /** Takes up to `max` completions without blocking (`ibv_poll_cq`). */
  poll(max?: number): WcBatch;
  /** Acknowledges `n` events taken from the channel for this CQ (`ibv_ack_cq_events`). */
  ack(n: number): void;
  /** The CQ's depth. */
  readonly cqe: number;
  /**
   * Events read for this CQ and not acked yet, where the CQ knows it (the
   * native one does): `ackEvents` then never acks more than that.
   */
  readonly unacked?: number;
  /** True once destroyed, where the CQ knows it. */
  readonly closed?: boolean;
}

/** One completion event read from a channel: which CQ fired, and its user context. */
export interface CqEvent<C extends CqLike = CqLike> {
  /** The CQ that raised the event. */
  readonly cq: C;
  /** The `context` the CQ was created with. */
  readonly context: unknown;
}

/**
 * A synchronous, non-blocking pull over a queue that push consumers share:
 * the try-decrement of the kernel's `try_wait_for_completion()`.
 */
export interface Takeable<T> {
  /**
   * Removes and returns one item if one is available, else `undefined`.
   * Never blocks and never waits for the event loop. Once the source has
   * failed, it still returns what was buffered before the failure, in
   * order, then throws the source's terminal error.
   */
  tryTake(): T | undefined;
  /** How many items `tryTake()` could take right now without polling. */
  readonly pending: number;
}
