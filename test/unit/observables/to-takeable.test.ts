import { of, range, Subject, tap, throwError } from 'rxjs';
import { HotSource } from '../../../src/observables/hot-source';
import { toTakeable } from '../../../src/observables/to-takeable';
import { toTakeable as toTakeableOperator } from '../../../src/operators';
import { BufferOverflowError } from '../../../src/core/errors';

describe('toTakeable', () => {
  it('should subscribe at once and let tryTake take one item at a time', () => {
    const subject = new Subject<number>();
    const t = toTakeable(subject);
    expect(subject.observed).toBe(true);
    expect(t.tryTake()).toBeUndefined();
    subject.next(1);
    subject.next(2);
    expect(t.pending).toBe(2);
    expect(t.tryTake()).toBe(1);
    expect(t.pending).toBe(1);
    expect(t.tryTake()).toBe(2);
    expect(t.tryTake()).toBeUndefined();
    t.close();
  });

  it('should keep buffered items takeable after the source completes', () => {
    const t = toTakeable(of(1, 2, 3));
    expect(t.closed).toBe(true);
    expect([t.tryTake(), t.tryTake(), t.tryTake(), t.tryTake()]).toEqual([1, 2, 3, undefined]);
  });

  it('should throw the source error from tryTake', () => {
    const boom = new Error('boom');
    const t = toTakeable(throwError(() => boom));
    expect(() => t.tryTake()).toThrow(boom);
  });

  it('should unsubscribe from the source on close()/unsubscribe() and keep what it buffered', () => {
    const subject = new Subject<number>();
    const t = toTakeable(subject);
    subject.next(1);
    t.unsubscribe();
    expect(subject.observed).toBe(false);
    expect(t.closed).toBe(true);
    subject.next(2);
    expect(t.tryTake()).toBe(1);
    expect(t.tryTake()).toBeUndefined();
    t.close(); // idempotent
  });

  it("should default to 'error' on overflow", () => {
    const subject = new Subject<number>();
    const t = toTakeable(subject, { highWaterMark: 2 });
    subject.next(1);
    subject.next(2);
    subject.next(3);
    expect([t.tryTake(), t.tryTake(), t.tryTake()]).toEqual([1, 2, 3]); // what was read stays takeable
    expect(() => t.tryTake()).toThrow(BufferOverflowError);
    expect(subject.observed).toBe(false);
  });

  it("should apply 'dropOldest' with onDropped", () => {
    const dropped: number[] = [];
    const t = toTakeable(of(1, 2, 3, 4), { highWaterMark: 2, overflow: 'dropOldest', onDropped: (v) => dropped.push(v) });
    expect(dropped).toEqual([1, 2]);
    expect([t.tryTake(), t.tryTake()]).toEqual([3, 4]);
  });

  it("should 'pause' an rx-verbs hot source losing nothing: unsubscribe above the high mark, resubscribe at the low", () => {
    const native: number[] = Array.from({ length: 20 }, (_, i) => i);
    let running = false;
    const calls: string[] = [];
    const hot: HotSource<number> = new HotSource<number>({
      start() {
        calls.push('start');
        running = true;
        while (running && native.length > 0) hot.push(native.shift()!);
      },
      stop() {
        calls.push('stop');
        running = false;
      },
      pull: () => native.shift(),
    });
    const t = toTakeable(hot, { highWaterMark: 4, lowWaterMark: 1, overflow: 'pause' });
    expect(t.pending).toBe(5);
    const seen: number[] = [];
    for (let v = t.tryTake(); v !== undefined; v = t.tryTake()) seen.push(v);
    expect(seen).toEqual(Array.from({ length: 20 }, (_, i) => i));
    expect(calls.filter((c) => c === 'stop').length).toBeGreaterThan(1);
    t.close();
    expect(hot.isRunning).toBe(false);
  });

  it('should stop a synchronous source that fills the buffer while it is being subscribed', () => {
    let emitted = 0;
    const t = toTakeable(range(0, 1_000_000).pipe(tap(() => emitted++)), { highWaterMark: 2, overflow: 'pause' });
    expect(t.pending).toBe(3); // kept the one above the mark, then stopped the source at once
    expect(emitted).toBe(3);
    t.close();
  });

  it('should work as an operator, and be a HotSource (subscribe / iterate)', async () => {
    const subject = new Subject<number>();
    const t = toTakeableOperator<number>()(subject);
    expect(t).toBeInstanceOf(HotSource);
    subject.next(1);
    const seen: number[] = [];
    t.subscribe((v) => seen.push(v));
    subject.next(2);
    expect(seen).toEqual([1, 2]);
    subject.complete();
    const it = t[Symbol.asyncIterator]();
    await expect(it.next()).resolves.toEqual({ value: undefined, done: true });
  });
});
