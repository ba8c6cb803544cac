import { config, map, of, OperatorFunction, pipe, Subscription } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import { ackEvents, drainCq, rearm } from '../../../src/operators';
import { HotSource } from '../../../src/observables/hot-source';
import { VirtualCq, virtualCq, wrIdsOf } from '../../../src/testing';
import { withAckMarks } from '../../../src/observables/with-ack-marks';
import { CqOverrunError, DeviceFatalError } from '../../../src/core/errors';
import type { CqEvent, CqLike } from '../../../src/core/types';
import { WcBatch } from '../../../src/core/wc-batch';

/**
 * Issue 10, item 1: every event read from a channel is acked exactly once,
 * whatever order the documented operators come in and however the
 * subscription ends. Each case runs on every order the docs have shown, with
 * acks every event and in batches.
 */
type Pipeline = OperatorFunction<CqEvent<VirtualCq>, WcBatch>;
const ORDERS: Array<[string, (every: number) => Pipeline]> = [
  ['ackEvents, rearm, drainCq (canonical)', (every) => pipe(ackEvents({ every }), rearm(), drainCq())],
  ['rearm, ackEvents, drainCq', (every) => pipe(rearm(), ackEvents({ every }), drainCq())],
];
const CASES = ORDERS.flatMap(([name, make]) => [1, 8].map((every) => [`${name}, every ${every}`, make(every)] as const));

/** Acks the CQ by hand and closes it, as `Context.close()` does in its safe order. */
function ackAndClose(cq: VirtualCq): void {
  if (cq.unacked > 0) cq.ack(cq.unacked);
  cq.close();
}

describe.each(CASES)('exactly-once acks: %s', (_name, pipeline) => {
  let testScheduler: TestScheduler;
  let cq: VirtualCq;
  let acks: number[];
  let errors: unknown[];

  beforeEach(() => {
    testScheduler = new TestScheduler((actual, expected) => expect(actual).toEqual(expected));
    acks = [];
    errors = [];
  });

  /** Builds the CQ inside the run and records its acks. */
  function setup(helpers: Parameters<Parameters<TestScheduler['run']>[0]>[0], options: Parameters<typeof virtualCq>[1]): VirtualCq {
    cq = virtualCq(helpers, options);
    cq.acks$.subscribe((n) => acks.push(n));
    cq.requestNotify();
    return cq;
  }

  /** Every event read was acked, none twice (the virtual CQ refuses over-acks), and the CQ can close. */
  function expectAllAcked(): void {
    expect(cq.unacked).toBe(0);
    expect(acks.reduce((a, b) => a + b, 0)).toBe(cq.eventsRaised - cq.channel.pendingEvents);
    expect(() => cq.close()).not.toThrow();
  }

  it('should ack the event whose re-arm or poll fails on an overrun CQ', () => {
    testScheduler.run((helpers) => {
      setup(helpers, { cqe: 2, completions: '-a-(bc)' }); // a fires the arm; c overruns while nobody reads
      helpers.cold('------x').subscribe(() => {
        cq.channel.events$.pipe(pipeline).subscribe({ error: (e) => errors.push(e) });
      });
    });
    expect(errors).toHaveLength(1);
    expect(errors[0]).toBeInstanceOf(CqOverrunError);
    expect(cq.eventsRaised).toBe(1);
    expect(() => cq.assertInvariants()).toThrow(/overrun/);
    expect(() => cq.assertInvariants()).not.toThrow(/never acked/);
    expectAllAcked();
  });

  it('should ack exactly once when the CQ is closed while one of its events is still to come', () => {
    testScheduler.run((helpers) => {
      setup(helpers, { completions: '--a' });
      cq.channel.events$.pipe(pipeline).subscribe({
        next: () => {
          cq.addCompletions({ wrId: 9 }); // fires the arm: a second event, read after the close
          ackAndClose(cq);
        },
        error: (e) => errors.push(e),
      });
    });
    expect(errors).toEqual([expect.objectContaining({ code: 'EBADF' })]); // re-arming the closed CQ
    expect(cq.closed).toBe(true);
    expect(cq.unacked).toBe(0);
    expect(acks).toEqual([1]); // the hand-made ack; nothing acked on the closed CQ
    cq.assertInvariants();
  });

  it('should ack everything when an operator downstream throws', () => {
    const boom = new Error('handler failed');
    testScheduler.run((helpers) => {
      setup(helpers, { completions: '--a--b--c' });
      const out$ = cq.channel.events$.pipe(
        pipeline,
        map((batch) => {
          if (wrIdsOf(batch)[0] === 2) throw boom;
          return batch;
        }),
      );
      out$.subscribe({ error: (e) => errors.push(e) });
    });
    expect(errors).toEqual([boom]);
    expect(cq.channel.pendingEvents).toBe(1); // c's event: raised after b's re-arm, never read
    expectAllAcked();
  });

  it('should ack everything when the channel fails', () => {
    const fatal = new DeviceFatalError('gone');
    testScheduler.run((helpers) => {
      setup(helpers, { completions: '--a--b' });
      cq.channel.events$.pipe(pipeline).subscribe({ error: (e) => errors.push(e) });
      helpers.cold('----x').subscribe(() => cq.channel.fail(fatal));
    });
    expect(errors).toEqual([fatal]);
    expectAllAcked();
  });

  it('should ack everything when the channel closes (complete)', () => {
    let completed = false;
    testScheduler.run((helpers) => {
      setup(helpers, { completions: '--a--b' });
      cq.channel.events$.pipe(pipeline).subscribe({ complete: () => (completed = true) });
      helpers.cold('-------x').subscribe(() => cq.channel.close());
    });
    expect(completed).toBe(true);
    expectAllAcked();
  });

  it('should ack everything on unsubscribe', () => {
    testScheduler.run((helpers) => {
      setup(helpers, { completions: '--a--b--c' });
      const out$ = cq.channel.events$.pipe(pipeline, map(wrIdsOf));
      helpers.expectObservable(out$, '------!').toBe('--x--y', { x: [1], y: [2] });
    });
    expectAllAcked();
  });

  it('should ack everything with a subscriber that throws', () => {
    const reported: unknown[] = [];
    const previous = config.onUnhandledError;
    config.onUnhandledError = (e) => reported.push(e);
    try {
      let sub: Subscription | undefined;
      testScheduler.run((helpers) => {
        setup(helpers, { completions: '--a--b' });
        sub = cq.channel.events$.pipe(pipeline).subscribe(() => {
          throw new Error('subscriber bug');
        });
        helpers.flush();
        sub.unsubscribe();
      });
      expect(reported).toHaveLength(2); // the loop went on: both batches were delivered
      expectAllAcked();
    } finally {
      config.onUnhandledError = previous;
    }
  });
});

describe('exactly-once acks: structure', () => {
  /** A CQ that knows nothing of its unacked count, so nothing clamps a second ack: every ack() is counted. */
  class BareCq implements CqLike {
    readonly cqe = 16;
    acked = 0;
    failArm: Error | undefined;
    requestNotify(): void {
      if (this.failArm) throw this.failArm;
    }
    poll(): WcBatch {
      return WcBatch.empty();
    }
    ack(n: number): void {
      this.acked += n;
    }
  }

  /** A hot source that marks what it delivers, as a channel's events$ does. */
  function channelOf(): { source: HotSource<CqEvent>; emit(cq: CqLike): void } {
    const source = new HotSource<CqEvent>(withAckMarks({ start: () => undefined, stop: () => undefined, pull: () => undefined }));
    return { source, emit: (cq) => source.push({ cq, context: undefined }) };
  }

  it('should ack an event once when two ackEvents share the multicast stream', () => {
    const cq = new BareCq();
    const { source, emit } = channelOf();
    const a = source.pipe(ackEvents({ every: 1 })).subscribe();
    const b = source.pipe(ackEvents({ every: 2 })).subscribe();
    for (let i = 0; i < 5; i++) emit(cq);
    a.unsubscribe();
    b.unsubscribe();
    expect(cq.acked).toBe(5);
  });

  it('should ack, in rearm(), an event it failed on before ackEvents saw it', () => {
    const cq = new BareCq();
    const { source, emit } = channelOf();
    const errors: unknown[] = [];
    source.pipe(rearm(), ackEvents({ every: 4 })).subscribe({ error: (e) => errors.push(e) });
    emit(cq);
    emit(cq);
    cq.failArm = new Error('EIO');
    emit(cq);
    expect(errors).toEqual([cq.failArm]);
    expect(cq.acked).toBe(3); // two flushed by ackEvents, the failed one by rearm
  });

  it('should not ack twice when another subscriber took the ack over before rearm() failed', () => {
    const cq = new BareCq();
    const { source, emit } = channelOf();
    const held = source.pipe(ackEvents({ every: 8 })).subscribe(); // subscribed first: takes each ack over
    const errors: unknown[] = [];
    source.pipe(rearm()).subscribe({ error: (e) => errors.push(e) });
    cq.failArm = new Error('EIO');
    emit(cq);
    expect(errors).toHaveLength(1);
    expect(cq.acked).toBe(0); // held in the first subscriber's batch ...
    held.unsubscribe();
    expect(cq.acked).toBe(1); // ... and acked once, by it
  });

  it('should leave events taken with tryTake() to the taker, even when rearm() fails on them', () => {
    const cq = new BareCq();
    const { source, emit } = channelOf();
    emit(cq); // nobody subscribed: buffered
    const event = source.tryTake()!;
    cq.failArm = new Error('EIO');
    const errors: unknown[] = [];
    of(event).pipe(rearm()).subscribe({ error: (e) => errors.push(e) });
    expect(errors).toHaveLength(1);
    expect(cq.acked).toBe(0); // the taker acks it: acking here would make its ack(1) an over-ack
  });

  it('should leave a subscriber that acks by hand alone, during and after its subscription', () => {
    const cq = virtualCq(undefined);
    const seen: CqEvent[] = [];
    const sub = cq.channel.events$.subscribe((e) => seen.push(e));
    for (let i = 0; i < 3; i++) {
      cq.requestNotify();
      cq.addCompletions({});
      cq.poll();
    }
    seen[0].cq.ack(1); // during
    sub.unsubscribe();
    expect(cq.unacked).toBe(2); // nothing acked behind its back
    cq.ack(2); // after: still its own to ack
    expect(cq.unacked).toBe(0);
  });
});
