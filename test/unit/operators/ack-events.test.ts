import { map, take, tap } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import { ackEvents } from '../../../src/operators';
import { expectAcks, VirtualCq } from '../../../src/testing';
import { byCq, serviced, twoCqs } from '../../support/virtual-loop';

/**
 * @test {ackEvents} — on the testing kit's virtual channel and CQs: events
 * really read from a channel, and a CQ that refuses to ack more than was read.
 */
describe('ackEvents', () => {
  let testScheduler: TestScheduler;
  let cqs: VirtualCq[];
  const names = { a: 'A', b: 'B' };

  beforeEach(() => {
    testScheduler = new TestScheduler((actual, expected) => expect(actual).toEqual(expected));
    cqs = [];
  });

  /** Every spec ends with every event read acked (and nothing stranded). */
  afterEach(() => {
    for (const cq of cqs) cq.assertInvariants();
  });

  it('should ack each CQ every N of its events and flush the rest before complete', () => {
    const unackedAtComplete: number[] = [];
    testScheduler.run((helpers) => {
      const { channel, A, B } = twoCqs(helpers, { completions: '--a--a-----a' }, { completions: '--------b' });
      cqs.push(A, B);
      helpers.cold('--------------x').subscribe(() => channel.close());
      const out$ = channel.events$.pipe(
        ackEvents({ every: 2 }),
        serviced(),
        tap({ complete: () => unackedAtComplete.push(A.unacked, B.unacked) }),
        map(byCq),
      );
      helpers.expectObservable(out$).toBe('--a--a--b--a--|', names);
      expectAcks(helpers, A, '-----2--------1');
      expectAcks(helpers, B, '--------------1');
    });
    expect(unackedAtComplete).toEqual([0, 0]);
  });

  it('should ack every event with every: 1', () => {
    testScheduler.run((helpers) => {
      const { channel, A, B } = twoCqs(helpers, { completions: '--a' }, { completions: '-----b' });
      cqs.push(A, B);
      helpers.expectObservable(channel.events$.pipe(ackEvents({ every: 1 }), serviced(), map(byCq))).toBe('--a--b', names);
      expectAcks(helpers, A, '--1');
      expectAcks(helpers, B, '-----1');
    });
  });

  it('should ack before forwarding the event that fills a batch', () => {
    const unackedDownstream: number[] = [];
    testScheduler.run((helpers) => {
      const { channel, A, B } = twoCqs(helpers, { completions: '--a--a' });
      cqs.push(A, B);
      const out$ = channel.events$.pipe(
        ackEvents({ every: 2 }),
        tap((e) => unackedDownstream.push(e.cq.unacked)),
        serviced(),
        map(byCq),
      );
      helpers.expectObservable(out$, '------!').toBe('--a--a', names);
    });
    expect(unackedDownstream).toEqual([1, 0]);
  });

  it('should flush outstanding acks before forwarding an error', () => {
    const boom = new Error('DEVICE_FATAL');
    const unackedAtError: number[] = [];
    testScheduler.run((helpers) => {
      const { channel, A, B } = twoCqs(helpers, { completions: '--a' }, { completions: '-----b' });
      cqs.push(A, B);
      helpers.cold('--------x').subscribe(() => channel.fail(boom));
      const out$ = channel.events$.pipe(
        ackEvents({ every: 4 }),
        serviced(),
        tap({ error: () => unackedAtError.push(A.unacked, B.unacked) }),
        map(byCq),
      );
      helpers.expectObservable(out$).toBe('--a--b--#', names, boom);
      expectAcks(helpers, A, '--------1');
      expectAcks(helpers, B, '--------1');
    });
    expect(unackedAtError).toEqual([0, 0]);
  });

  it('should flush outstanding acks on unsubscribe', () => {
    testScheduler.run((helpers) => {
      const { channel, A, B } = twoCqs(helpers, { completions: '--a--a-----a' }, { completions: '--------b' });
      cqs.push(A, B);
      const out$ = channel.events$.pipe(ackEvents({ every: 8 }), serviced(), map(byCq));
      helpers.expectObservable(out$, '---------!').toBe('--a--a--b', names);
      expectAcks(helpers, A, '---------2');
      expectAcks(helpers, B, '---------1');
    });
  });

  it('should never ack an event twice when downstream unsubscribes re-entrantly', () => {
    testScheduler.run((helpers) => {
      const { channel, A, B } = twoCqs(helpers, { completions: '--a--a' });
      cqs.push(A, B);
      const out$ = channel.events$.pipe(ackEvents({ every: 3 }), serviced(), take(1), map(byCq));
      helpers.expectObservable(out$).toBe('--(a|)', names);
      expectAcks(helpers, A, '--1'); // once; the second event stays pending in the channel, unread
    });
    expect(cqs[0].channel.pendingEvents).toBe(1);
  });

  it('should ack each event once when two ackEvents share the multicast stream', () => {
    testScheduler.run((helpers) => {
      const { channel, A, B } = twoCqs(helpers, { completions: '--a--a--a' });
      cqs.push(A, B);
      helpers.expectObservable(channel.events$.pipe(ackEvents({ every: 1 }), serviced(), map(byCq)), '----------!').toBe('--a--a--a', names);
      helpers.expectObservable(channel.events$.pipe(ackEvents({ every: 2 }), map(byCq)), '----------!').toBe('--a--a--a', names);
      expectAcks(helpers, A, '--1--1--1'); // the first ackEvents took each one over; the second found nothing owed
    });
  });

  it('should never ack more than was read when events were acked by hand meanwhile', () => {
    testScheduler.run((helpers) => {
      const { channel, A, B } = twoCqs(helpers, { completions: '--a--a' });
      cqs.push(A, B);
      const out$ = channel.events$.pipe(
        ackEvents({ every: 8 }),
        tap((e) => e.cq.ack(e.cq.unacked)), // e.g. a context closing in the safe order acks everything
        serviced(),
        map(byCq),
      );
      helpers.expectObservable(out$, '-------!').toBe('--a--a', names);
      expectAcks(helpers, A, '--1--1'); // only the hand-made acks: the flush found nothing left
    });
  });

  it('should handle re-entrant events in order', () => {
    const { channel, A, B } = twoCqs(undefined);
    cqs.push(A, B);
    const seen: string[] = [];
    const acks: string[] = [];
    A.acks$.subscribe((n) => acks.push(`A:${n}`));
    B.acks$.subscribe((n) => acks.push(`B:${n}`));
    channel.events$.pipe(ackEvents({ every: 1 }), serviced()).subscribe((e) => {
      seen.push(String(e.context));
      if (e.cq === A) B.addCompletions({}); // B's event is raised while A's is being handled
    });
    A.addCompletions({});
    expect(seen).toEqual(['A', 'B']);
    expect(acks).toEqual(['A:1', 'B:1']);
  });

  it('should error when ack() throws', () => {
    const boom = new Error('ibv_ack_cq_events failed');
    const errors: unknown[] = [];
    const { channel, A, B } = twoCqs(undefined);
    const ack = jest.spyOn(A, 'ack').mockImplementation(() => {
      throw boom; // a fault the virtual CQ cannot produce by itself
    });
    channel.events$.pipe(ackEvents({ every: 1 }), serviced()).subscribe({ error: (e) => errors.push(e) });
    A.addCompletions({});
    expect(errors).toEqual([boom]);
    ack.mockRestore();
    expect(A.unacked).toBe(1); // the failed ack is not retried behind the caller's back
    expect(B.unacked).toBe(0);
  });

  it('should reject a bad every', () => {
    expect(() => ackEvents({ every: 0 })).toThrow(RangeError);
    expect(() => ackEvents({ every: 1.5 })).toThrow(RangeError);
  });
});
