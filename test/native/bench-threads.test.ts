import { itSoft } from '../support/device';
import { lastJson, runFixture } from '../support/fixture-child';
import * as benchAddon from '../../bench/native/addon';

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
