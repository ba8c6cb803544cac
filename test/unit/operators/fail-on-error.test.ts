import { map, merge, Observable } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import { failOnError } from '../../../src/operators';
import { WorkCompletionError } from '../../../src/core/errors';
import { WcBatch } from '../../../src/core/wc-batch';
import { batchOf, ids } from '../../support/wc-batches';
import { virtualCq } from '../../../src/testing';

/** @test {failOnError} */
describe('failOnError', () => {
  let testScheduler: TestScheduler;
  const ok = batchOf(1, 2);
  const mixed = WcBatch.from([{ wrId: 3 }, { wrId: 4 }, { wrId: 5, status: 10, qpNum: 7 }, { wrId: 6 }]);
  const firstFails = WcBatch.from([{ wrId: 8, status: 5 }, { wrId: 9 }]);

  beforeEach(() => {
    testScheduler = new TestScheduler((actual, expected) => expect(actual).toEqual(expected));
  });

  it('should pass batches that all succeeded untouched', () => {
    testScheduler.run(({ hot, expectObservable, expectSubscriptions }) => {
      const e1 = hot('  --a--a--|', { a: ok });
      const e1subs = '  ^-------!';
      const expected = '--a--a--|';
      expectObservable(e1.pipe(failOnError())).toBe(expected, { a: ok });
      expectSubscriptions(e1.subscriptions).toBe(e1subs);
    });
  });

  it('should emit the completions before the first failed one, then error with it', () => {
    testScheduler.run(({ hot, expectObservable, expectSubscriptions }) => {
      const e1 = hot('  --a--b--a--|', { a: ok, b: mixed });
      const e1subs = '  ^----!      ';
      const expected = '--x--(y#)   ';
      const result = e1.pipe(failOnError(), map(ids));
      expectObservable(result).toBe(expected, { x: [1, 2], y: [3, 4] }, WorkCompletionError.fromBatch(mixed, 2));
      expectSubscriptions(e1.subscriptions).toBe(e1subs);
    });
  });

  it('should name the status as ibv_wc_status_str does', () => {
    const errors: unknown[] = [];
    testScheduler.run(({ hot }) => {
      hot('--b', { b: mixed }).pipe(failOnError()).subscribe({ error: (e) => errors.push(e) });
    });
    const err = errors[0] as WorkCompletionError;
    expect(err).toBeInstanceOf(WorkCompletionError);
    expect(err.name).toBe('WorkCompletionError');
    expect(err.code).toBe('ERR_WORK_COMPLETION');
    expect(err.status).toBe('REM_ACCESS_ERR');
    expect(err.statusCode).toBe(10);
    expect(err.index).toBe(2);
    expect(err.completion.wrId).toBe(5n);
    expect(err.message).toBe('Work completion failed: remote access error (REM_ACCESS_ERR) for wr_id 5 on QP 7');
  });

  it('should error at once when the first completion failed', () => {
    testScheduler.run(({ hot, expectObservable }) => {
      const e1 = hot('  --b--|', { b: firstFails });
      const expected = '--#   ';
      expectObservable(e1.pipe(failOnError())).toBe(expected, undefined, WorkCompletionError.fromBatch(firstFails, 0));
    });
  });

  it('should raise errors from the source', () => {
    testScheduler.run(({ hot, expectObservable, expectSubscriptions }) => {
      const e1 = hot('  --a--#', { a: ok });
      const e1subs = '  ^----!';
      const expected = '--a--#';
      expectObservable(e1.pipe(failOnError())).toBe(expected, { a: ok });
      expectSubscriptions(e1.subscriptions).toBe(e1subs);
    });
  });

  it('should allow unsubscribing explicitly and early', () => {
    testScheduler.run(({ hot, expectObservable, expectSubscriptions }) => {
      const e1 = hot('  --a--b--|', { a: ok, b: mixed });
      const unsub = '   ---!     ';
      const e1subs = '  ^--!     ';
      const expected = '--a-     ';
      expectObservable(e1.pipe(failOnError()), unsub).toBe(expected, { a: ok });
      expectSubscriptions(e1.subscriptions).toBe(e1subs);
    });
  });

  it('should take any Observable of WcBatch: the merge() of two CQs\' completions$, in marble form', () => {
    testScheduler.run((helpers) => {
      const sendCq = virtualCq(helpers, { completions: '--a---c', values: { a: { wrId: 1 }, c: { wrId: 4 } } });
      const recvCq = virtualCq(helpers, { completions: '----(bd)', values: { b: { wrId: 2 }, d: { wrId: 3, status: 12 } } });
      const merged$: Observable<WcBatch> = merge(sendCq.completions$, recvCq.completions$);
      const failure = WorkCompletionError.fromBatch(WcBatch.from([{ wrId: 2 }, { wrId: 3, status: 12 }]), 1);
      helpers.expectObservable(merged$.pipe(failOnError(), map(ids))).toBe('--x-(y#)', { x: [1], y: [2] }, failure);
    });
  });
});
