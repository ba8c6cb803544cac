import { itSoft } from '../support/device';
import { lastJson, runFixture } from '../support/fixture-child';
import * as benchAddon from '../../bench/native/addon';
import { WC_OPCODES } from '../../src';

/** Runs one scenario of the hostile-bench fixture and checks that the child ended normally. */
async function scenario(name: string): Promise<Record<string, unknown>> {
  const r = await runFixture('bench-hostile.js', [name]);
  expect(r.signal).toBeNull();
  expect(r.stderr).not.toMatch(/terminate called|FATAL ERROR|rx-verbs: .*dropped/);
  expect(r.code).toBe(0);
  return lastJson(r);
}

// The native benchmark baselines run threads over objects JS owns (issue 16,
// item 7); under `npm run test:asan` these also show no use after close.
// The scenarios run on soft0 (the fixture opens it by name): they are
// about the threads, not the device.
describe('benchmark threads under hostile JavaScript', () => {
  // The baselines are their own addon (bench/native), not part of the product:
  // build it (incrementally) unless the run points at one (the sanitizer run).
  beforeAll(() => {
    if (process.env.RX_VERBS_BENCH_ADDON) return;
    if (benchAddon.build() !== 0) throw new Error(`could not build the bench addon: ${benchAddon.BUILD_HINT}`);
  }, 900_000);

  itSoft('a gidIndex that is not an integer in [0, 255] is refused before anything is made', () => {
    const bench = benchAddon.load();
    for (const gidIndex of [-1, 256, 1.5, 'x', null]) {
      expect(() => bench.ping({ device: 'soft0', iters: 1, warmup: 0, gidIndex } as never)).toThrow(/gidIndex/);
      expect(() => bench.drain({ device: 'soft0', total: 1, gidIndex } as never)).toThrow(/gidIndex/);
    }
  });

  // Not a thread, but the bench addon's: what a page fault and a system call
  // cost. On the host only, as every test here: the rxe guest does not build
  // the bench addon.
  itSoft('machineCosts measures a first-touch page fault and an empty system call: each a positive time under a millisecond', () => {
    const { pageFaultNs, syscallNs } = benchAddon.load().machineCosts();
    for (const ns of [pageFaultNs, syscallNs]) {
      expect(Number.isFinite(ns)).toBe(true);
      expect(ns).toBeGreaterThan(0);
      expect(ns).toBeLessThan(1e6);
    }
  });

  // The messages suite's C++ pair: its QPs have rnr_retry 0, so a credit
  // slip would fail a completion (the run's error) rather than slow it.
  itSoft('the native messages pair: rate moves every message on credits (CREDITs flow back), pingpong times every round trip; bad arguments are refused', () => {
    const bench = benchAddon.load();
    // Far more messages than the 70 receives either side posts.
    const rate = bench.messagesPair({ mode: 'rate', count: 3000, warmup: 200, size: 64 });
    expect(rate.error).toBeUndefined();
    expect(rate.messages).toBe(3000);
    expect(rate.seconds).toBeGreaterThan(0);
    expect(rate.creditMessages).toBeGreaterThan(0);
    const ping = bench.messagesPair({ mode: 'pingpong', count: 40, warmup: 4, size: 0 });
    expect(ping.error).toBeUndefined();
    const rtt = new Float64Array(ping.rtts!);
    expect(rtt.length).toBe(40);
    for (const us of rtt) expect(us).toBeGreaterThan(0);
    // The addon's errors come from the main realm, not jest's: checked by name.
    const refused = (args: unknown) => {
      try {
        bench.messagesPair(args as never);
      } catch (e) {
        return `${(e as Error).name}: ${(e as Error).message}`;
      }
      return 'accepted';
    };
    expect(refused({ mode: 'stream' })).toBe("RangeError: mode must be 'rate' or 'pingpong'");
    expect(refused({ size: 8193 })).toMatch(/^RangeError: size must be an integer in \[0, 8192\]/);
    expect(refused({ count: 0 })).toMatch(/^RangeError: count must be an integer/);
    expect(refused({ warmup: 'x' })).toMatch(/^TypeError: warmup must be a number/);
    expect(refused(5)).toBe('TypeError: args must be an object');
  });

  itSoft("the native ping's modes: event, poll and spin each time every round trip; another mode is a RangeError", () => {
    const bench = benchAddon.load();
    for (const mode of ['event', 'poll', 'spin'] as const) {
      const rtt = new Float64Array(bench.ping({ device: 'soft0', mode, iters: 50, warmup: 5 }));
      expect(rtt.length).toBe(50);
      for (const us of rtt) expect(us).toBeGreaterThan(0);
    }
    // The addon's errors come from the main realm, not jest's: checked by name.
    let err: Error | undefined;
    try {
      bench.ping({ device: 'soft0', mode: 'yield' as never, iters: 1, warmup: 0 });
    } catch (e) {
      err = e as Error;
    }
    expect(err?.name).toBe('RangeError');
    expect(err?.message).toMatch(/'event', 'poll' or 'spin'/);
  });

  itSoft("the loop consumer drains exactly `total` WCs asleep in Node's loop, and calls JS once", async () => {
    const bench = benchAddon.load();
    const calls: number[] = [];
    const handle = bench.loopCreate({ device: 'soft0', cqe: 64, callback: (wcs) => calls.push(wcs) });
    bench.loopStart(handle, { total: 5000, window: 64, burst: 16 });
    const until = Date.now() + 10_000;
    while (calls.length === 0 && Date.now() < until) await new Promise((r) => setTimeout(r, 5));
    await new Promise((r) => setTimeout(r, 20));
    const out = bench.loopClose(handle);
    expect(calls).toEqual([5000]);
    expect(out.wcs).toBe(5000);
    expect(out.posted).toBe(5000);
    expect(out.events).toBeGreaterThan(0);
    expect(out.wakeups).toBeGreaterThanOrEqual(out.events > 0 ? 1 : 0);
    expect(() => bench.loopCreate({ device: 'soft0', callback: 5 } as never)).toThrow(/callback must be a function/);
  });

  itSoft("the loop consumer with onBatch hands every poll's WCs to JS through the buffer JS keeps, and stops with an error if it is detached", async () => {
    const bench = benchAddon.load();
    const drain = (total: number, onEach?: (n: number, buf: ArrayBuffer) => void) =>
      new Promise<{ calls: number; seen: number; bad: number; out: ReturnType<typeof bench.loopClose> }>((resolve) => {
        const wcBuffer = new ArrayBuffer(3072);
        const status = new Uint32Array(wcBuffer, 2048, 256);
        let calls = 0;
        let seen = 0;
        let bad = 0;
        const handle = bench.loopCreate({
          device: 'soft0',
          cqe: 64,
          wcBuffer,
          onBatch: (n) => {
            calls++;
            seen += n;
            for (let i = 0; i < n; i++) if (status[i] !== 0) bad++;
            onEach?.(n, wcBuffer);
          },
          callback: () => setImmediate(() => resolve({ calls, seen, bad, out: bench.loopClose(handle) })),
        });
        bench.loopStart(handle, { total, window: 64, burst: 16 });
      });
    const ok = await drain(5000);
    expect(ok.out.error).toBeUndefined();
    expect(ok.seen).toBe(5000);
    expect(ok.out.wcs).toBe(5000);
    expect(ok.bad).toBe(0);
    // One call per poll that found WCs: at most 64 in flight, so at least 5000 / 64 calls.
    expect(ok.calls).toBeGreaterThanOrEqual(Math.ceil(5000 / 64));
    // Detached after the first call: the next poll finds no buffer and the run stops, reported.
    const detached = await drain(1e6, (_n, buf) => {
      if (buf.byteLength > 0) structuredClone(buf, { transfer: [buf] });
    });
    expect(detached.out.error).toMatch(/wcBuffer was detached/);
    expect(detached.calls).toBe(1);
    expect(() => bench.loopCreate({ device: 'soft0', callback: () => {}, onBatch: 1, wcBuffer: new ArrayBuffer(3072) } as never)).toThrow(/onBatch must be a function/);
    expect(() => bench.loopCreate({ device: 'soft0', callback: () => {}, onBatch: () => {}, wcBuffer: new ArrayBuffer(3071) })).toThrow(/wcBuffer must be an ArrayBuffer of at least 3072 bytes/);
    expect(() => bench.loopCreate({ device: 'soft0', callback: () => {}, onBatch: () => {} })).toThrow(/wcBuffer/);
  });

  itSoft("the event-mode ping asleep in Node's loop times every round trip, and refuses bad arguments", async () => {
    const bench = benchAddon.load();
    const run = (args: { iters: number; warmup: number }) =>
      new Promise<ArrayBuffer | string>((resolve) => {
        const handle = bench.pingLoopStart({ device: 'soft0', ...args, callback: (r) => setImmediate(() => {
          bench.pingLoopClose(handle);
          resolve(r);
        }) });
      });
    const r = await run({ iters: 200, warmup: 20 });
    // The addon's values come from the main realm, not jest's: no instanceof.
    expect(typeof r).not.toBe('string');
    const rtt = new Float64Array(r as ArrayBuffer);
    expect(rtt.length).toBe(200);
    for (const us of rtt) expect(us).toBeGreaterThan(0);
    // With onCompletion, JS hears of every completion: each round trip's receive (the sends are unsignaled).
    const heard: number[] = [];
    const withJs = await new Promise<ArrayBuffer | string>((resolve) => {
      const handle = bench.pingLoopStart({
        device: 'soft0',
        iters: 100,
        warmup: 10,
        onCompletion: (status, opcode, wrIdLow) => heard.push(status, opcode, wrIdLow),
        callback: (res) => setImmediate(() => {
          bench.pingLoopClose(handle);
          resolve(res);
        }),
      });
    });
    expect(new Float64Array(withJs as ArrayBuffer).length).toBe(100);
    expect(heard.length).toBe(3 * 110);
    for (let i = 0; i < heard.length; i += 3) {
      expect(heard[i]).toBe(0); // success
      expect(heard[i + 1]).toBe(WC_OPCODES.RECV);
      expect(heard[i + 2]).toBeLessThan(16); // a receive slot
    }
    // Closed from inside onCompletion: nothing more is called, nothing crashes.
    let after = 0;
    let closed = false;
    await new Promise<void>((resolve) => {
      const handle = bench.pingLoopStart({
        device: 'soft0',
        iters: 1000,
        warmup: 0,
        onCompletion: () => {
          if (closed) after++;
          closed = true;
          bench.pingLoopClose(handle);
          setTimeout(resolve, 50);
        },
        callback: () => after++,
      });
    });
    expect(after).toBe(0);
    expect(() => bench.pingLoopStart({ device: 'soft0', iters: 1, callback: () => {}, onCompletion: 'no' } as never)).toThrow(/onCompletion must be a function/);
    expect(() => bench.pingLoopStart({ device: 'soft0', iters: 1, callback: 'no' } as never)).toThrow(/callback must be a function/);
    expect(() => bench.pingLoopStart({ device: 'soft0', iters: 0, callback: () => {} })).toThrow(/iters/);
    expect(() => bench.pingLoopClose({} as never)).toThrow(/ping loop handle/);
  });

  itSoft("the producer's credit counter cannot be detached: credits keep flowing after a transfer", async () => {
    const out = await scenario('counter');
    expect(out.counterBytes).toBeGreaterThanOrEqual(64);
    expect(out.after).toBeGreaterThanOrEqual(2000);
  });

  itSoft('closing the context, PD or CQ under a running producer and echo is refused (EBUSY)', async () => {
    const out = await scenario('close');
    expect(out.errors).toEqual({ cq: 'EBUSY', pd: 'EBUSY', ctx: 'EBUSY' });
    expect(out.closedAfter).toBe(true);
    expect(out.naive).toBe(true); // the naive binding delivered alongside
    expect(out.loop).toBe(true); // and so did the loop consumer
  });

  itSoft('the handles keep the objects their threads use alive through GC, and release them when dropped', async () => {
    const out = await scenario('drop');
    expect(out.aliveWhileHeld).toEqual({ ctx: true, cq: true, pd: true });
    expect(out.live).toBe(0);
  });

  itSoft('the process exits cleanly with the threads running', async () => {
    const out = await scenario('exit');
    expect(out.exiting).toBe(true);
  });

  itSoft('workers running the threads are terminated cleanly', async () => {
    const out = await scenario('worker');
    expect(out.cycles).toBe(5);
  });
});
