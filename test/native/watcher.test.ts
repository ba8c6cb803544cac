import { execFile } from 'child_process';
import * as path from 'path';
import { Worker } from 'worker_threads';
import { makePair, region, waitFor, itSoft, sleep, expectThrow, IS_SOFT, CHILD_HANG_MS } from '../support/device';
import { CqEvent, Cq, WcBatch } from '../../src';
import { scaled } from '../support/slow';

const fixture = (name: string) => path.join(__dirname, '..', 'fixtures', name);
/** Messages per worker: the real kernel under emulation moves far fewer per second than soft0. */
const WORKER_MESSAGES = IS_SOFT ? 2000 : 200;

function runNode(args: string[], timeoutMs: number): Promise<{ code: number | null; stdout: string; timedOut: boolean }> {
  return new Promise((resolve) => {
    const child = execFile(process.execPath, args, { timeout: timeoutMs }, (err, stdout) => {
      resolve({ code: child.exitCode, stdout, timedOut: !!err && (err as { killed?: boolean }).killed === true });
    });
  });
}

describe('channel watcher', () => {
  it('routes events from several CQs on one channel to the right CQ, with its context', async () => {
    const p = makePair();
    try {
      const send = region(p.pd, 64, undefined, 1);
      const recvA = region(p.pd, 64);
      const recvB = region(p.pd, 64);
      p.a.postRecv({ wrId: 1, sg: { mr: recvA } });
      p.b.postRecv({ wrId: 2, sg: { mr: recvB } });
      p.cqA.requestNotify();
      p.cqB.requestNotify();
      const got: CqEvent<Cq>[] = [];
      const sub = p.channel.events$.subscribe((e) => got.push(e as CqEvent<Cq>));
      // The second send goes once the first one's event arrived, so the order is known.
      p.a.postSend({ wrId: 10, sg: { mr: send }, signaled: false }); // -> recv on B
      expect(await waitFor(() => got.length === 1)).toBe(true);
      p.b.postSend({ wrId: 11, sg: { mr: send }, signaled: false }); // -> recv on A
      expect(await waitFor(() => got.length === 2)).toBe(true);
      sub.unsubscribe();
      expect(got.map((e) => e.context)).toEqual(['B', 'A']);
      expect(got[0].cq).toBe(p.cqB);
      expect(got[1].cq).toBe(p.cqA);
      expect(p.cqB.poll().at(0)).toMatchObject({ wrId: 2n, opcode: 'RECV', status: 'SUCCESS' });
      expect(p.cqA.poll().at(0)).toMatchObject({ wrId: 1n, opcode: 'RECV', status: 'SUCCESS' });
      for (const e of got) e.cq.ack(1);
    } finally {
      p.close();
    }
  });

  it('counts delivered events per CQ and acks exactly what it is told', async () => {
    const p = makePair();
    try {
      const send = region(p.pd, 8, undefined, 7);
      const recv = region(p.pd, 8 * 3);
      for (let i = 0; i < 3; i++) {
        p.b.postRecv({ wrId: i, sg: { mr: recv, offset: i * 8, length: 8 } });
      }
      const events: CqEvent<Cq>[] = [];
      for (let i = 0; i < 3; i++) {
        p.cqB.requestNotify();
        p.a.postSend({ wrId: 100 + i, sg: { mr: send }, signaled: false });
        expect(await waitFor(() => {
          const e = p.channel.tryGetEvent();
          if (e) events.push(e);
          return events.length === i + 1;
        })).toBe(true);
        expect(p.cqB.poll().length).toBe(1);
      }
      expect(p.cqB.unacked).toBe(3);
      expectThrow(() => p.cqB.ack(4), 'RangeError');
      p.cqB.ack(2);
      expect(p.cqB.unacked).toBe(1);
      p.cqB.ack(1);
      expect(p.cqB.stats).toMatchObject({ events: 3, acked: 3, ackCalls: 2, arms: 3 });
    } finally {
      p.close();
    }
  });

  it('refuses to destroy a CQ with unacked events (an error, not a hang) and destroys it once acked', async () => {
    const p = makePair();
    const send = region(p.pd, 8);
    const recv = region(p.pd, 8);
    p.b.postRecv({ wrId: 1, sg: { mr: recv } });
    p.cqB.requestNotify();
    p.a.postSend({ wrId: 2, sg: { mr: send }, signaled: false });
    expect(await waitFor(() => p.channel.tryGetEvent() !== undefined)).toBe(true);
    p.b.close();
    p.a.close();
    expect(() => p.cqB.close()).toThrow(expect.objectContaining({ code: 'EBUSY', syscall: 'ibv_destroy_cq' }));
    expect(p.cqB.closed).toBe(false);
    p.cqB.ack(1);
    p.cqB.close();
    expect(p.cqB.closed).toBe(true);
    p.close();
  });

  it('refuses to destroy a channel that CQs still use (EBUSY)', () => {
    const p = makePair();
    expect(() => p.channel.close()).toThrow(expect.objectContaining({ code: 'EBUSY' }));
    p.close();
    expect(p.channel.closed).toBe(true);
  });

  it('flushes the fast path\'s batched acks before destroying the CQ', async () => {
    const p = makePair({ cqe: 64 });
    const send = region(p.pd, 8);
    const recv = region(p.pd, 8 * 10);
    const batches: number[] = [];
    const sub = p.cqB.completions({ ackEvery: 1000 }).subscribe((b) => batches.push(b.length));
    for (let i = 0; i < 10; i++) {
      p.b.postRecv({ wrId: i, sg: { mr: recv, offset: i * 8, length: 8 } });
      p.a.postSend({ wrId: i, sg: { mr: send }, signaled: false });
      await waitFor(() => batches.reduce((x, y) => x + y, 0) === i + 1);
    }
    expect(batches.reduce((x, y) => x + y, 0)).toBe(10);
    expect(p.cqB.unacked).toBeGreaterThan(0); // batched, not yet acked
    sub.unsubscribe();
    p.b.close();
    p.cqB.close(); // must not refuse: the native side flushes its own acks
    expect(p.cqB.closed).toBe(true);
    p.close();
  });

  it('serves several fast-path CQs of one channel in one wakeup, each with its own completions', async () => {
    const p = makePair();
    try {
      const send = region(p.pd, 8);
      const recv = region(p.pd, 8 * 64);
      // Per CQ: the wakeup each batch came in, and its wr_ids.
      const seen = { A: [] as { wakeup: number; ids: number[] }[], B: [] as { wakeup: number; ids: number[] }[] };
      const take = (k: 'A' | 'B') => (b: WcBatch) => {
        const ids: number[] = [];
        for (let i = 0; i < b.length; i++) ids.push(b.wrIdLow(i));
        seen[k].push({ wakeup: p.channel.wakeups.total, ids });
      };
      const subs = [p.cqA.completions$.subscribe(take('A')), p.cqB.completions$.subscribe(take('B'))];
      const count = (batches: { ids: number[] }[]) => batches.reduce((n, x) => n + x.ids.length, 0);
      const sameWakeup = () => seen.A.some((a) => seen.B.some((b) => b.wakeup === a.wakeup));
      // Both CQs get a completion before JS runs again, so one wakeup finds
      // both; the device may be slow to make them, so it is tried a few
      // times with longer waits.
      const block = new Int32Array(new SharedArrayBuffer(4));
      for (let round = 0; round < 5 && !sameWakeup(); round++) {
        p.a.postRecv({ wrId: 100 + round, sg: { mr: recv, offset: round * 8, length: 8 } });
        p.b.postRecv({ wrId: 200 + round, sg: { mr: recv, offset: (32 + round) * 8, length: 8 } });
        p.a.postSend({ wrId: 1, sg: { mr: send }, signaled: false }); // -> a receive on B
        p.b.postSend({ wrId: 2, sg: { mr: send }, signaled: false }); // -> a receive on A
        Atomics.wait(block, 0, 0, scaled(50) << round);
        expect(await waitFor(() => count(seen.A) === round + 1 && count(seen.B) === round + 1)).toBe(true);
      }
      for (const s of subs) s.unsubscribe();
      expect(sameWakeup()).toBe(true);
      const rounds = count(seen.A);
      expect(seen.A.flatMap((x) => x.ids)).toEqual(Array.from({ length: rounds }, (_, r) => 100 + r));
      expect(seen.B.flatMap((x) => x.ids)).toEqual(Array.from({ length: rounds }, (_, r) => 200 + r));
    } finally {
      p.close();
    }
  });

  itSoft('tolerates spurious wakeups and empty events', async () => {
    const p = makePair();
    try {
      const seen: number[] = [];
      const sub = p.cqB.completions$.subscribe((b) => seen.push(b.length));
      p.ctx.faults.spuriousWakeup(p.channel);
      expect(await waitFor(() => p.channel.wakeups.total >= 1, 1000)).toBe(true);
      p.ctx.faults.emptyEvent(p.cqB);
      expect(await waitFor(() => p.channel.wakeups.total >= 2, 1000)).toBe(true);
      expect(p.cqB.stats.events).toBe(1);
      expect(seen).toEqual([]);
      const send = region(p.pd, 8);
      const recv = region(p.pd, 8);
      p.b.postRecv({ wrId: 5, sg: { mr: recv } });
      p.a.postSend({ wrId: 6, sg: { mr: send }, signaled: false });
      expect(await waitFor(() => seen.length === 1)).toBe(true);
      expect(p.channel.wakeups.spurious).toBeGreaterThanOrEqual(1);
      sub.unsubscribe();
    } finally {
      p.close();
    }
  });

  it('leaves the channel fd clear once the events are read: an idle watcher does not wake', async () => {
    const p = makePair({ cqe: 256 });
    try {
      const send = region(p.pd, 8);
      const recv = region(p.pd, 8 * 32);
      let got = 0;
      const sub = p.cqB.completions$.subscribe((b) => {
        got += b.length;
      });
      // Bursts that race the device's eventfd writes against the watcher's
      // reads (the writes happen outside the channel's lock).
      for (let round = 1; round <= 40; round++) {
        for (let i = 0; i < 32; i++) p.b.postRecv({ wrId: i, sg: { mr: recv, offset: i * 8, length: 8 } });
        for (let i = 0; i < 32; i++) p.a.postSend({ wrId: i, sg: { mr: send }, signaled: false });
        expect(await waitFor(() => got === round * 32)).toBe(true);
      }
      await sleep(50);
      const idle = p.channel.wakeups.total;
      await sleep(300);
      // A fd left readable over an empty queue would wake the watcher on
      // every loop turn.
      expect(p.channel.wakeups.total - idle).toBeLessThanOrEqual(1);
      expect(p.channel.tryGetEvent()).toBeUndefined();
      sub.unsubscribe();
    } finally {
      p.close();
    }
  });

  // The child-process and worker tests below run fixtures (test/fixtures/) on
  // the device under test (they inherit RX_VERBS_TEST_DEVICE): on rxe0 the
  // channel fd is the kernel's, and its handles must let go the same way.
  it('lets the process exit once nothing is subscribed or armed', async () => {
    const r = await runNode([fixture('exit-when-idle.js'), 'unsubscribed'], CHILD_HANG_MS);
    expect(r.timedOut).toBe(false);
    expect(r.stdout).toContain('exit');
    const armed = await runNode([fixture('exit-when-idle.js'), 'armed-unread'], CHILD_HANG_MS);
    expect(armed.timedOut).toBe(false);
    const unref = await runNode([fixture('exit-when-idle.js'), 'subscribed-unref'], CHILD_HANG_MS);
    expect(unref.timedOut).toBe(false);
  }, 4 * CHILD_HANG_MS);

  it('keeps the process alive while subscribed', async () => {
    const r = await runNode([fixture('exit-when-idle.js'), 'subscribed'], CHILD_HANG_MS);
    expect(r.stdout).toBe('timer\nexit\n');
  }, 2 * CHILD_HANG_MS);

  it('runs in four worker threads at once', async () => {
    const results = await Promise.all(
      [1, 2, 3, 4].map(
        (id) =>
          new Promise<{ id: number; received: number }>((resolve, reject) => {
            const w = new Worker(fixture('worker-traffic.js'), { workerData: { id, messages: WORKER_MESSAGES } });
            w.on('message', (m) => { if (!m.started) resolve(m); });
            w.on('error', reject);
          }),
      ),
    );
    expect(results.sort((x, y) => x.id - y.id)).toEqual([1, 2, 3, 4].map((id) => ({ id, received: WORKER_MESSAGES })));
  }, CHILD_HANG_MS);

  it('survives worker.terminate() while the watcher is busy delivering', async () => {
    for (let round = 0; round < 5; round++) {
      const w = new Worker(fixture('worker-traffic.js'), { workerData: { id: round + 1, messages: 1000, forever: true } });
      await new Promise((r) => w.once('message', r));
      await sleep(20 + round * 5);
      const code = await w.terminate();
      expect(code).toBe(1);
    }
  }, 5 * CHILD_HANG_MS);
});
