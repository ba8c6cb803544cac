import { WcBatch } from '../../src/core/wc-batch';

/*
 * Batch helpers for the specs of operators that take WcBatches. (The CQ stub
 * that used to live here is gone: CQ-facing specs use the testing kit's
 * VirtualCq, which models arming, events and refuses over-acks.)
 */

/** A batch of successful completions with these wr_ids. */
export function batchOf(...wrIds: number[]): WcBatch {
  return WcBatch.from(wrIds.map((wrId) => ({ wrId })));
}

/** wr_ids of a batch as numbers. */
export function ids(batch: WcBatch): number[] {
  return Array.from(batch.wrId, (v) => Number(v));
}
