import { map, Subject, tap } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import { rearm } from '../../../src/operators';
import type { CqEvent } from '../../../src/verbs/interfaces';
import { FakeCq } from '../helpers/fake-cq';

/** @test {rearm} */
describe('rearm', () => {
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

  it('should arm each event\'s CQ, then pass the event on', () => {
    testScheduler.run(({ hot, expectObservable, expectSubscriptions }) => {
      const values = { a: A.event(), b: B.event() };
      const e1 = hot('  --a--b--a--|', values);
      const e1subs = '  ^----------!';
      const expected = '--a--b--a--|';

      expectObservable(e1.pipe(rearm())).toBe(expected, values);
      expectSubscriptions(e1.subscriptions).toBe(e1subs);
    });
    expect(log).toEqual(['A:arm@2', 'B:arm@5', 'A:arm@8']);
  });

  it('should arm for solicited completions only when asked', () => {
    testScheduler.run(({ hot, expectObservable }) => {
      const e1 = hot('  --a--|', { a: A.event() });
      const expected = '--a--|';
      expectObservable(e1.pipe(rearm({ solicitedOnly: true }))).toBe(expected, { a: A.event() });
    });
    expect(log).toEqual(['A:arm(s)@2']);
  });

  it('should arm before anything downstream sees the event (poll-after-arm)', () => {
    testScheduler.run(({ hot, expectObservable }) => {
      const e1 = hot('  --a--|', { a: A.event() });
      const expected = '--x--|';
      const result = e1.pipe(
        rearm(),
        tap((e) => log.push(`downstream:${(e.cq as FakeCq).name}`)),
        map(() => 'x'),
      );
      expectObservable(result).toBe(expected);
    });
    expect(log).toEqual(['A:arm@2', 'downstream:A']);
  });

  it('should raise errors from the source', () => {
    testScheduler.run(({ hot, expectObservable, expectSubscriptions }) => {
      const e1 = hot('  --a--#', { a: A.event() });
      const e1subs = '  ^----!';
      const expected = '--a--#';
      expectObservable(e1.pipe(rearm())).toBe(expected, { a: A.event() });
      expectSubscriptions(e1.subscriptions).toBe(e1subs);
    });
  });

  it('should error, and unsubscribe from the source, when arming throws', () => {
    const boom = new Error('EINVAL');
    B.failArm = boom;
    testScheduler.run(({ hot, expectObservable, expectSubscriptions }) => {
      const e1 = hot('  --a--b--a--|', { a: A.event(), b: B.event() });
      const e1subs = '  ^----!      ';
      const expected = '--a--#      ';
      expectObservable(e1.pipe(rearm())).toBe(expected, { a: A.event() }, boom);
      expectSubscriptions(e1.subscriptions).toBe(e1subs);
    });
    expect(log).toEqual(['A:arm@2']);
  });

  it('should allow unsubscribing explicitly and early', () => {
    testScheduler.run(({ hot, expectObservable, expectSubscriptions }) => {
      const e1 = hot('  --a--b--a--|', { a: A.event(), b: B.event() });
      const unsub = '   ------!     ';
      const e1subs = '  ^-----!     ';
      const expected = '--a--b-     ';
      expectObservable(e1.pipe(rearm()), unsub).toBe(expected, { a: A.event(), b: B.event() });
      expectSubscriptions(e1.subscriptions).toBe(e1subs);
    });
    expect(log).toEqual(['A:arm@2', 'B:arm@5']);
  });

  it('should arm re-entrant events in order', () => {
    const source = new Subject<CqEvent>();
    const seen: string[] = [];
    source.pipe(rearm()).subscribe((e) => {
      const name = (e.cq as FakeCq).name;
      seen.push(name);
      log.push(`next:${name}`);
      if (name === 'A') source.next(B.event());
    });
    source.next(A.event());
    expect(seen).toEqual(['A', 'B']);
    expect(log).toEqual(['A:arm@0', 'next:A', 'B:arm@0', 'next:B']);
  });
});
