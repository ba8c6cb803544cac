import { firstValueFrom, filter, timeout } from 'rxjs';
import { credits } from '../../src/completion';
import type { AsyncEvent, WcBatch } from '../../src';
import { makePair, Pair, region, waitFor, sleep, itSoft, expectThrow, TEST_GID_INDEX, IS_SOFT } from '../support/device';
import { wcs, expectQuiet } from '../support/verbs-checks';

// The tests that overrun with real traffic run on every device. Where the
// kernel's rxe (seen on 6.1) differs from the soft device, the test asserts
// what rxe does, on both sides of an `IS_SOFT` branch:
// - rxe marks nothing on the CQ: polling it returns the N completions that
//   fit (the overrunning one and the flushed receives are lost) and
//   req_notify still succeeds; soft fails both with EIO.
// - rxe's responder does not acknowledge the SEND whose receive completion
//   overran, so the sender's last WR stays outstanding (retried) instead of
//   succeeding as on soft.
// Both raise CQ_ERR naming the CQ (rxe once more for each receive it then
// fails to flush into the full CQ), and CqOverrunError comes from it.

/**
 * a -> b, each QP with its own send and receive CQ; b's receive CQ is `depth`
 * deep and will overrun. b also has two sends outstanding towards a (a has no
 * receive posted and rnrRetry is 7, so they wait), to be flushed on b's
 * healthy send CQ.
 */
function setup(depth = 4): Pair & { n: number } {
  const p = makePair({ splitCqs: true, cqe: 64 });
  // Replace b's receive CQ with a shallow one: rebuild b on it.
  const shallow = p.ctx.createCq({ cqe: depth, channel: p.channel, context: 'shallow' });
  p.b.close();
  p.recvB.close();
  const b = p.pd.createQp({ sendCq: p.sendB, recvCq: shallow, cap: { maxSendWr: 64, maxRecvWr: 64, maxSendSge: 4, maxRecvSge: 4 } });
  p.a.native.modify({ qpState: 0 }, 1); // a back to RESET, to reconnect to the new b
  const gid = { gidIndex: TEST_GID_INDEX }; // RoCE: the AV needs a GRH
  p.a.connect(b.endpoint(gid), gid);
  b.connect(p.a.endpoint(gid), gid);
  return { ...p, b, recvB: shallow, cqB: p.sendB, n: shallow.cqe };
}

/** Posts everything that makes b's receive CQ take n + 1 completions at once. */
function overrun(p: Pair & { n: number }): void {
  const { n } = p;
  const dst = region(p.pd, 8 * (n + 3));
  const src = region(p.pd, 8, undefined, 1);
  for (let i = 0; i < n + 3; i++) p.b.postRecv({ wrId: 100 + i, sg: { mr: dst, offset: 8 * i, length: 8 } });
  p.b.postSend([
    { wrId: 200, sg: { mr: src } },
    { wrId: 201, sg: { mr: src } },
  ]);
  p.a.postSend(Array.from({ length: n + 1 }, (_, i) => ({ wrId: 300 + i, sg: { mr: src } })));
}

function nextAsync(p: Pair, type: string, ms = 3000): Promise<AsyncEvent> {
  return firstValueFrom(p.ctx.asyncEvents$.pipe(filter((e) => e.type === type), timeout({ first: ms })));
}

describe('CQ overrun', () => {
  it('a CQ of depth N receiving N+1 completions raises CQ_ERR naming that CQ', async () => {
    const p = setup();
    try {
      const cqErr = nextAsync(p, 'CQ_ERR');
      overrun(p);
      const e = await cqErr;
      expect(e.cq).toBe(p.recvB);
    } finally {
      p.close();
    }
  });

  it('cq.completions$ errors with CqOverrunError (subscribed before, and when subscribed after)', async () => {
    const p = setup();
    try {
      let error: (Error & { code?: string; cqe?: number }) | undefined;
      const got: WcBatch[] = [];
      const sub = p.recvB.completions$.subscribe({ next: (b) => got.push(b), error: (err) => (error = err) });
      overrun(p);
      expect(await waitFor(() => error !== undefined, 3000)).toBe(true);
      expect(error!.name).toBe('CqOverrunError');
      expect(error!.code).toBe('ERR_CQ_OVERRUN');
      expect(p.recvB.completions$.terminated).toBe('error');
      sub.unsubscribe();
      // Sticky: a later subscriber gets the same kind of error at once.
      let late: Error | undefined;
      p.recvB.completions$.subscribe({ error: (err) => (late = err) });
      expect(late?.name).toBe('CqOverrunError');
      expect(() => p.recvB.completions$.tryTake()).toThrow(expect.objectContaining({ name: 'CqOverrunError' }));
    } finally {
      p.close();
    }
  });

  it('after the overrun, poll and requestNotify on that CQ fail with EIO (soft) / poll gives only the N that fit (rxe)', async () => {
    const p = setup();
    try {
      const cqErr = nextAsync(p, 'CQ_ERR');
      overrun(p);
      await cqErr;
      if (IS_SOFT) {
        expectThrow(() => p.recvB.poll(), 'Error', { code: 'EIO', syscall: 'ibv_poll_cq' });
        expectThrow(() => p.recvB.requestNotify(), 'Error', { code: 'EIO', syscall: 'ibv_req_notify_cq' });
      } else {
        // b goes to ERR once its responder failed to complete into the full CQ.
        expect(await waitFor(() => p.b.state === 'ERR', 5000)).toBe(true);
        const kept = p.recvB.poll(p.n + 8).toArray();
        expect(kept.map((w) => [w.wrId, w.status])).toEqual(Array.from({ length: p.n }, (_, i) => [BigInt(100 + i), 'SUCCESS']));
        expect(p.recvB.poll().length).toBe(0); // the overrunning and the flushed receives are lost
        expect(() => p.recvB.requestNotify()).not.toThrow();
      }
      // Other CQs are unaffected.
      expect(() => p.sendA.requestNotify()).not.toThrow();
      expect(() => p.sendA.poll()).not.toThrow();
    } finally {
      p.close();
    }
  });

  it('the QPs on the overrun CQ go to ERR and flush their outstanding WRs with WR_FLUSH_ERR on their healthy CQ; every WR the device acknowledged is accounted for', async () => {
    const p = setup();
    try {
      const cqErr = nextAsync(p, 'CQ_ERR');
      overrun(p);
      await cqErr;
      expect(await waitFor(() => p.b.state === 'ERR', 5000)).toBe(true);
      expect(p.a.state).toBe('RTS'); // a's CQs are healthy
      const n = p.n;
      // soft: a's n + 1 sends were all delivered before the overrun, all
      // succeed. rxe: the first n succeed; the last one, whose receive
      // completion overran, is never acknowledged (see the top of the file).
      const delivered = IS_SOFT ? n + 1 : n;
      const fromA = await wcs(p.sendA, delivered);
      expect(fromA.map((w) => w.wrId)).toEqual(Array.from({ length: delivered }, (_, i) => BigInt(300 + i)));
      expect(fromA.every((w) => w.status === 'SUCCESS')).toBe(true);
      // b's two waiting sends flush on b's (healthy) send CQ.
      const fromB = await wcs(p.sendB, 2);
      expect(fromB.map((w) => [w.wrId, w.status])).toEqual([
        [200n, 'WR_FLUSH_ERR'],
        [201n, 'WR_FLUSH_ERR'],
      ]);
      // A send posted on b now flushes at once.
      const src = region(p.pd, 8);
      p.b.postSend({ wrId: 202, sg: { mr: src } });
      expect((await wcs(p.sendB, 1))[0]).toMatchObject({ wrId: 202n, status: 'WR_FLUSH_ERR' });
      if (IS_SOFT) await expectQuiet(p.sendA, 20); // rxe: a's last send is still being retried
      await expectQuiet(p.sendB, 0);
      await expectQuiet(p.recvA, 0);
    } finally {
      p.close();
    }
  });

  itSoft('faults.overrun(cq): CQ_ERR, completions$ errors, the QP goes to ERR and flushes its other queue', async () => {
    const p = makePair({ splitCqs: true, cqe: 64 });
    try {
      const src = region(p.pd, 8);
      const dst = region(p.pd, 8 * 4);
      for (let i = 0; i < 4; i++) p.b.postRecv({ wrId: 10 + i, sg: { mr: dst, offset: 8 * i, length: 8 } });
      p.b.postSend({ wrId: 20, sg: { mr: src } }); // waits: a has no receive
      await expectQuiet(p.sendB, 20);
      let error: Error | undefined;
      // Another consumer keeps the channel watched after completions$ errored.
      const keep = p.channel.events$.subscribe({ error: () => undefined });
      p.recvB.completions$.subscribe({ error: (err) => (error = err) });
      const cqErr = nextAsync(p, 'CQ_ERR');
      p.ctx.faults.overrun(p.recvB);
      expect((await cqErr).cq).toBe(p.recvB);
      expect(await waitFor(() => error !== undefined, 2000)).toBe(true);
      expect(error!.name).toBe('CqOverrunError');
      expect(p.b.state).toBe('ERR');
      expect((await wcs(p.sendB, 1))[0]).toMatchObject({ wrId: 20n, status: 'WR_FLUSH_ERR' });
      expectThrow(() => p.recvB.poll(), 'Error', { code: 'EIO' });
      expect(p.a.state).toBe('RTS');
    } finally {
      p.close();
    }
  });

  it('an overrun seen first by the fast path errors completions$ with CqOverrunError; the watcher delivery never throws', async () => {
    // The overrunning batch fires the armed CQ's event and raises CQ_ERR at
    // once; when libuv services the channel fd before the async fd, the fast
    // path's re-arm/poll fail (EIO) and it hands the native Error to
    // Cq.deliver. Several rounds, so both orders occur.
    const thrown: unknown[] = [];
    const onUncaught = (err: unknown) => thrown.push(err);
    process.on('uncaughtException', onUncaught);
    try {
      for (let round = 0; round < 12; round++) {
        const p = setup();
        try {
          let error: Error | undefined;
          p.recvB.completions$.subscribe({ error: (err) => (error = err) });
          const cqErr = nextAsync(p, 'CQ_ERR');
          overrun(p);
          await cqErr;
          expect(await waitFor(() => error !== undefined, 2000)).toBe(true);
          await sleep(5);
          expect(error?.name).toBe('CqOverrunError');
          expect(thrown.map((e) => String(e))).toEqual([]);
        } finally {
          p.close();
        }
      }
    } finally {
      process.off('uncaughtException', onUncaught);
    }
  });

  it('posting gated by credits never overruns: 2000 SENDs through CQs of depth 8', async () => {
    const p = makePair({ splitCqs: true, cqe: 8, cap: { maxSendWr: 16, maxRecvWr: 16 } });
    try {
      const total = 2000;
      const errors: AsyncEvent[] = [];
      const asyncSub = p.ctx.asyncEvents$.subscribe((e) => errors.push(e));
      const src = region(p.pd, 64, undefined, 9);
      const dst = region(p.pd, 64 * 8);
      // Receives are credit-gated by recvB's depth too: at most cqe posted at a time.
      const recvDepth = Math.min(p.recvB.cqe, p.b.cap.maxRecvWr);
      let recvPosted = 0;
      let received = 0;
      const postRecv = () => {
        while (recvPosted < total && recvPosted - received < recvDepth) {
          const slot = recvPosted % 8;
          p.b.postRecv({ wrId: recvPosted, sg: { mr: dst, offset: 64 * slot, length: 64 } });
          recvPosted++;
        }
      };
      const recvSub = p.recvB.completions$.subscribe((b) => {
        for (let i = 0; i < b.length; i++) expect(b.status[i]).toBe(0);
        received += b.length;
        postRecv();
      });
      postRecv();
      const sendCompletions$ = p.sendA.completions$;
      const credit = credits({ capacity: Math.min(p.sendA.cqe, p.a.cap.maxSendWr), release$: sendCompletions$ });
      let posted = 0;
      let completed = 0;
      let failed = 0;
      let maxInFlight = 0;
      const pump = () => {
        while (posted < total && credit.tryWaitForCompletion()) {
          p.a.postSend({ wrId: posted++, sg: { mr: src } });
          maxInFlight = Math.max(maxInFlight, credit.inFlight);
        }
      };
      const sendSub = sendCompletions$.subscribe((b) => {
        completed += b.length;
        for (let i = 0; i < b.length; i++) if (b.status[i] !== 0) failed++;
        pump();
      });
      pump();
      const ok = await waitFor(() => completed === total && received === total, 15000);
      sendSub.unsubscribe();
      recvSub.unsubscribe();
      asyncSub.unsubscribe();
      credit.close();
      expect({ ok, completed, received, failed }).toEqual({ ok: true, completed: total, received: total, failed: 0 });
      expect(maxInFlight).toBeLessThanOrEqual(p.sendA.cqe);
      expect(errors.filter((e) => e.type === 'CQ_ERR')).toEqual([]);
      expect(p.a.state).toBe('RTS');
      expect(p.b.state).toBe('RTS');
      await expectQuiet(p.sendA, 5); // every completion was consumed, nothing extra
    } finally {
      p.close();
    }
  });
});
