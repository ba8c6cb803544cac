import { map, tap } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import { ackEvents, rearm } from '../../../src/operators';
import { expectArms, VirtualCq, virtualCq } from '../../../src/testing';
import { CqOverrunError } from '../../../src/core/errors';
import { byCq, twoCqs } from '../../support/virtual-loop';

/** @test {rearm} — on the testing kit's virtual channel and CQs, which model arming. */
describe('rearm', () => {
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

  it("should arm each event's CQ, then pass the event on", () => {
    testScheduler.run((helpers) => {
      const { channel, A, B } = twoCqs(helpers, { completions: '--a-----a' }, { completions: '-----b' });
      cqs.push(A, B);
      const out$ = channel.events$.pipe(
        ackEvents({ every: 1 }),
        rearm(),
        tap((e) => void e.cq.poll()),
        map(byCq),
      );
      helpers.expectObservable(out$, '---------!').toBe('--a--b--a', { a: 'A', b: 'B' });
      expectArms(helpers, A, 'a-a-----a');
      expectArms(helpers, B, 'a----a---');
    });
  });

  it('should arm for solicited completions only when asked', () => {
    testScheduler.run((helpers) => {
      const A = virtualCq(helpers, {
        context: 'A',
        completions: '--a--b--c',
        values: { a: { solicited: true }, b: {}, c: { solicited: true } },
      });
      A.requestNotify(true);
      cqs.push(A);
      const out$ = A.channel.events$.pipe(
        ackEvents({ every: 1 }),
        rearm({ solicitedOnly: true }),
        tap((e) => void e.cq.poll()),
        map(byCq),
      );
      helpers.expectObservable(out$, '---------!').toBe('--a-----a', { a: 'A' }); // b is not solicited
      expectArms(helpers, A, 's-s-----s');
    });
  });

  it('should arm before anything downstream sees the event (poll-after-arm)', () => {
    const armedDownstream: boolean[] = [];
    testScheduler.run((helpers) => {
      const { channel, A, B } = twoCqs(helpers, { completions: '--a--a' });
      cqs.push(A, B);
      const out$ = channel.events$.pipe(
        ackEvents({ every: 1 }),
        rearm(),
        tap((e) => {
          armedDownstream.push(e.cq.isArmed);
          while (e.cq.poll().length > 0);
        }),
        map(byCq),
      );
      helpers.expectObservable(out$, '------!').toBe('--a--a', { a: 'A' });
    });
    expect(armedDownstream).toEqual([true, true]);
  });

  it('should raise errors from the source', () => {
    const fatal = new Error('DEVICE_FATAL');
    testScheduler.run((helpers) => {
      const { channel, A, B } = twoCqs(helpers, { completions: '--a' });
      cqs.push(A, B);
      helpers.cold('-----x').subscribe(() => channel.fail(fatal));
      const out$ = channel.events$.pipe(ackEvents({ every: 1 }), rearm(), tap((e) => void e.cq.poll()), map(byCq));
      helpers.expectObservable(out$).toBe('--a--#', { a: 'A' }, fatal);
    });
  });

  it('should error when arming throws (an overrun CQ), and the event still gets acked', () => {
    let cq: VirtualCq | undefined;
    const errors: unknown[] = [];
    testScheduler.run((helpers) => {
      const { channel, A, B } = twoCqs(helpers, {}, { cqe: 1, completions: '-(bc)' }); // b fires; c overruns
      cq = B;
      cqs.push(A);
      helpers.cold('---x').subscribe(() => channel.events$.pipe(rearm()).subscribe({ error: (e) => errors.push(e) }));
    });
    expect(errors).toEqual([expect.any(CqOverrunError)]);
    // No ackEvents() took the event over: rearm() acked it before failing.
    expect(cq!.unacked).toBe(0);
    expect(cq!.eventsRaised).toBe(1);
  });

  it('should allow unsubscribing explicitly and early', () => {
    testScheduler.run((helpers) => {
      const { channel, A, B } = twoCqs(helpers, { completions: '--a-----a' }, { completions: '-----b' });
      cqs.push(A, B);
      const out$ = channel.events$.pipe(ackEvents({ every: 8 }), rearm(), tap((e) => void e.cq.poll()), map(byCq));
      helpers.expectObservable(out$, '------!').toBe('--a--b', { a: 'A', b: 'B' });
      expectArms(helpers, A, 'a-a------'); // nothing after the unsubscribe
    });
  });

  it('should arm re-entrant events in order', () => {
    const { channel, A, B } = twoCqs(undefined);
    cqs.push(A, B);
    const seen: string[] = [];
    channel.events$.pipe(ackEvents({ every: 1 }), rearm()).subscribe((e) => {
      seen.push(`${e.context}:${e.cq.isArmed ? 'armed' : 'unarmed'}`);
      while (e.cq.poll().length > 0);
      if (e.cq === A) B.addCompletions({}); // B's event is raised while A's is being handled
    });
    A.addCompletions({});
    expect(seen).toEqual(['A:armed', 'B:armed']);
  });
});
