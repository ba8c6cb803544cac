import type { RunHelpers } from 'rxjs/testing';
import type { WcBatch } from '../core/wc-batch';
import type { VirtualCq } from './virtual-cq';

const DIGITS: Record<string, number> = { 1: 1, 2: 2, 3: 3, 4: 4, 5: 5, 6: 6, 7: 7, 8: 8, 9: 9 };

/**
 * Expects the CQ's arms at these frames: `'a'` an arm for any completion,
 * `'s'` a solicited-only arm; e.g. `'a--a--(aa)'`. Arms made while setting
 * up the test count at frame 0. Call inside `TestScheduler.run`.
 */
export function expectArms(helpers: Pick<RunHelpers, 'expectObservable'>, cq: VirtualCq, marble: string): void {
  helpers.expectObservable(cq.arms$).toBe(marble);
}

/**
 * Expects the CQ's `ack(n)` calls at these frames, each shown as `n`:
 * digits 1-9 stand for themselves (`'--1--2'`); pass `values` for more.
 * Call inside `TestScheduler.run`.
 */
export function expectAcks(
  helpers: Pick<RunHelpers, 'expectObservable'>,
  cq: VirtualCq,
  marble: string,
  values?: Record<string, number>,
): void {
  helpers.expectObservable(cq.acks$).toBe(marble, { ...DIGITS, ...values });
}

/** The wr_ids of a batch as numbers: handy marble values. */
export function wrIdsOf(batch: WcBatch): number[] {
  const out: number[] = [];
  for (let i = 0; i < batch.length; i++) out.push(Number(batch.wrId[i]));
  return out;
}
