import { Subject } from 'rxjs';
import { HotSource, HotSourceDriver, HotSourceOptions } from '../../../src/observables/hot-source';
import { toTakeable } from '../../../src/observables/to-takeable';
import { BufferOverflowError } from '../../../src/core/errors';

/** A driver with no native side: items arrive through `push()` only. */
function make<T = number>(options?: HotSourceOptions<T>) {
  const calls: string[] = [];
  const driver: HotSourceDriver<T> = {
    start: () => void calls.push('start'),
    stop: () => void calls.push('stop'),
    pull: () => undefined,
  };
  return { calls, source: new HotSource<T>(driver, options) };
}

/** Takes until the source throws; returns what was taken and the error. */
function takeAll<T>(source: HotSource<T>): { items: T[]; error: unknown } {
  const items: T[] = [];
  for (;;) {
    try {
      const item = source.tryTake();
      if (item === undefined) return { items, error: undefined };
      items.push(item);
    } catch (error) {
      return { items, error };
    }
  }
}

/**
 * Issue 10, item 3: what a hot source had read before it failed stays
 * takeable, in order, and the error comes after the last of it.
 */
describe('HotSource: an error does not overtake buffered items', () => {
  const boom = new Error('CQ_ERR');

  it('should let tryTake() take every buffered item in order, then throw the error (sticky)', () => {
    const { source } = make();
    [1, 2, 3].forEach((v) => source.push(v));
    source.error(boom);
    expect(source.terminated).toBe('error');
    expect(source.pending).toBe(3);
    expect(takeAll(source)).toEqual({ items: [1, 2, 3], error: boom });
    expect(() => source.tryTake()).toThrow(boom);
  });

  it('should deliver the buffered items to a later subscriber, then the error', () => {
    const { source } = make();
    source.push(1);
    source.push(2);
    source.error(boom);
    const seen: unknown[] = [];
    source.subscribe({ next: (v) => seen.push(v), error: (e) => seen.push(e) });
    expect(seen).toEqual([1, 2, boom]);
    // The replay consumed them: the next subscriber gets the error alone.
    const late: unknown[] = [];
    source.subscribe({ next: (v) => late.push(v), error: (e) => late.push(e) });
    expect(late).toEqual([boom]);
  });

  it('should hand the buffered items to an async iterator, then reject with the error', async () => {
    const { source } = make();
    source.push(1);
    source.push(2);
    source.error(boom);
    const it = source[Symbol.asyncIterator]();
    expect(await it.next()).toEqual({ value: 1, done: false });
    expect(await it.next()).toEqual({ value: 2, done: false });
    await expect(it.next()).rejects.toBe(boom);
  });

  it('should keep what a paused source buffered, and stop the driver for good', () => {
    const { source, calls } = make({ highWaterMark: 2, lowWaterMark: 1 });
    const hold = source.retain();
    [1, 2, 3].forEach((v) => source.push(v)); // above the high mark: paused
    expect(source.isPaused).toBe(true);
    source.error(boom);
    expect(takeAll(source)).toEqual({ items: [1, 2, 3], error: boom });
    expect(source.isRunning).toBe(false);
    expect(calls).toEqual(['start', 'stop']); // no restart at the low mark after the error
    hold.unsubscribe();
  });

  it('should deliver items queued during a delivery before an error raised in the same delivery', () => {
    const { source } = make();
    const seen: unknown[] = [];
    source.subscribe({
      next: (v) => {
        seen.push(v);
        if (v === 1) {
          // The native side reads two more, then fails, while 1 is being delivered.
          source.push(2);
          source.push(3);
          source.error(boom);
        }
      },
      error: (e) => seen.push(e),
    });
    source.push(1);
    expect(seen).toEqual([1, 2, 3, boom]);
  });

  it("'error' overflow should keep every item read, the overflowing one included, ahead of the BufferOverflowError", () => {
    const { source } = make({ highWaterMark: 2, overflow: 'error' });
    [1, 2, 3].forEach((v) => source.push(v));
    expect(source.terminated).toBe('error');
    const { items, error } = takeAll(source);
    expect(items).toEqual([1, 2, 3]);
    expect(error).toBeInstanceOf(BufferOverflowError);
  });

  it('should let toTakeable() drain what it buffered before its source errored', () => {
    const subject = new Subject<number>();
    const t = toTakeable(subject);
    subject.next(1);
    subject.next(2);
    subject.error(boom);
    expect(takeAll(t)).toEqual({ items: [1, 2], error: boom });
  });

  it('should still error a current subscriber at once when nothing is buffered', () => {
    const { source } = make();
    const seen: unknown[] = [];
    source.subscribe({ next: (v) => seen.push(v), error: (e) => seen.push(e) });
    source.push(1);
    source.error(boom);
    expect(seen).toEqual([1, boom]);
    expect(() => source.tryTake()).toThrow(boom);
  });
});
