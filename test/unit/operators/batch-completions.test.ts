import { asyncScheduler, map, share, Subject } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import { batchCompletions } from '../../../src/operators';
import { WcBatch } from '../../../src/core/wc-batch';
import { batchOf, ids } from '../../support/wc-batches';

/** @test {batchCompletions} */
describe('batchCompletions', () => {
  let testScheduler: TestScheduler;
  const a = batchOf(1);
  const b = batchOf(2, 3);
  const c = batchOf(4, 5, 6);
  const values = { a, b, c, e: WcBatch.empty() };

  beforeEach(() => {
    testScheduler = new TestScheduler((actual, expected) => expect(actual).toEqual(expected));
  });

  it('should merge the batches of one wakeup and add no latency', () => {
    testScheduler.run(({ hot, expectObservable, expectSubscriptions }) => {
      const e1 = hot('  --(ab)--c--|', values);
      const e1subs = '  ^----------!';
      const expected = '--x-----y--|';
      expectObservable(e1.pipe(batchCompletions(), map(ids))).toBe(expected, { x: [1, 2, 3], y: [4, 5, 6] });
      expectSubscriptions(e1.subscriptions).toBe(e1subs);
    });
  });

  it('should ignore empty batches', () => {
    testScheduler.run(({ hot, expectObservable }) => {
      const e1 = hot('  --e--(ea)--|', values);
      const expected = '-----x-----|';
      expectObservable(e1.pipe(batchCompletions(), map(ids))).toBe(expected, { x: [1] });
    });
  });

  it('should emit early, in batches of exactly maxSize, when maxSize is reached', () => {
    testScheduler.run(({ hot, expectObservable }) => {
      const e1 = hot('  --a--(bc)--|', values);
      const expected = '--x--(yz)--|';
      const result = e1.pipe(batchCompletions({ maxSize: 3 }), map(ids));
      expectObservable(result).toBe(expected, { x: [1], y: [2, 3, 4], z: [5, 6] });
    });
  });

  it('should wait maxWait for more when asked to', () => {
    testScheduler.run(({ hot, time, expectObservable }) => {
      const e1 = hot('  -a-b----c---|', values);
      const wait = time('  ---|       ');
      const expected = '----x------y|';
      const result = e1.pipe(batchCompletions({ maxWait: wait }), map(ids));
      expectObservable(result).toBe(expected, { x: [1, 2, 3], y: [4, 5, 6] });
    });
  });

  it('should flush what accumulated before complete', () => {
    testScheduler.run(({ hot, expectObservable }) => {
      const e1 = hot('  --a|', values);
      const expected = '---(x|)';
      expectObservable(e1.pipe(batchCompletions({ maxWait: 5 }), map(ids))).toBe(expected, { x: [1] });
    });
  });

  it('should flush what accumulated before an error', () => {
    testScheduler.run(({ hot, expectObservable, expectSubscriptions }) => {
      const e1 = hot('  --a#', values);
      const e1subs = '  ^--!';
      const expected = '---(x#)';
      expectObservable(e1.pipe(batchCompletions({ maxWait: 5 }), map(ids))).toBe(expected, { x: [1] });
      expectSubscriptions(e1.subscriptions).toBe(e1subs);
    });
  });

  it('should cancel the scheduled flush on unsubscribe', () => {
    testScheduler.run(({ hot, expectObservable, expectSubscriptions }) => {
      const e1 = hot('  --a-----b--|', values);
      const unsub = '   ----!       ';
      const e1subs = '  ^---!       ';
      const expected = '-----       ';
      expectObservable(e1.pipe(batchCompletions({ maxWait: 5 })), unsub).toBe(expected);
      expectSubscriptions(e1.subscriptions).toBe(e1subs);
    });
  });

  it('should use the scheduler it is given', () => {
    const schedule = jest.spyOn(asyncScheduler, 'schedule');
    try {
      testScheduler.run(({ hot, expectObservable }) => {
        const e1 = hot('  --a--|', values);
        const expected = '--x--|';
        const result = e1.pipe(batchCompletions({ scheduler: asyncScheduler }), map(ids));
        expectObservable(result).toBe(expected, { x: [1] });
      });
      expect(schedule).toHaveBeenCalledWith(expect.any(Function), 0);
    } finally {
      schedule.mockRestore();
    }
  });

  it('should start a new batch for batches pushed while it emits (re-entrancy)', () => {
    testScheduler.run(({ expectObservable, time }) => {
      const source = new Subject<WcBatch>();
      // One operator instance shared by the recording subscriber and the one
      // that pushes b from inside the delivery of [1], subscribed after it:
      // the recorder sees [1] before anything the push causes.
      const result = source.pipe(batchCompletions({ maxSize: 1 }), share());
      expectObservable(result.pipe(map(ids))).toBe('--(xyz)', { x: [1], y: [2], z: [3] });
      testScheduler.schedule(() => {
        result.subscribe((batch) => {
          if (ids(batch)[0] === 1) source.next(b);
        });
      });
      testScheduler.schedule(() => source.next(a), time('--|'));
    });
  });

  it('should reject bad options', () => {
    expect(() => batchCompletions({ maxSize: 0 })).toThrow(RangeError);
    expect(() => batchCompletions({ maxWait: -1 })).toThrow(RangeError);
    expect(() => batchCompletions({ maxWait: Infinity })).toThrow(RangeError);
  });
});
