import { map, take } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import { ackEvents, drainCq, rearm } from '../../../src/operators';
import { VirtualCq, virtualCq, wrIdsOf } from '../../../src/testing';
import { CqOverrunError } from '../../../src/core/errors';
import { twoCqs } from '../../support/virtual-loop';

/** @test {drainCq} — on the testing kit's virtual channel and CQs, in the canonical loop. */
describe('drainCq', () => {
  let testScheduler: TestScheduler;
  let cqs: VirtualCq[];

  beforeEach(() => {
    testScheduler = new TestScheduler((actual, expected) => expect(actual).toEqual(expected));
    cqs = [];
  });

  /** Every spec ends with the loop's rules kept: every event acked, nothing stranded. */
  afterEach(() => {
    for (const cq of cqs) cq.assertInvariants();
  });

  it("should poll the event's CQ until empty, one batch per non-empty poll", () => {
    testScheduler.run((helpers) => {
      const cq = virtualCq(helpers, { completions: '-(abcde)' }); // a fires the arm; the rest queue behind it
      cq.requestNotify();
      cqs.push(cq);
      const out$ = cq.channel.events$.pipe(ackEvents({ every: 1 }), rearm(), drainCq({ max: 2 }), map(wrIdsOf));
      // Subscribed late, so all five are queued when the event is read.
      helpers.expectObservable(out$, '---^---!').toBe('---(xyz)', { x: [1, 2], y: [3, 4], z: [5] });
    });
    expect(cqs[0].depth).toBe(0);
  });

  it('should emit nothing for an event whose CQ is empty', () => {
    testScheduler.run((helpers) => {
      const { channel, A, B } = twoCqs(helpers, {}, { completions: '-----b' });
      cqs.push(A, B);
      helpers.cold('--x--').subscribe(() => A.spuriousEvent()); // an event with nothing behind it
      const out$ = channel.events$.pipe(ackEvents({ every: 1 }), rearm(), drainCq(), map(wrIdsOf));
      helpers.expectObservable(out$, '-------!').toBe('-----x', { x: [1] });
    });
    expect(cqs[0].unacked).toBe(0); // the empty event was acked too
  });

  it('should raise errors from the source', () => {
    const fatal = new Error('DEVICE_FATAL');
    testScheduler.run((helpers) => {
      const cq = virtualCq(helpers, { completions: '--a' });
      cq.requestNotify();
      cqs.push(cq);
      helpers.cold('-----x').subscribe(() => cq.channel.fail(fatal));
      const out$ = cq.channel.events$.pipe(ackEvents({ every: 1 }), rearm(), drainCq(), map(wrIdsOf));
      helpers.expectObservable(out$).toBe('--x--#', { x: [1] }, fatal);
    });
  });

  it('should error when poll() throws (an overrun CQ)', () => {
    const errors: unknown[] = [];
    let cq: VirtualCq | undefined;
    testScheduler.run((helpers) => {
      cq = virtualCq(helpers, { cqe: 2, completions: '-(abc)' }); // a fires the arm; c overruns
      cq.requestNotify();
      // No rearm() (it would fail first): drainCq's own poll meets the overrun.
      helpers.cold('---x').subscribe(() =>
        cq!.channel.events$.pipe(ackEvents({ every: 1 }), drainCq()).subscribe({ error: (e) => errors.push(e) }),
      );
    });
    expect(errors).toEqual([expect.any(CqOverrunError)]);
    expect(cq!.unacked).toBe(0);
  });

  it('should ack the event it fails on when no ackEvents() took it over', () => {
    const errors: unknown[] = [];
    let cq: VirtualCq | undefined;
    testScheduler.run((helpers) => {
      cq = virtualCq(helpers, { cqe: 2, completions: '-(abc)' });
      cq.requestNotify();
      helpers.cold('---x').subscribe(() => cq!.channel.events$.pipe(drainCq()).subscribe({ error: (e) => errors.push(e) }));
    });
    expect(errors).toEqual([expect.any(CqOverrunError)]);
    expect(cq!.unacked).toBe(0);
    expect(() => cq!.assertInvariants()).not.toThrow(/never acked/);
  });

  it('should stop polling as soon as downstream unsubscribes, leaving the rest queued', () => {
    testScheduler.run((helpers) => {
      const cq = virtualCq(helpers, { completions: '-(abcd)' });
      cq.requestNotify();
      const out$ = cq.channel.events$.pipe(ackEvents({ every: 1 }), rearm(), drainCq({ max: 1 }), take(1), map(wrIdsOf));
      helpers.expectObservable(out$, '---^').toBe('---(x|)', { x: [1] });
      helpers.flush();
      expect(cq.depth).toBe(3); // nothing lost: still in the CQ for the next consumer
      expect(cq.unacked).toBe(0);
    });
  });

  it('should allow unsubscribing explicitly and early', () => {
    testScheduler.run((helpers) => {
      const cq = virtualCq(helpers, { completions: '--a--b' });
      cq.requestNotify();
      const out$ = cq.channel.events$.pipe(ackEvents({ every: 1 }), rearm(), drainCq(), map(wrIdsOf));
      helpers.expectObservable(out$, '---!').toBe('--x', { x: [1] });
      helpers.flush();
      expect(cq.channel.pendingEvents).toBe(1); // b's event, never read
    });
  });

  it('should poll completions that land while it is emitting (re-entrancy)', () => {
    let cq: VirtualCq | undefined;
    testScheduler.run((helpers) => {
      cq = virtualCq(helpers, { completions: '--a' });
      cq.requestNotify();
      cqs.push(cq);
      const out$ = cq.channel.events$.pipe(
        ackEvents({ every: 1 }),
        rearm(),
        drainCq({ max: 1 }),
        map((batch) => {
          if (wrIdsOf(batch)[0] === 1) cq!.addCompletions({ wrId: 2 }); // lands mid-drain, fires the arm
          return wrIdsOf(batch);
        }),
      );
      helpers.expectObservable(out$, '-----!').toBe('--(xy)', { x: [1], y: [2] });
    });
    // The arm fired for 2: its event was read and drained (empty) after the first one.
    expect(cq!.eventsRaised).toBe(2);
  });

  it('should reject a bad max', () => {
    expect(() => drainCq({ max: 0 })).toThrow(RangeError);
    expect(() => drainCq({ max: 2.5 })).toThrow(RangeError);
  });
});
