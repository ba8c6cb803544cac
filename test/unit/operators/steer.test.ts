import { asapScheduler, asyncScheduler, SchedulerAction, SchedulerLike, share, Subject } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import { steer } from '../../../src/operators';

/** @test {steer} */
describe('steer', () => {
  let testScheduler: TestScheduler;

  beforeEach(() => {
    testScheduler = new TestScheduler((actual, expected) => expect(actual).toEqual(expected));
  });

  /** A scheduler that runs work `frames` later on the (virtual) asyncScheduler. */
  const later = (frames: number): SchedulerLike => ({
    now: () => asyncScheduler.now(),
    schedule<T>(work: (this: SchedulerAction<T>, state?: T) => void, delay = 0, state?: T) {
      return asyncScheduler.schedule(work, delay + frames, state);
    },
  });

  const byKey = (item: string) => item[0];

  it('should deliver each key on its scheduler, keeping per-key order', () => {
    testScheduler.run(({ hot, expectObservable, expectSubscriptions }) => {
      const e1 = hot('  -a-b-a--|', { a: 'f1', b: 's1' });
      const e1subs = '  ^-------!';
      const expected = '-a---cb-|';
      const result = e1.pipe(steer({ by: byKey, to: (k) => (k === 'f' ? asapScheduler : later(3)) }));
      expectObservable(result).toBe(expected, { a: 'f1', b: 's1', c: 'f1' });
      expectSubscriptions(e1.subscriptions).toBe(e1subs);
    });
  });

  it('should keep the order of a burst of one key, with one scheduled action', () => {
    const slow = later(2);
    const schedule = jest.spyOn(slow, 'schedule');
    testScheduler.run(({ hot, expectObservable }) => {
      const e1 = hot('  -(abc)----|', { a: 's1', b: 's2', c: 's3' });
      const expected = '---(abc)--|';
      expectObservable(e1.pipe(steer({ by: byKey, to: () => slow }))).toBe(expected, { a: 's1', b: 's2', c: 's3' });
    });
    expect(schedule).toHaveBeenCalledTimes(1);
  });

  it('should complete only after every lane has drained', () => {
    testScheduler.run(({ hot, expectObservable, expectSubscriptions }) => {
      const e1 = hot('  -a|    ', { a: 's1' });
      const e1subs = '  ^-!    ';
      const expected = '----(a|)';
      expectObservable(e1.pipe(steer({ by: byKey, to: () => later(3) }))).toBe(expected, { a: 's1' });
      expectSubscriptions(e1.subscriptions).toBe(e1subs);
    });
  });

  it('should error only after every lane has drained', () => {
    testScheduler.run(({ hot, expectObservable }) => {
      const e1 = hot('  -a#    ', { a: 's1' });
      const expected = '----(a#)';
      expectObservable(e1.pipe(steer({ by: byKey, to: () => later(3) }))).toBe(expected, { a: 's1' });
    });
  });

  it('should raise an error thrown by `by` at once', () => {
    const boom = new Error('no key');
    testScheduler.run(({ hot, expectObservable, expectSubscriptions }) => {
      const e1 = hot('  -a-b--|', { a: 'f1', b: 'x' });
      const e1subs = '  ^--!   ';
      const expected = '-a-#   ';
      const by = (item: string) => {
        if (item === 'x') throw boom;
        return item[0];
      };
      expectObservable(e1.pipe(steer({ by, to: () => asapScheduler }))).toBe(expected, { a: 'f1' }, boom);
      expectSubscriptions(e1.subscriptions).toBe(e1subs);
    });
  });

  it('should cancel scheduled deliveries on unsubscribe', () => {
    testScheduler.run(({ hot, expectObservable, expectSubscriptions }) => {
      const e1 = hot('  -a-b----|', { a: 's1', b: 'f1' });
      const unsub = '   ---!     ';
      const e1subs = '  ^--!     ';
      const expected = '---      ';
      const result = e1.pipe(steer({ by: byKey, to: (k) => (k === 'f' ? asapScheduler : later(5)) }));
      expectObservable(result, unsub).toBe(expected);
      expectSubscriptions(e1.subscriptions).toBe(e1subs);
    });
  });

  it('should deliver items pushed during delivery after the current ones (re-entrancy)', () => {
    testScheduler.run(({ expectObservable, time }) => {
      const source = new Subject<string>();
      // One steer shared by the recording subscriber and the one that pushes
      // a3 from inside the delivery of a1, subscribed after it.
      const result = source.pipe(steer({ by: byKey, to: () => asapScheduler }), share());
      expectObservable(result).toBe('--(abc)', { a: 'a1', b: 'a2', c: 'a3' });
      testScheduler.schedule(() => {
        result.subscribe((item) => {
          if (item === 'a1') source.next('a3');
        });
      });
      testScheduler.schedule(() => {
        source.next('a1');
        source.next('a2');
      }, time('--|'));
    });
  });

  it('should reject bad options', () => {
    expect(() => steer({ by: undefined as never, to: () => asapScheduler })).toThrow(TypeError);
  });
});
