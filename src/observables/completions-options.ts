import type { WcBatch } from '../core/wc-batch';
import type { HotSourceOptions } from './hot-source';

/**
 * Options of a CQ's completions source — the native `cq.completions()` and
 * the testing kit's `virtualCq.completions()` alike: the bounded buffer plus
 * the ack batch size and the poll size.
 */
export interface CompletionsOptions extends HotSourceOptions<WcBatch> {
  /** Ack events in batches of this many (default 64); always flushed before destroy. */
  ackEvery?: number;
  /** Max completions per `tryTake()` poll (default 256). */
  pollMax?: number;
}
