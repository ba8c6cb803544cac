import { config, map, Observable, OperatorFunction, pipe, Subscription } from 'rxjs';
import { ackEvents, drainCq, rearm, WcBatch } from '../../src';
import type { Cq, CqEvent } from '../../src';
import { itSoft, makePair, Pair, region, waitFor } from '../support/device';

/**
 * Issue 10 on the device: every event read from a channel is acked exactly
 * once whatever the operator order and however the pipeline ends (item 1),
 * and what a hot source buffered before it failed stays takeable (item 3).
 */
type Pipeline = OperatorFunction<CqEvent<Cq>, WcBatch>;
const ORDERS: Array<[string, Pipeline]> = [
  ['ackEvents, rearm, drainCq (canonical)', pipe(ackEvents({ every: 16 }), rearm(), drainCq())],
  ['ackEvents(every 1), rearm, drainCq', pipe(ackEvents({ every: 1 }), rearm(), drainCq())],
  ['rearm, ackEvents, drainCq', pipe(rearm(), ackEvents({ every: 16 }), drainCq())],
  ['rearm, ackEvents(every 1), drainCq', pipe(rearm(), ackEvents({ every: 1 }), drainCq())],
];

/** Uncaught exceptions during `fn` (nothing may escape the watcher's callback). */
async function noneUncaught(fn: () => Promise<void>): Promise<unknown[]> {
  const thrown: unknown[] = [];
  const onUncaught = (err: unknown) => thrown.push(err);
  process.on('uncaughtException', onUncaught);
  try {
    await fn();
  } finally {
    process.off('uncaughtException', onUncaught);
  }
  return thrown;
}

/** Every event the CQ's channel delivered was acked, none twice. */
function expectAllAcked(cq: Cq): void {
  expect(cq.unacked).toBe(0);
  expect(cq.stats.acked).toBe(cq.stats.events);
}

/** The CQ can be destroyed: its QP first, then the CQ itself — no EBUSY for an unacked event. */
function expectClosesCleanly(p: Pair): void {
  p.b.close();
  expect(() => p.cqB.close()).not.toThrow();
  expect(p.cqB.closed).toBe(true);
}

/** `n` SENDs a -> b, each with its receive posted. */
function traffic(p: Pair, n: number): void {
  const src = region(p.pd, 8, undefined, 1);
  const dst = region(p.pd, 8 * n);
  for (let i = 0; i < n; i++) p.b.postRecv({ wrId: 100 + i, sg: { mr: dst, offset: 8 * i, length: 8 } });
  for (let i = 0; i < n; i++) p.a.postSend({ wrId: 200 + i, sg: { mr: src } });
}

describe.each(ORDERS)('exactly-once acks on the device: %s', (_name, pipeline) => {
  itSoft('acks the event whose re-arm fails on an overrun CQ, and the CQ closes cleanly', async () => {
    const p = makePair();
    try {
      const errors: unknown[] = [];
      const sub = p.channel.events$.pipe(pipeline).subscribe({ error: (e) => errors.push(e) });
      p.ctx.faults.emptyEvent(p.cqB); // an event is pending for cqB ...
      p.ctx.faults.overrun(p.cqB); // ... when cqB breaks: re-arming (or polling) it now fails
      expect(await waitFor(() => errors.length > 0)).toBe(true);
      sub.unsubscribe();
      expect(p.cqB.stats.events).toBe(1);
      expectAllAcked(p.cqB);
      expectClosesCleanly(p);
    } finally {
      p.close();
    }
  });

  itSoft('acks exactly once when a subscriber closes a CQ (safe order) while another of its events is still to come', async () => {
    const p = makePair();
    try {
      const errors: unknown[] = [];
      let seen = 0;
      const thrown = await noneUncaught(async () => {
        p.channel.events$.pipe(pipeline).subscribe({
          next: () => {
            seen++;
            // Close cqB as Context.close() would: its QP, ack what was read, destroy.
            p.b.close();
            if (p.cqB.unacked > 0) p.cqB.ack(p.cqB.unacked);
            p.cqB.close();
          },
          error: (e) => errors.push(e),
        });
        p.ctx.faults.completionBeforeArm(p.cqB, { wrId: 77 }); // lands at the re-arm: the drain finds it
        p.ctx.faults.emptyEvent(p.cqB);
        p.ctx.faults.emptyEvent(p.cqB); // read in the same wakeup, handled after the close
        expect(await waitFor(() => errors.length > 0)).toBe(true);
      });
      expect(thrown).toEqual([]);
      expect(seen).toBe(1);
      expect(p.cqB.closed).toBe(true);
      expect(p.cqB.unacked).toBe(0);
    } finally {
      p.close();
    }
  });

  it('acks everything when an operator downstream throws, and when the subscriber throws', async () => {
    const p = makePair();
    const reported: unknown[] = [];
    const previous = config.onUnhandledError;
    config.onUnhandledError = (e) => reported.push(e);
    try {
      const boom = new Error('handler failed');
      const errors: unknown[] = [];
      let received = 0;
      const subs = new Subscription();
      subs.add(
        new Observable<WcBatch>((s) => p.channel.events$.pipe(pipeline).subscribe(s))
          .pipe(
            map((batch) => {
              if (batch.length > 0 && received > 0) throw boom; // fails on the second batch
              received += batch.length;
              return batch;
            }),
          )
          .subscribe({ error: (e) => errors.push(e) }),
      );
      let thrownBySubscriber = 0;
      subs.add(
        p.channel.events$.pipe(pipeline).subscribe(() => {
          thrownBySubscriber++;
          throw new Error('subscriber bug');
        }),
      );
      p.cqA.requestNotify();
      p.cqB.requestNotify();
      traffic(p, 1);
      expect(await waitFor(() => received > 0)).toBe(true);
      traffic(p, 1);
      expect(await waitFor(() => errors.length > 0)).toBe(true);
      expect(errors).toEqual([boom]);
      expect(await waitFor(() => reported.length >= 2)).toBe(true);
      expect(thrownBySubscriber).toBeGreaterThanOrEqual(2);
      subs.unsubscribe();
      expectAllAcked(p.cqA);
      expectAllAcked(p.cqB);
      expectClosesCleanly(p);
    } finally {
      config.onUnhandledError = previous;
      p.close();
    }
  });
});

describe('nothing lost on error, on the device', () => {
  itSoft('completions$.tryTake() on a CQ that broke before anything noticed throws the typed CqOverrunError, sticky', () => {
    const p = makePair();
    try {
      const source = p.cqB.completions$; // no demand: nothing watches, tryTake() polls
      p.ctx.faults.overrun(p.cqB);
      expect(() => source.tryTake()).toThrow(expect.objectContaining({ name: 'CqOverrunError' }));
      expect(source.terminated).toBe('error');
      expect(() => source.tryTake()).toThrow(expect.objectContaining({ name: 'CqOverrunError' }));
    } finally {
      p.close();
    }
  });

  itSoft('a completions$ that overruns with completions buffered hands every wr_id to tryTake(), in order, then throws CqOverrunError', async () => {
    const p = makePair();
    try {
      const source = p.cqB.completions$;
      const hold = source.retain(); // demand, but nobody takes: completions are buffered
      traffic(p, 4);
      expect(await waitFor(() => p.cqB.stats.completions >= 4)).toBe(true);
      expect(source.pending).toBeGreaterThan(0);
      p.ctx.faults.overrun(p.cqB);
      expect(await waitFor(() => source.terminated === 'error')).toBe(true);
      const wrIds: bigint[] = [];
      let error: (Error & { name: string }) | undefined;
      for (;;) {
        try {
          const batch = source.tryTake();
          if (batch === undefined) break;
          wrIds.push(...batch.wrId);
        } catch (err) {
          error = err as Error;
          break;
        }
      }
      expect(wrIds).toEqual([100n, 101n, 102n, 103n]);
      expect(error?.name).toBe('CqOverrunError');
      expect(() => source.tryTake()).toThrow(expect.objectContaining({ name: 'CqOverrunError' }));
      hold.unsubscribe();
    } finally {
      p.close();
    }
  });
});
