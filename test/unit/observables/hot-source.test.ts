import { Subscription, take } from 'rxjs';
import { HotSource, HotSourceDriver, HotSourceOptions } from '../../../src/observables/hot-source';
import { spinTake } from '../../../src/observables/spin-take';
import { BufferOverflowError } from '../../../src/core/errors';
import { scaled } from '../../support/slow';

/** A driver that records start/stop and serves pull() from a "native" queue. */
function makeDriver<T>(native: T[] = []) {
  const calls: string[] = [];
  const driver: HotSourceDriver<T> & { calls: string[]; native: T[] } = {
    calls,
    native,
    start: jest.fn(() => void calls.push('start')),
    stop: jest.fn(() => void calls.push('stop')),
    pull: jest.fn(() => native.shift()),
  };
  return driver;
}

function make<T = number>(options?: HotSourceOptions<T>, native: T[] = []) {
  const driver = makeDriver<T>(native);
  return { driver, source: new HotSource<T>(driver, options) };
}

describe('HotSource', () => {
  describe('options', () => {
    it('should reject bad water marks with RangeError', () => {
      const d = makeDriver();
      expect(() => new HotSource(d, { highWaterMark: 0 })).toThrow(RangeError);
      expect(() => new HotSource(d, { highWaterMark: 1.5 })).toThrow(RangeError);
      expect(() => new HotSource(d, { highWaterMark: NaN })).toThrow(RangeError);
      expect(() => new HotSource(d, { highWaterMark: 4, lowWaterMark: 4 })).toThrow(RangeError);
      expect(() => new HotSource(d, { highWaterMark: 4, lowWaterMark: -1 })).toThrow(RangeError);
    });

    it('should require onDropped for the drop strategies, and a known strategy (TypeError)', () => {
      const d = makeDriver();
      expect(() => new HotSource(d, { overflow: 'dropOldest' })).toThrow(TypeError);
      expect(() => new HotSource(d, { overflow: 'dropNewest' })).toThrow(TypeError);
      expect(() => new HotSource(d, { overflow: 'nope' as never })).toThrow(TypeError);
      expect(() => new HotSource(d, { overflow: 'dropNewest', onDropped: () => undefined })).not.toThrow();
    });
  });

  describe('demand', () => {
    it('should start the driver on the first subscriber and stop it after the last', () => {
      const { driver, source } = make();
      expect(driver.calls).toEqual([]);
      const s1 = source.subscribe();
      const s2 = source.subscribe();
      expect(driver.calls).toEqual(['start']);
      expect(source.isRunning).toBe(true);
      s1.unsubscribe();
      expect(driver.calls).toEqual(['start']);
      s2.unsubscribe();
      expect(driver.calls).toEqual(['start', 'stop']);
      expect(source.isRunning).toBe(false);
    });

    it('should hold demand without a subscriber through retain()', () => {
      const { driver, source } = make();
      const hold = source.retain();
      expect(driver.calls).toEqual(['start']);
      hold.unsubscribe();
      hold.unsubscribe(); // idempotent
      expect(driver.calls).toEqual(['start', 'stop']);
    });

    it('should error the source when the driver fails to start', () => {
      const boom = new Error('arm failed');
      const source = new HotSource<number>({ start: () => { throw boom; }, stop: () => undefined, pull: () => undefined });
      const errors: unknown[] = [];
      source.subscribe({ error: (e) => errors.push(e) });
      expect(errors).toEqual([boom]);
      expect(source.terminated).toBe('error');
      expect(source.isRunning).toBe(false);
    });
  });

  describe('push', () => {
    it('should multicast to every subscriber present, synchronously', () => {
      const { source } = make();
      const a: number[] = [];
      const b: number[] = [];
      source.subscribe((v) => a.push(v));
      source.push(1);
      source.subscribe((v) => b.push(v));
      source.push(2);
      expect(a).toEqual([1, 2]);
      expect(b).toEqual([2]);
      expect(source.pending).toBe(0);
    });

    it('should deliver an item pushed during delivery after the current one, to all, in order', () => {
      const { source } = make();
      const log: string[] = [];
      source.subscribe((v) => {
        log.push(`a${v}`);
        if (v === 1) {
          source.push(2);
          source.push(3);
        }
      });
      source.subscribe((v) => log.push(`b${v}`));
      source.push(1);
      expect(log).toEqual(['a1', 'b1', 'a2', 'b2', 'a3', 'b3']);
    });

    it('should not deliver to a subscriber that unsubscribed during the delivery', () => {
      const { source } = make();
      const log: string[] = [];
      let sub2: Subscription | undefined = undefined;
      source.subscribe((v) => {
        log.push(`a${v}`);
        sub2?.unsubscribe();
      });
      sub2 = source.subscribe((v) => log.push(`b${v}`));
      source.push(1);
      expect(log).toEqual(['a1']);
    });

    it('should buffer while nobody subscribes, and replay to the next subscriber first', () => {
      const { source } = make();
      source.push(1);
      source.push(2);
      expect(source.pending).toBe(2);
      const seen: number[] = [];
      source.subscribe((v) => {
        seen.push(v);
        if (v === 1) source.push(3); // live, during the replay: after the buffered ones
      });
      source.push(4);
      expect(seen).toEqual([1, 2, 3, 4]);
      expect(source.pending).toBe(0);
    });

    it('should leave the rest of the buffer when a replayed subscriber unsubscribes', () => {
      const { source } = make();
      [1, 2, 3].forEach((v) => source.push(v));
      const seen: number[] = [];
      source.pipe(take(1)).subscribe((v) => seen.push(v));
      expect(seen).toEqual([1]);
      const rest: number[] = [];
      for (let v = source.tryTake(); v !== undefined; v = source.tryTake()) rest.push(v);
      expect([...seen, ...rest]).toEqual([1, 2, 3]);
    });
  });

  describe('tryTake', () => {
    it('should take from the buffer, then pull once from the driver when empty', () => {
      const { driver, source } = make<number>({}, [10, 11]);
      source.push(1);
      expect(source.pending).toBe(1);
      expect(source.tryTake()).toBe(1);
      expect(driver.pull).not.toHaveBeenCalled();
      expect(source.tryTake()).toBe(10);
      expect(driver.pull).toHaveBeenCalledTimes(1);
      expect(source.tryTake()).toBe(11);
      expect(source.tryTake()).toBeUndefined();
      expect(driver.pull).toHaveBeenCalledTimes(3);
    });

    it('should never block: returns undefined at once when nothing is there', () => {
      const { driver, source } = make();
      // Synchronous, after one non-blocking read: no retry, no wait for the driver to start.
      expect(source.tryTake()).toBeUndefined();
      expect(driver.pull).toHaveBeenCalledTimes(1);
      expect(driver.calls).toEqual([]);
    });

    it('should take items exactly once with a subscriber present too', () => {
      const { source } = make<number>({}, [7]);
      const seen: number[] = [];
      source.subscribe((v) => seen.push(v));
      expect(source.tryTake()).toBe(7); // native read: goes to the taker only
      source.push(8);
      expect(seen).toEqual([8]);
      expect(source.tryTake()).toBeUndefined();
    });
  });

  describe('terminal states', () => {
    it('should complete current subscribers and, after the buffer, later ones', () => {
      const { driver, source } = make();
      const log: string[] = [];
      source.subscribe({ next: (v) => log.push(`a${v}`), complete: () => log.push('a|') });
      source.push(1);
      source.complete();
      expect(log).toEqual(['a1', 'a|']);
      expect(driver.calls).toEqual(['start', 'stop']);
      source.push(2); // ignored after a terminal state
      source.subscribe({ next: (v) => log.push(`b${v}`), complete: () => log.push('b|') });
      expect(log).toEqual(['a1', 'a|', 'b|']);
    });

    it('should keep buffered items takeable after complete, then return undefined without pulling', () => {
      const { driver, source } = make<number>({}, [99]);
      source.push(1);
      source.push(2);
      source.complete();
      const log: string[] = [];
      source.subscribe({ next: (v) => log.push(`${v}`), complete: () => log.push('|') });
      expect(log).toEqual(['1', '2', '|']);
      expect(source.tryTake()).toBeUndefined();
      expect(driver.pull).not.toHaveBeenCalled();
    });

    it('should complete after re-entrant items when completed during delivery', () => {
      const { source } = make();
      const log: string[] = [];
      source.subscribe({
        next: (v) => {
          log.push(`${v}`);
          if (v === 1) {
            source.push(2);
            source.complete();
          }
        },
        complete: () => log.push('|'),
      });
      source.push(1);
      expect(log).toEqual(['1', '2', '|']);
    });

    it('should make errors sticky: subscribers, later subscribers, tryTake, iterators', async () => {
      const { driver, source } = make();
      const boom = new Error('CQ_ERR');
      const errors: unknown[] = [];
      source.subscribe({ error: (e) => errors.push(e) });
      source.push(1);
      source.error(boom);
      source.error(new Error('second'));
      source.complete();
      source.subscribe({ error: (e) => errors.push(e) });
      expect(errors).toEqual([boom, boom]);
      expect(() => source.tryTake()).toThrow(boom);
      await expect(source[Symbol.asyncIterator]().next()).rejects.toBe(boom);
      expect(source.terminated).toBe('error');
      expect(driver.calls).toEqual(['start', 'stop']);
    });

    it('should keep the buffer on error: items first, then the error', () => {
      const { source } = make();
      source.push(1);
      source.error(new Error('x'));
      expect(source.pending).toBe(1);
      expect(source.tryTake()).toBe(1);
      expect(() => source.tryTake()).toThrow('x');
    });
  });

  describe('overflow', () => {
    it("'error' should fail the source with BufferOverflowError at the high mark", () => {
      const { source } = make({ highWaterMark: 2, overflow: 'error' });
      source.push(1);
      source.push(2);
      source.push(3);
      expect(source.terminated).toBe('error');
      expect([source.tryTake(), source.tryTake(), source.tryTake()]).toEqual([1, 2, 3]); // nothing read is lost
      let caught: unknown;
      try {
        source.tryTake();
      } catch (e) {
        caught = e;
      }
      expect(caught).toBeInstanceOf(BufferOverflowError);
      expect(caught).toBeInstanceOf(RangeError);
      expect((caught as BufferOverflowError).code).toBe('ERR_BUFFER_OVERFLOW');
    });

    it("'dropOldest' should drop the oldest buffered item into onDropped", () => {
      const dropped: number[] = [];
      const { source } = make<number>({ highWaterMark: 2, overflow: 'dropOldest', onDropped: (v) => dropped.push(v) });
      [1, 2, 3, 4].forEach((v) => source.push(v));
      expect(dropped).toEqual([1, 2]);
      expect([source.tryTake(), source.tryTake()]).toEqual([3, 4]);
    });

    it("'dropNewest' should drop the arriving item into onDropped", () => {
      const dropped: number[] = [];
      const { source } = make<number>({ highWaterMark: 2, overflow: 'dropNewest', onDropped: (v) => dropped.push(v) });
      [1, 2, 3, 4].forEach((v) => source.push(v));
      expect(dropped).toEqual([3, 4]);
      expect([source.tryTake(), source.tryTake()]).toEqual([1, 2]);
    });

    it("'pause' should keep every item, stop above the high mark and start at the low mark", () => {
      const { driver, source } = make<number>({ highWaterMark: 4, lowWaterMark: 1 });
      const marks: string[] = [];
      (driver.start as jest.Mock).mockImplementation(() => marks.push(`start@${source.pending}`));
      (driver.stop as jest.Mock).mockImplementation(() => marks.push(`stop@${source.pending}`));
      const hold = source.retain();
      for (let i = 1; i <= 6; i++) source.push(i); // 5 and 6 arrive after the stop: kept
      expect(source.isPaused).toBe(true);
      expect(source.pending).toBe(6);
      const taken: number[] = [];
      for (let i = 0; i < 5; i++) taken.push(source.tryTake()!);
      expect(source.isPaused).toBe(false);
      expect(marks).toEqual(['start@0', 'stop@5', 'start@1']);
      expect(taken).toEqual([1, 2, 3, 4, 5]);
      hold.unsubscribe();
    });
  });

  describe('async iterator', () => {
    it('should keep the driver started while iterating, and stop it on return', async () => {
      const { driver, source } = make();
      const it = source[Symbol.asyncIterator]();
      expect(driver.calls).toEqual([]);
      const next = it.next();
      expect(driver.calls).toEqual(['start']);
      source.push(1);
      await expect(next).resolves.toEqual({ value: 1, done: false });
      const parked = it.next();
      await it.return!();
      await expect(parked).resolves.toEqual({ value: undefined, done: true });
      expect(driver.calls).toEqual(['start', 'stop']);
      await expect(it.next()).resolves.toEqual({ value: undefined, done: true });
    });

    it('should end a for-await loop on complete, after the buffered items', async () => {
      const { source } = make();
      setImmediate(() => {
        source.push(1);
        source.push(2);
        source.complete();
      });
      const seen: number[] = [];
      for await (const v of source) seen.push(v);
      expect(seen).toEqual([1, 2]);
    });

    it('should lose nothing with a consumer slower than the producer, pausing at the marks', async () => {
      const total = 300;
      const hwm = 16;
      const lwm = 4;
      let produced = 0;
      let running = false;
      const marks: Array<{ call: 'start' | 'stop'; pending: number }> = [];
      let maxPending = 0;
      const source: HotSource<number> = new HotSource<number>(
        {
          start() {
            marks.push({ call: 'start', pending: source.pending });
            running = true;
            const produce = () => {
              // A fast native side: a burst of 10 per tick, honouring stop at once.
              for (let i = 0; i < 10 && running && produced < total; i++) {
                source.push(produced++);
                maxPending = Math.max(maxPending, source.pending);
              }
              if (produced === total) source.complete();
              else if (running) setImmediate(produce);
            };
            setImmediate(produce);
          },
          stop() {
            marks.push({ call: 'stop', pending: source.pending });
            running = false;
          },
          pull: () => undefined,
        },
        { highWaterMark: hwm, lowWaterMark: lwm },
      );
      const seen: number[] = [];
      for await (const v of source) {
        seen.push(v);
        await new Promise((r) => setImmediate(r)); // slower than the producer
        await new Promise((r) => setImmediate(r));
      }
      expect(seen).toEqual(Array.from({ length: total }, (_, i) => i));
      const stops = marks.filter((m) => m.call === 'stop').slice(0, -1); // the last: complete
      const restarts = marks.filter((m) => m.call === 'start').slice(1);
      expect(stops.length).toBeGreaterThan(2);
      expect(stops.every((m) => m.pending === hwm + 1)).toBe(true); // stopped just above the high mark
      expect(restarts.every((m) => m.pending <= lwm)).toBe(true); // started at the low mark
      expect(maxPending).toBe(hwm + 1);
    });
  });

  describe('take / spinTake', () => {
    it('spinTake should return a pulled item, or undefined after about spinUs', () => {
      const native = [5];
      const { source } = make<number>({}, native);
      expect(spinTake(source, 0)).toBe(5);
      const t0 = process.hrtime.bigint();
      expect(spinTake(source, 2000)).toBeUndefined();
      const us = Number(process.hrtime.bigint() - t0) / 1000;
      expect(us).toBeGreaterThanOrEqual(2000); // it spins at least that long
      expect(us).toBeLessThan(scaled(200_000)); // and then gives up (a sanity bound, scaled)
      expect(() => spinTake(source, -1)).toThrow(RangeError);
    });

    it('spinTake should pick up an item that appears while spinning', () => {
      let polls = 0;
      const source = new HotSource<number>({ start() {}, stop() {}, pull: () => (++polls === 50 ? 42 : undefined) });
      expect(spinTake(source, 1_000_000)).toBe(42);
      expect(polls).toBe(50);
    });

    it('take() should spin, then park with the driver started until an item comes', async () => {
      const { driver, source } = make<number>({}, [1]);
      await expect(source.take({ spinUs: 10 })).resolves.toBe(1);
      expect(driver.calls).toEqual([]); // got it while spinning: never armed
      const parked = source.take({ spinUs: 10 });
      expect(driver.calls).toEqual(['start']);
      source.push(2);
      await expect(parked).resolves.toBe(2);
      expect(driver.calls).toEqual(['start', 'stop']);
      const ending = source.take();
      source.complete();
      await expect(ending).resolves.toBeUndefined();
    });
  });
});
