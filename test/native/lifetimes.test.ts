import { execFile } from 'child_process';
import * as fs from 'fs';
import * as path from 'path';
import { Worker } from 'worker_threads';
import { openDevice } from '../../src';
import { TEST_DEVICE, IS_SOFT, CHILD_HANG_MS, makePair, region, sleep } from '../support/device';

const fixture = (name: string) => path.join(__dirname, '..', 'fixtures', name);
const openFds = () => fs.readdirSync('/proc/self/fd').length;
/**
 * Worker start/terminate cycles; the long run sets RX_VERBS_LIFETIME_CYCLES=1000.
 * Fewer on real devices: under emulation (the rxe VM) a worker start takes seconds.
 */
const CYCLES = Number(process.env.RX_VERBS_LIFETIME_CYCLES ?? (IS_SOFT ? 40 : 8));

describe('lifetimes', () => {
  it('closes in the safe order from the top and every close is idempotent', () => {
    const p = makePair();
    const mr = region(p.pd, 64);
    p.ctx.close();
    for (const o of [p.a, p.b, p.cqA, p.cqB, p.channel, mr, p.pd, p.ctx]) {
      expect(o.closed).toBe(true);
      expect(() => o.close()).not.toThrow();
    }
  });

  // This test and the worker cycles run fixtures (test/fixtures/) on the
  // device under test (they inherit RX_VERBS_TEST_DEVICE): on rxe0 the fds
  // are the kernel's uverbs and channel fds.
  it('releases GC-collected objects, keeps a subscribed channel alive, and leaks no fd', async () => {
    const out = await new Promise<string>((resolve, reject) =>
      execFile(process.execPath, ['--expose-gc', fixture('gc-release.js')], { timeout: CHILD_HANG_MS }, (err, stdout, stderr) =>
        err
          ? reject(new Error(`${err.message} (code ${err.code}, signal ${err.signal}, killed ${err.killed})\nstdout: ${stdout}\nstderr: ${stderr}`))
          : resolve(stdout),
      ),
    );
    const r = JSON.parse(out);
    expect(r.afterDrop.live).toBe(r.before.live);
    expect(r.afterDrop.fds).toBe(r.before.fds);
    expect(r.subscribed).toEqual({ alive: true, watching: true });
    expect(r.unsubscribed.alive).toBe(false);
    expect(r.unsubscribed.live).toBe(r.before.live);
    expect(r.unsubscribed.fds).toBe(r.before.fds);
  }, 2 * CHILD_HANG_MS);

  it(`survives ${CYCLES} worker start/terminate cycles during delivery without leaking fds`, async () => {
    const before = openFds();
    for (let i = 0; i < CYCLES; i++) {
      const w = new Worker(fixture('worker-traffic.js'), { workerData: { id: (i % 250) + 1, messages: 500, forever: true } });
      await new Promise((r) => w.once('message', r));
      if (i % 3 === 0) await sleep(1);
      await w.terminate();
    }
    await sleep(50);
    // Worker threads keep a few fds of their own briefly; allow a small slack, not growth per cycle.
    expect(openFds()).toBeLessThanOrEqual(before + 4);
  }, Math.max(120000, CYCLES * 400));

  it('opens and closes a device 1,000 times without leaking fds', () => {
    const before = openFds();
    for (let i = 0; i < 1000; i++) {
      const ctx = openDevice(TEST_DEVICE);
      const ch = ctx.createCompChannel();
      ctx.createCq({ cqe: 4, channel: ch });
      ctx.close();
    }
    expect(openFds()).toBe(before);
  });
});
