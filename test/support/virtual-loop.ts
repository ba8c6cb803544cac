import { MonoTypeOperatorFunction, tap } from 'rxjs';
import type { RunHelpers } from 'rxjs/testing';
import { VirtualChannel, virtualChannel, VirtualCq, virtualCq, VirtualCqOptions } from '../../src/testing';
import type { CqEvent } from '../../src/core/types';

/** Two virtual CQs, contexts 'A' and 'B', sharing one channel; both armed once, as a loop starts. */
export function twoCqs(
  helpers: Pick<RunHelpers, 'hot'> | undefined,
  a: VirtualCqOptions = {},
  b: VirtualCqOptions = {},
): { channel: VirtualChannel; A: VirtualCq; B: VirtualCq } {
  const channel = virtualChannel();
  const A = virtualCq(helpers, { ...a, channel, context: 'A' });
  const B = virtualCq(helpers, { ...b, channel, context: 'B' });
  A.requestNotify();
  B.requestNotify();
  return { channel, A, B };
}

/**
 * The rest of the loop, done by hand and passing the event on: re-arm, then
 * poll until empty. For specs of one operator that still need a CQ serviced
 * correctly (so that events keep coming and nothing is stranded).
 */
export function serviced(): MonoTypeOperatorFunction<CqEvent<VirtualCq>> {
  return tap((e) => {
    e.cq.requestNotify();
    while (e.cq.poll().length > 0);
  });
}

/** Marble values naming the CQ of each event. */
export const byCq = (e: CqEvent<VirtualCq>): unknown => e.context;
