import { map, take } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import { drainCq } from '../../../src/operators';
import { FakeCq, ids } from '../helpers/fake-cq';

/** @test {drainCq} */
describe('drainCq', () => {
  let testScheduler: TestScheduler;
  let log: string[];
  let A: FakeCq;
  let B: FakeCq;

  beforeEach(() => {
    testScheduler = new TestScheduler((actual, expected) => expect(actual).toEqual(expected));
    log = [];
    A = new FakeCq('A', log, () => testScheduler.now());
    B = new FakeCq('B', log, () => testScheduler.now());
  });

  it('should poll the event\'s CQ until empty, one batch per non-empty poll', () => {
    A.add(1, 2, 3, 4, 5);
    testScheduler.run(({ hot, expectObservable, expectSubscriptions }) => {
      const e1 = hot('  --a-----|', { a: A.event() });
      const e1subs = '  ^-------!';
      const expected = '--(xyz)-|';
      const result = e1.pipe(drainCq({ max: 2 }), map(ids));
      expectObservable(result).toBe(expected, { x: [1, 2], y: [3, 4], z: [5] });
      expectSubscriptions(e1.subscriptions).toBe(e1subs);
    });
    expect(log).toEqual(['A:poll=2@2', 'A:poll=2@2', 'A:poll=1@2', 'A:poll=0@2']);
  });

  it('should emit nothing for an event whose CQ is empty', () => {
    B.add(7);
    testScheduler.run(({ hot, expectObservable }) => {
      const e1 = hot('  --a--b--a--|', { a: A.event(), b: B.event() });
      const expected = '-----x-----|';
      expectObservable(e1.pipe(drainCq(), map(ids))).toBe(expected, { x: [7] });
    });
    expect(log).toEqual(['A:poll=0@2', 'B:poll=1@5', 'B:poll=0@5', 'A:poll=0@8']);
  });

  it('should raise errors from the source', () => {
    testScheduler.run(({ hot, expectObservable, expectSubscriptions }) => {
      const e1 = hot('  --a--#', { a: A.add(1).event() });
      const e1subs = '  ^----!';
      const expected = '--x--#';
      expectObservable(e1.pipe(drainCq(), map(ids))).toBe(expected, { x: [1] });
      expectSubscriptions(e1.subscriptions).toBe(e1subs);
    });
  });

  it('should error when poll() throws (e.g. an overrun CQ)', () => {
    const boom = new Error('CQ overrun');
    B.failPoll = boom;
    testScheduler.run(({ hot, expectObservable, expectSubscriptions }) => {
      const e1 = hot('  --a--b--a--|', { a: A.event(), b: B.event() });
      const e1subs = '  ^----!      ';
      const expected = '-----#      ';
      expectObservable(e1.pipe(drainCq())).toBe(expected, undefined, boom);
      expectSubscriptions(e1.subscriptions).toBe(e1subs);
    });
  });

  it('should stop polling as soon as downstream unsubscribes', () => {
    A.add(1, 2, 3, 4);
    testScheduler.run(({ hot, expectObservable, expectSubscriptions }) => {
      const e1 = hot('  --a--|', { a: A.event() });
      const e1subs = '  ^-!   ';
      const expected = '--(x|)';
      expectObservable(e1.pipe(drainCq({ max: 1 }), take(1), map(ids))).toBe(expected, { x: [1] });
      expectSubscriptions(e1.subscriptions).toBe(e1subs);
    });
    expect(log).toEqual(['A:poll=1@2']);
    expect(A.queue).toHaveLength(3); // left for the next event: nothing lost
  });

  it('should allow unsubscribing explicitly and early', () => {
    testScheduler.run(({ hot, expectObservable, expectSubscriptions }) => {
      const e1 = hot('  --a--a--|', { a: A.add(1).event() });
      const unsub = '   ---!     ';
      const e1subs = '  ^--!     ';
      const expected = '--x-     ';
      expectObservable(e1.pipe(drainCq(), map(ids)), unsub).toBe(expected, { x: [1] });
      expectSubscriptions(e1.subscriptions).toBe(e1subs);
    });
  });

  it('should poll completions that land while it is emitting (re-entrancy)', () => {
    A.add(1);
    testScheduler.run(({ hot, expectObservable }) => {
      const e1 = hot('  --a-----|', { a: A.event() });
      const expected = '--(xy)--|';
      const result = e1.pipe(
        drainCq({ max: 1 }),
        map((batch) => {
          if (ids(batch)[0] === 1) A.add(2); // a completion lands mid-drain
          return ids(batch);
        }),
      );
      expectObservable(result).toBe(expected, { x: [1], y: [2] });
    });
  });

  it('should reject a bad max', () => {
    expect(() => drainCq({ max: 0 })).toThrow(RangeError);
  });
});
