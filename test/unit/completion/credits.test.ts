import { Subject } from 'rxjs';
import { credits, Credits } from '../../../src/completion/credits';
import { WcBatch } from '../../../src/core/wc-batch';

const batch = (n: number) => WcBatch.from(Array.from({ length: n }, (_, i) => ({ wrId: i })));

describe('credits', () => {
  it('should start with capacity credits and refuse to go beyond', () => {
    const c = credits({ capacity: 2 });
    expect(c).toBeInstanceOf(Credits);
    expect(c.available).toBe(2);
    expect(c.tryWaitForCompletion()).toBe(true);
    expect(c.tryWaitForCompletion()).toBe(true);
    expect(c.tryWaitForCompletion()).toBe(false);
    expect(c.inFlight).toBe(2);
  });

  it('should return one credit per completion of release$', () => {
    const completions$ = new Subject<WcBatch>();
    const c = credits({ capacity: 4, release$: completions$ });
    expect(c.tryAcquire(3)).toBe(true);
    completions$.next(batch(2));
    expect(c.available).toBe(3);
    c.close();
    expect(completions$.observed).toBe(false);
  });

  it('should keep in-flight work requests within capacity (a simulated CQ never overruns)', () => {
    const depth = 8;
    const completions$ = new Subject<WcBatch>();
    const c = credits({ capacity: depth, release$: completions$ });
    let inCq = 0;
    let maxInCq = 0;
    let posted = 0;
    for (let round = 0; round < 100; round++) {
      while (posted < 500 && c.tryWaitForCompletion()) {
        posted++;
        maxInCq = Math.max(maxInCq, ++inCq);
      }
      const n = Math.min(inCq, 1 + (round % 5)); // the device completes some
      inCq -= n;
      completions$.next(batch(n));
    }
    expect(maxInCq).toBeLessThanOrEqual(depth);
    expect(posted).toBeGreaterThan(depth);
  });

  it('tryAcquire(n) should take all n or none', () => {
    const c = credits({ capacity: 3 });
    expect(c.tryAcquire(4)).toBe(false);
    expect(c.available).toBe(3);
    expect(c.tryAcquire(3)).toBe(true);
    expect(c.available).toBe(0);
  });

  it('should wake waiters when credits come back', async () => {
    const c = credits({ capacity: 1 });
    c.tryWaitForCompletion();
    const waited = c.waitForCompletion();
    c.release(1);
    await waited;
    expect(c.available).toBe(0);
  });

  it('should weigh items with weigh() (e.g. unsignaled sends) and accept numbers', () => {
    const release$ = new Subject<WcBatch | number>();
    const c = credits({ capacity: 10, release$, weigh: (x) => (typeof x === 'number' ? x : x.length * 4) });
    c.tryAcquire(10);
    release$.next(batch(1));
    release$.next(2);
    expect(c.available).toBe(6);
  });

  it('should reject releasing beyond capacity and bad numbers', () => {
    const c = credits({ capacity: 2 });
    expect(() => c.release(1)).toThrow(RangeError);
    expect(() => credits({ capacity: 0 })).toThrow(RangeError);
    expect(() => c.tryAcquire(0)).toThrow(RangeError);
  });
});
