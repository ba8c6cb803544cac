import { Subject, take, tap } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import { ackEvents } from '../../../src/operators';
import type { CqEvent } from '../../../src/verbs/interfaces';
import { FakeCq } from '../helpers/fake-cq';

/** @test {ackEvents} */
describe('ackEvents', () => {
  let testScheduler: TestScheduler;
  let log: string[];
  let A: FakeCq;
  let B: FakeCq;
  let values: { a: CqEvent; b: CqEvent };

  beforeEach(() => {
    testScheduler = new TestScheduler((actual, expected) => expect(actual).toEqual(expected));
    log = [];
    A = new FakeCq('A', log, () => testScheduler.now());
    B = new FakeCq('B', log, () => testScheduler.now());
    values = { a: A.event(), b: B.event() };
  });

  it('should ack each CQ every N of its events and flush the rest before complete', () => {
    testScheduler.run(({ hot, expectObservable, expectSubscriptions }) => {
      const e1 = hot('  --a--a--b--a--|', values);
      const e1subs = '  ^-------------!';
      const expected = '--a--a--b--a--|';
      const result = e1.pipe(
        ackEvents({ every: 2 }),
        tap({ complete: () => log.push(`complete@${testScheduler.now()}`) }),
      );
      expectObservable(result).toBe(expected, values);
      expectSubscriptions(e1.subscriptions).toBe(e1subs);
    });
    expect(log).toEqual(['A:ack(2)@5', 'B:ack(1)@14', 'A:ack(1)@14', 'complete@14']);
  });

  it('should ack every event with every: 1', () => {
    testScheduler.run(({ hot, expectObservable }) => {
      const e1 = hot('  --a--b--|', values);
      const expected = '--a--b--|';
      expectObservable(e1.pipe(ackEvents({ every: 1 }))).toBe(expected, values);
    });
    expect(log).toEqual(['A:ack(1)@2', 'B:ack(1)@5']);
  });

  it('should ack before forwarding the event that fills a batch', () => {
    testScheduler.run(({ hot, expectObservable }) => {
      const e1 = hot('  --a--|', values);
      const expected = '--a--|';
      const result = e1.pipe(ackEvents({ every: 1 }), tap(() => log.push('next')));
      expectObservable(result).toBe(expected, values);
    });
    expect(log).toEqual(['A:ack(1)@2', 'next']);
  });

  it('should flush outstanding acks before forwarding an error', () => {
    testScheduler.run(({ hot, expectObservable, expectSubscriptions }) => {
      const e1 = hot('  --a--b--#', values);
      const e1subs = '  ^-------!';
      const expected = '--a--b--#';
      const result = e1.pipe(ackEvents({ every: 4 }), tap({ error: () => log.push('error') }));
      expectObservable(result).toBe(expected, values);
      expectSubscriptions(e1.subscriptions).toBe(e1subs);
    });
    expect(log).toEqual(['A:ack(1)@8', 'B:ack(1)@8', 'error']);
  });

  it('should flush outstanding acks on unsubscribe', () => {
    testScheduler.run(({ hot, expectObservable, expectSubscriptions }) => {
      const e1 = hot('  --a--a--b--a--|', values);
      const unsub = '   ---------!     ';
      const e1subs = '  ^--------!     ';
      const expected = '--a--a--b-     ';
      expectObservable(e1.pipe(ackEvents({ every: 8 })), unsub).toBe(expected, values);
      expectSubscriptions(e1.subscriptions).toBe(e1subs);
    });
    expect(log).toEqual(['A:ack(2)@9', 'B:ack(1)@9']);
  });

  it('should never ack an event twice when downstream unsubscribes re-entrantly', () => {
    testScheduler.run(({ hot, expectObservable, expectSubscriptions }) => {
      const e1 = hot('  --a--a--|', values);
      const e1subs = '  ^-!      ';
      const expected = '--(a|)   ';
      expectObservable(e1.pipe(ackEvents({ every: 3 }), take(1))).toBe(expected, values);
      expectSubscriptions(e1.subscriptions).toBe(e1subs);
    });
    expect(log).toEqual(['A:ack(1)@2']);
  });

  it('should handle re-entrant events in order', () => {
    const source = new Subject<CqEvent>();
    const seen: string[] = [];
    source.pipe(ackEvents({ every: 1 })).subscribe((e) => {
      seen.push((e.cq as FakeCq).name);
      if (seen.length === 1) source.next(B.event());
    });
    source.next(A.event());
    expect(seen).toEqual(['A', 'B']);
    expect(log).toEqual(['A:ack(1)@0', 'B:ack(1)@0']);
  });

  it('should error when ack() throws', () => {
    const boom = new Error('ack failed');
    A.failAck = boom;
    testScheduler.run(({ hot, expectObservable, expectSubscriptions }) => {
      const e1 = hot('  --b--a--|', values);
      const e1subs = '  ^----!   ';
      const expected = '--b--#   ';
      expectObservable(e1.pipe(ackEvents({ every: 1 }))).toBe(expected, values, boom);
      expectSubscriptions(e1.subscriptions).toBe(e1subs);
    });
  });

  it('should reject a bad every', () => {
    expect(() => ackEvents({ every: 0 })).toThrow(RangeError);
    expect(() => ackEvents({ every: 1.5 })).toThrow(RangeError);
  });
});
