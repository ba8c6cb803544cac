import { map, merge, Observable, Subject } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import { splitErrors } from '../../../src/operators';
import { WcBatch } from '../../../src/core/wc-batch';
import { virtualCq } from '../../../src/testing';
import { batchOf, ids } from '../../support/wc-batches';

/** @test {splitErrors} */
describe('splitErrors', () => {
  let testScheduler: TestScheduler;
  const ok = batchOf(1, 2);
  const mixed = WcBatch.from([{ wrId: 3 }, { wrId: 4, status: 12 }, { wrId: 5 }]);
  const allFailed = WcBatch.from([{ wrId: 6, status: 5 }, { wrId: 7, status: 5 }]);
  const values = { a: ok, b: mixed, c: allFailed };

  beforeEach(() => {
    testScheduler = new TestScheduler((actual, expected) => expect(actual).toEqual(expected));
  });

  it('should send successes downstream and failures to the sink, in order', () => {
    testScheduler.run(({ hot, expectObservable, expectSubscriptions }) => {
      const errors$ = new Subject<WcBatch>();
      const e1 = hot('     --a--b--c--|', values);
      const e1subs = '     ^----------!';
      const expected = '   --x--y-----|';
      const errExpected = '-----e--f--|';
      expectObservable(errors$.pipe(map(ids))).toBe(errExpected, { e: [4], f: [6, 7] });
      expectObservable(e1.pipe(splitErrors(errors$), map(ids))).toBe(expected, { x: [1, 2], y: [3, 5] });
      expectSubscriptions(e1.subscriptions).toBe(e1subs);
    });
  });

  it('should accept a function sink, which gets the failures only', () => {
    const failed: number[][] = [];
    testScheduler.run(({ hot, expectObservable }) => {
      const e1 = hot('  --b--c--|', values);
      const expected = '--y-----|';
      expectObservable(e1.pipe(splitErrors((f) => failed.push(ids(f))), map(ids))).toBe(expected, { y: [3, 5] });
    });
    expect(failed).toEqual([[4], [6, 7]]);
  });

  it('should forward the source error to the downstream and an Observer sink', () => {
    testScheduler.run(({ hot, expectObservable, expectSubscriptions }) => {
      const errors$ = new Subject<WcBatch>();
      const e1 = hot('     --a--#', values);
      const e1subs = '     ^----!';
      expectObservable(errors$).toBe('-----#');
      expectObservable(e1.pipe(splitErrors(errors$))).toBe('--a--#', values);
      expectSubscriptions(e1.subscriptions).toBe(e1subs);
    });
  });

  it('should error when the sink throws', () => {
    const boom = new Error('sink failed');
    testScheduler.run(({ hot, expectObservable, expectSubscriptions }) => {
      const e1 = hot('  --a--b--|', values);
      const e1subs = '  ^----!   ';
      const expected = '--a--#   ';
      const sink = () => {
        throw boom;
      };
      expectObservable(e1.pipe(splitErrors(sink))).toBe(expected, values, boom);
      expectSubscriptions(e1.subscriptions).toBe(e1subs);
    });
  });

  it('should allow unsubscribing explicitly and early', () => {
    testScheduler.run(({ hot, expectObservable, expectSubscriptions }) => {
      const e1 = hot('  --a--b--|', values);
      const unsub = '   ---!     ';
      const e1subs = '  ^--!     ';
      expectObservable(e1.pipe(splitErrors(() => undefined)), unsub).toBe('--a-', values);
      expectSubscriptions(e1.subscriptions).toBe(e1subs);
    });
  });

  it('should handle failures found while the sink re-enters the source', () => {
    const source = new Subject<WcBatch>();
    const seen: string[] = [];
    source
      .pipe(
        splitErrors((f) => {
          seen.push(`err:${ids(f)}`);
          if (ids(f)[0] === 4) source.next(ok); // e.g. a retry completes at once
        }),
      )
      .subscribe((b) => seen.push(`ok:${ids(b)}`));
    source.next(mixed);
    expect(seen).toEqual(['err:4', 'ok:1,2', 'ok:3,5']);
  });

  it('should take any Observable of WcBatch: the merge() of two CQs\' completions$, in marble form', () => {
    const failed: number[][] = [];
    testScheduler.run((helpers) => {
      const sendCq = virtualCq(helpers, { completions: '--a-----c', values: { a: { wrId: 1 }, c: { wrId: 5, status: 5 } } });
      const recvCq = virtualCq(helpers, { completions: '----(bd)--', values: { b: { wrId: 2, status: 4 }, d: { wrId: 3 } } });
      const merged$: Observable<WcBatch> = merge(sendCq.completions$, recvCq.completions$);
      const expected = '                               --x-y----';
      helpers.expectObservable(merged$.pipe(splitErrors((f) => failed.push(ids(f))), map(ids))).toBe(expected, { x: [1], y: [3] });
    });
    expect(failed).toEqual([[2], [5]]);
  });
});
