/**
 * Fault injection (soft devices): what a user sees when the device
 * misbehaves, and that nothing is lost or leaked meanwhile. Complements
 * arm.test.ts (single arm races, duplicate events), cq-overrun.test.ts and
 * async-events.test.ts (DEVICE_FATAL without traffic).
 */
import * as fs from 'fs';
import { Subscription, take } from 'rxjs';
import {
  Context,
  Cq,
  CqEvent,
  WcBatch,
  WC_STATUS_NAMES,
  WcStatus,
  ackEvents,
  createSoftDevice,
  drainCq,
  failOnError,
  openDevice,
  rearm,
} from '../../src';
import { binding } from '../../src/native/binding';
import { IS_SOFT, Pair, expectThrow, makePair, region, waitFor } from '../support/device';
import { MARKER, expectFreshPairWorks, roundTrip } from '../support/verbs-checks';

const describeSoft = IS_SOFT ? describe : describe.skip;

/**
 * rdma-core's ibv_wc_status_str() (libibverbs/verbs.c), copied from there
 * rather than from src/core/constants.ts so the check is independent.
 */
const IBV_WC_STATUS_STR: Record<string, string> = {
  LOC_LEN_ERR: 'local length error',
  LOC_QP_OP_ERR: 'local QP operation error',
  LOC_EEC_OP_ERR: 'local EE context operation error',
  LOC_PROT_ERR: 'local protection error',
  WR_FLUSH_ERR: 'Work Request Flushed Error',
  MW_BIND_ERR: 'memory management operation error',
  BAD_RESP_ERR: 'bad response error',
  LOC_ACCESS_ERR: 'local access error',
  REM_INV_REQ_ERR: 'remote invalid request error',
  REM_ACCESS_ERR: 'remote access error',
  REM_OP_ERR: 'remote operation error',
  RETRY_EXC_ERR: 'transport retry counter exceeded',
  RNR_RETRY_EXC_ERR: 'RNR retry counter exceeded',
  LOC_RDD_VIOL_ERR: 'local RDD violation error',
  REM_INV_RD_REQ_ERR: 'remote invalid RD request',
  REM_ABORT_ERR: 'aborted error',
  INV_EECN_ERR: 'invalid EE context number',
  INV_EEC_STATE_ERR: 'invalid EE context state',
  FATAL_ERR: 'fatal error',
  RESP_TIMEOUT_ERR: 'response timeout error',
  GENERAL_ERR: 'general error',
  TM_ERR: 'TM error',
  TM_RNDV_INCOMPLETE: 'TM software rendezvous',
};
const ERROR_STATUSES = WC_STATUS_NAMES.filter((s) => s !== 'SUCCESS') as WcStatus[];

const openFds = () => fs.readdirSync('/proc/self/fd').length;

/** The name of what `fn` throws, or undefined. */
function caughtName(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (e) {
    return (e as Error).name;
  }
  return undefined;
}

let deviceSeq = 0;
/** A soft device of its own, so device-wide faults touch no other test. */
function isolatedDevice(): Context {
  const name = `faults${process.pid % 10000}x${deviceSeq++}`;
  createSoftDevice({ name });
  return openDevice(name);
}

/** Posts `n` receives on b and `n` unsignaled SENDs a -> b, wr_ids base..base+n-1 (receives). */
function sendToB(p: Pair, n: number, base: number, bufs: { src: ReturnType<typeof region>; dst: ReturnType<typeof region> }): void {
  for (let i = 0; i < n; i++) {
    p.b.postRecv({ wrId: base + i, sg: { mr: bufs.dst, offset: (i % 16) * 8, length: 8 } });
    p.a.postSend({ wrId: base + i, sg: { mr: bufs.src, length: 8 }, signaled: false });
  }
}

function bufsOf(p: Pair) {
  return { src: region(p.pd, 8, undefined, 3), dst: region(p.pd, 8 * 16) };
}

/** All wr_ids of a list of batches, as numbers. */
const ids = (batches: WcBatch[]) => batches.flatMap((b) => Array.from(b.wrId, Number));

describeSoft('faults', () => {
  describe('error completions', () => {
    it(`completions$ delivers an injected completion of each of the ${ERROR_STATUSES.length} error statuses, named, in order, once`, async () => {
      const p = makePair();
      const batches: WcBatch[] = [];
      const sub = p.cqB.completions$.subscribe((b) => batches.push(b));
      try {
        ERROR_STATUSES.forEach((status, i) =>
          p.ctx.faults.errorCompletion(p.cqB, { wrId: 1000 + i, status, opcode: 'RECV', qpNum: p.b.qpNum }),
        );
        expect(await waitFor(() => ids(batches).length >= ERROR_STATUSES.length, 3000)).toBe(true);
        expect(await roundTrip(p.ctx, p.cqB, () => ids(batches))).toHaveLength(ERROR_STATUSES.length); // nothing more, nothing twice
        const all = WcBatch.concat(batches).toArray().filter((w) => w.wrId !== BigInt(MARKER));
        expect(all.map((w) => w.status)).toEqual(ERROR_STATUSES);
        expect(all.map((w) => w.wrId)).toEqual(ERROR_STATUSES.map((_, i) => BigInt(1000 + i)));
        expect(all.every((w) => w.opcode === 'RECV' && w.qpNum === p.b.qpNum)).toBe(true);
        // Numeric status matches the rdma-core enum position.
        const merged = WcBatch.concat(batches);
        ERROR_STATUSES.forEach((s, i) => expect(merged.status[i]).toBe(WC_STATUS_NAMES.indexOf(s)));
        expect(merged.length).toBe(ERROR_STATUSES.length + 1); // and the marker
        expect(p.cqB.poll().length).toBe(0);
      } finally {
        sub.unsubscribe();
        p.close();
      }
      expect(p.cqB.closed).toBe(true);
    });

    it.each(ERROR_STATUSES)('failOnError() turns %s into WorkCompletionError worded like ibv_wc_status_str; later WCs stay takeable', async (status) => {
      const p = makePair();
      try {
        const seen: bigint[] = [];
        let error: (Error & Record<string, unknown>) | undefined;
        let completed = false;
        const sub = p.cqB.completions$.pipe(failOnError()).subscribe({
          next: (b) => seen.push(...b.wrId),
          error: (e) => (error = e),
          complete: () => (completed = true),
        });
        p.ctx.faults.errorCompletion(p.cqB, { wrId: 1, status: 'SUCCESS', opcode: 'RECV', qpNum: p.b.qpNum });
        p.ctx.faults.errorCompletion(p.cqB, { wrId: 0xdead, status, opcode: 'SEND', qpNum: p.b.qpNum });
        expect(await waitFor(() => error !== undefined, 3000)).toBe(true);
        expect(completed).toBe(false);
        expect(seen).toEqual([1n]);
        expect(error!.name).toBe('WorkCompletionError');
        expect(error!.code).toBe('ERR_WORK_COMPLETION');
        expect(error!.status).toBe(status);
        expect(error!.statusCode).toBe(WC_STATUS_NAMES.indexOf(status));
        expect(error!.message).toContain(IBV_WC_STATUS_STR[status]);
        expect(error!.message).toContain(`(${status})`);
        expect(error!.message).toContain('wr_id 57005');
        expect((error!.completion as { wrId: bigint }).wrId).toBe(0xdeadn);
        expect(sub.closed).toBe(true);
        // The failed pipeline let go of the source: a later completion is not lost.
        p.ctx.faults.errorCompletion(p.cqB, { wrId: 2, status: 'SUCCESS', opcode: 'RECV', qpNum: p.b.qpNum });
        const rest: bigint[] = [];
        await waitFor(() => {
          const b = p.cqB.completions$.tryTake();
          if (b) rest.push(...b.wrId);
          return rest.length >= 1;
        }, 2000);
        expect(rest).toEqual([2n]);
      } finally {
        p.close();
      }
    });
  });

  describe('event storms', () => {
    it('20,000 empty events: the loop stays responsive (per-wakeup budget), every event counted and acked', async () => {
      const p = makePair({ cqe: 1024 });
      const batches: WcBatch[] = [];
      const sub = p.cqB.completions$.subscribe((b) => batches.push(b));
      try {
        p.channel.budget = 64;
        const w0 = p.channel.wakeups.total;
        const e0 = p.cqB.stats.events;
        const lags: number[] = [];
        const probe = () => {
          const t = Date.now();
          setTimeout(() => lags.push(Date.now() - t), 5);
        };
        const ROUNDS = 20;
        const PER = 1000;
        let injected = 0;
        // The storm: bursts of empty events, with a few real completions among them.
        for (let r = 0; r < ROUNDS; r++) {
          for (let i = 0; i < PER; i++) p.ctx.faults.emptyEvent(p.cqB);
          injected += PER;
          for (let i = 0; i < 5; i++) {
            p.ctx.faults.errorCompletion(p.cqB, { wrId: r * 5 + i, status: 'SUCCESS', opcode: 'RECV', qpNum: p.b.qpNum });
          }
          probe();
          await new Promise((res) => setImmediate(res));
        }
        // Every event is read (and no more), in at least ceil(events / budget) wakeups.
        expect(await waitFor(() => p.cqB.stats.events - e0 >= injected, 10000)).toBe(true);
        // Through the loop once more: every event queued before has been read.
        const delivered = await roundTrip(p.ctx, p.cqB, () => ids(batches));
        const events = p.cqB.stats.events - e0;
        expect(events).toBeGreaterThanOrEqual(injected);
        expect(events).toBeLessThanOrEqual(injected + ROUNDS * 5 + 1); // + the marker's
        const wakeups = p.channel.wakeups.total - w0;
        expect(wakeups).toBeGreaterThanOrEqual(Math.ceil(events / 64));
        // The timers scheduled during the storm all fired: the loop was never
        // held by the storm. How late they fired is a speed figure (the bench
        // measures those), not something to assert on a shared machine; the
        // budget that bounds it is the wakeup count checked above.
        await waitFor(() => lags.length === ROUNDS);
        expect(lags).toHaveLength(ROUNDS);
        // The real completions came through, once each, in order.
        expect(delivered).toEqual(Array.from({ length: ROUNDS * 5 }, (_, i) => i));
        // Acks are batched, never lost: what is owed is less than one batch.
        expect(p.cqB.unacked).toBeLessThan(64);
        sub.unsubscribe();
        p.a.close();
        p.b.close();
        p.cqB.close(); // flushes the batched acks; refuses if any event were unacked
        expect(p.cqB.closed).toBe(true);
      } finally {
        sub.unsubscribe();
        p.close();
      }
    });

    it('a storm of explicit events: a timer fires mid-storm while events are still pending, every event acked once', async () => {
      const p = makePair({ cqe: 1024 });
      const TOTAL = 50000;
      p.channel.budget = 32;
      let received = 0;
      const sub = p.channel.events$.pipe(ackEvents({ every: 16 })).subscribe(() => received++);
      try {
        const w0 = p.channel.wakeups.total;
        for (let i = 0; i < TOTAL; i++) p.ctx.faults.emptyEvent(p.cqB);
        const start = Date.now();
        let firedAt = -1;
        let receivedAtTimer = -1;
        setTimeout(() => {
          firedAt = Date.now() - start;
          receivedAtTimer = received;
        }, 5);
        expect(await waitFor(() => received === TOTAL, 20000)).toBe(true);
        expect(await waitFor(() => firedAt >= 0, 1000)).toBe(true);
        // It fired during the storm, not after it (how late is the bench's business).
        expect(receivedAtTimer).toBeLessThan(TOTAL);
        expect(p.channel.wakeups.total - w0).toBeGreaterThanOrEqual(Math.ceil(TOTAL / 32));
        // One more event through the loop: the storm's were all read, none twice.
        p.ctx.faults.emptyEvent(p.cqB);
        expect(await waitFor(() => received > TOTAL)).toBe(true);
        expect(received).toBe(TOTAL + 1);
      } finally {
        sub.unsubscribe();
      }
      // ackEvents flushed on unsubscribe: every event is acked.
      expect(p.cqB.unacked).toBe(0);
      expect(p.cqB.stats.acked).toBe(TOTAL + 1);
      p.close();
    });
  });

  describe('a consumer that leaves mid-batch', () => {
    it('events$: the events of the same wakeup after the unsubscribe stay takeable, then go to the next subscriber; every one acked once', async () => {
      const p = makePair();
      try {
        const first: CqEvent<Cq>[] = [];
        // take(3) leaves from inside the delivery of a 10-event wakeup.
        const sub = p.channel.events$.pipe(ackEvents({ every: 100 }), take(3)).subscribe((e) => first.push(e));
        const w0 = p.channel.wakeups.total;
        for (let i = 0; i < 10; i++) p.ctx.faults.emptyEvent(i % 2 ? p.cqA : p.cqB);
        expect(await waitFor(() => sub.closed, 2000)).toBe(true);
        expect(p.channel.wakeups.total - w0).toBe(1); // one wakeup read them all
        expect(first.map((e) => e.context)).toEqual(['B', 'A', 'B']);
        // ackEvents flushed what it forwarded; the rest is pending, unacked, not lost.
        expect(p.cqB.unacked + p.cqA.unacked).toBe(7);
        expect(p.channel.events$.pending).toBe(7);
        const taken = [p.channel.events$.tryTake(), p.channel.events$.tryTake()];
        expect(taken.map((e) => e?.context)).toEqual(['A', 'B']);
        for (const e of taken) e!.cq.ack(1);
        const rest: CqEvent<Cq>[] = [];
        const sub2 = p.channel.events$.pipe(ackEvents({ every: 100 })).subscribe((e) => rest.push(e));
        expect(rest.map((e) => e.context)).toEqual(['A', 'B', 'A', 'B', 'A']);
        sub2.unsubscribe();
        expect(p.channel.events$.pending).toBe(0);
        expect(p.cqA.unacked).toBe(0);
        expect(p.cqB.unacked).toBe(0);
        expect(p.channel.tryGetEvent()).toBeUndefined();
      } finally {
        p.close();
      }
    });

    it('completions$: after an unsubscribe from inside a batch, later WCs go to tryTake and the next subscriber, once each; the CQ closes (acks flushed)', async () => {
      const p = makePair({ cap: { maxRecvWr: 128, maxSendWr: 128 } });
      const bufs = bufsOf(p);
      try {
        const got: number[] = [];
        let sub: Subscription | undefined = undefined;
        sub = p.cqB.completions$.subscribe((b) => {
          // A batch received is the consumer's; it leaves right after the first one.
          got.push(...Array.from(b.wrId, Number));
          sub?.unsubscribe();
        });
        sendToB(p, 20, 0, bufs);
        expect(await waitFor(() => got.length > 0, 2000)).toBe(true);
        expect(sub.closed).toBe(true);
        expect(p.cqB.completions$.isRunning).toBe(false);
        // More traffic after it left: nothing is pushed anywhere, it waits in the
        // CQ, and tryTake gets it (by polling) once the device completed it.
        const gotWhenLeft = got.length;
        sendToB(p, 20, 20, bufs);
        const taken: number[] = [];
        const takeAll = () => {
          for (let b = p.cqB.completions$.tryTake(); b; b = p.cqB.completions$.tryTake()) taken.push(...Array.from(b.wrId, Number));
          return taken;
        };
        expect(await waitFor(() => got.length + takeAll().length >= 40, 3000)).toBe(true);
        expect(got).toHaveLength(gotWhenLeft);
        // A next subscriber gets what arrives later.
        const later: number[] = [];
        const sub2 = p.cqB.completions$.subscribe((b) => later.push(...Array.from(b.wrId, Number)));
        sendToB(p, 20, 40, bufs);
        expect(await waitFor(() => got.length + taken.length + later.length >= 60, 3000)).toBe(true);
        // Once more through the loop: nothing else was on its way.
        const laterIds = await roundTrip(p.ctx, p.cqB, () => later);
        sub2.unsubscribe();
        const all = [...got, ...taken, ...laterIds];
        expect(all).toEqual(Array.from({ length: 60 }, (_, i) => i));
        // The sender's CQ (cqA) has nothing: unsignaled sends.
        expect(p.cqA.poll().length).toBe(0);
        p.a.close();
        p.b.close();
        p.cqB.close(); // would be EBUSY with an unacked event
        expect(p.cqB.closed).toBe(true);
      } finally {
        p.close();
      }
    });
  });

  describe('closing with work left behind', () => {
    it('ctx.close() acks the events events$ buffered after a consumer left mid-batch (safe order: ack all, then destroy)', async () => {
      const p = makePair();
      const sub = p.channel.events$.pipe(ackEvents(), take(1)).subscribe();
      p.ctx.faults.emptyEvent(p.cqB);
      p.ctx.faults.emptyEvent(p.cqB);
      expect(await waitFor(() => sub.closed, 2000)).toBe(true);
      // The second event was read by the library into events$'s buffer; the user never saw it.
      expect(p.channel.events$.pending).toBe(1);
      expect(p.cqB.unacked).toBe(1);
      let thrown: unknown;
      try {
        p.ctx.close();
      } catch (e) {
        thrown = e;
      }
      const closed = { ctx: p.ctx.closed, cqB: p.cqB.closed, channel: p.channel.closed };
      // Clean up whatever state it was left in, before asserting.
      if (!p.ctx.closed) {
        p.cqB.ack(p.cqB.unacked);
        p.ctx.close();
      }
      expect(thrown).toBeUndefined(); // today: EBUSY "1 events not acknowledged" from ibv_destroy_cq
      expect(closed).toEqual({ ctx: true, cqB: true, channel: true });
    });

    it('completions$ subscribed on a CQ that just overran (CQ_ERR not yet read): errors with CqOverrunError and leaves the channel unwatched', async () => {
      const p = makePair();
      try {
        p.ctx.faults.overrun(p.cqB); // its CQ_ERR is still unread on the async fd
        let error: (Error & { code?: string }) | undefined;
        const sub = p.cqB.completions$.subscribe({ error: (e) => (error = e) });
        expect(error).toBeDefined();
        sub.unsubscribe();
        // The failed start must release what it retained: a channel left watched
        // keeps itself, its context and the process alive for ever.
        const native = (p.channel as unknown as { native: { watching: boolean } }).native;
        await waitFor(() => !native.watching);
        expect({ watching: native.watching, name: error!.name }).toEqual({ watching: false, name: 'CqOverrunError' });
      } finally {
        p.close();
      }
    });
  });

  describe('close during delivery', () => {
    it('ctx.close() from inside a completions$ subscriber: no crash, every source completes, later calls throw EBADF', async () => {
      const p = makePair({ cap: { maxRecvWr: 64, maxSendWr: 64 } });
      const explicitCq = p.ctx.createCq({ cqe: 64, channel: p.channel, context: 'C' });
      const bufs = bufsOf(p);
      const ends: string[] = [];
      const errors: unknown[] = [];
      const track = (name: string) => ({
        error: (e: unknown) => errors.push([name, e]),
        complete: () => ends.push(name),
      });
      let closedInside = false;
      let throwInside: unknown;
      const subs = new Subscription();
      subs.add(
        p.cqA.completions$.subscribe({
          ...track('A'),
          next: () => undefined,
        }),
      );
      subs.add(
        p.cqB.completions$.subscribe({
          ...track('B'),
          next: () => {
            if (closedInside) return;
            closedInside = true;
            try {
              p.ctx.close();
            } catch (e) {
              throwInside = e;
            }
          },
        }),
      );
      subs.add(p.channel.events$.subscribe({ ...track('events'), next: (e) => e.cq.ack(1) }));
      subs.add(p.ctx.asyncEvents$.subscribe(track('async')));
      explicitCq.requestNotify();
      // Completions on both fast-path CQs and an explicit event in flight at once.
      sendToB(p, 10, 0, bufs);
      p.a.postRecv({ wrId: 99, sg: { mr: bufs.dst, length: 8 } });
      p.b.postSend({ wrId: 98, sg: { mr: bufs.src, length: 8 } });
      p.ctx.faults.errorCompletion(explicitCq, { wrId: 7, status: 'SUCCESS' });
      expect(await waitFor(() => closedInside, 3000)).toBe(true);
      // Every source ends (completes, or errors) once the context is closed.
      await waitFor(() => ends.length + errors.length >= 4 || throwInside !== undefined);
      if (throwInside !== undefined) {
        // Leave nothing behind (a half-closed context keeps a watched channel,
        // and jest, alive), then fail.
        subs.unsubscribe();
        for (const cq of [p.cqA, p.cqB, explicitCq]) if (!cq.closed && cq.unacked > 0) cq.ack(cq.unacked);
        p.ctx.close();
      }
      // Today (timing-dependent): EBUSY "1 events not acknowledged" — the explicit
      // event read in the same wakeup is counted but not yet delivered when
      // ctx.close() runs; the context's close must ack it (see the test above).
      expect(throwInside).toBeUndefined();
      expect(errors).toEqual([]);
      expect(ends.sort()).toEqual(['A', 'B', 'async', 'events']);
      for (const o of [p.ctx, p.channel, p.cqA, p.cqB, explicitCq, p.pd, p.a, p.b, bufs.src, bufs.dst]) expect(o.closed).toBe(true);
      const ebadf = { code: 'EBADF' };
      expectThrow(() => p.cqB.poll(), 'Error', ebadf);
      expectThrow(() => p.cqB.requestNotify(), 'Error', ebadf);
      expectThrow(() => p.cqB.ack(1), 'Error', ebadf);
      expectThrow(() => p.channel.tryGetEvent(), 'Error', ebadf);
      expectThrow(() => p.ctx.allocPd(), 'Error', ebadf);
      expectThrow(() => p.ctx.createCompChannel(), 'Error', ebadf);
      expectThrow(() => p.a.postRecv({ wrId: 1, sg: { addr: 0n, length: 0, lkey: 0 } }), 'Error', ebadf);
      expectThrow(() => p.pd.registerMemory(Buffer.alloc(8)), 'Error', ebadf);
      // Sources stay completed; unsubscribing now is harmless.
      expect(p.cqB.completions$.tryTake()).toBeUndefined();
      subs.unsubscribe();
      await expectFreshPairWorks();
    });

    it('closing a CQ (and its QPs) from inside its own subscriber, then the rest of the context', async () => {
      const p = makePair();
      const bufs = bufsOf(p);
      let done = false;
      let completedB = false;
      const sub = p.cqB.completions$.subscribe({
        next: () => {
          if (done) return;
          done = true;
          p.b.close();
          p.a.close();
          p.cqB.close();
        },
        complete: () => (completedB = true),
      });
      sendToB(p, 5, 0, bufs);
      expect(await waitFor(() => done, 2000)).toBe(true);
      await waitFor(() => completedB);
      expect(p.cqB.closed).toBe(true);
      expect(completedB).toBe(true);
      expect(sub.closed).toBe(true);
      p.close();
      await expectFreshPairWorks();
    });
  });

  describe('spurious, empty and duplicate events', () => {
    it('with duplicate events on and spurious wakeups / empty events raining, both paths deliver every WC exactly once', async () => {
      const p = makePair({ cqe: 512, cap: { maxRecvWr: 256, maxSendWr: 256 } });
      const bufs = bufsOf(p);
      const fast: number[] = [];
      const explicit: number[] = [];
      const subs = new Subscription();
      try {
        p.ctx.faults.duplicateEvents(true);
        // cqB: the fast path. cqA: the explicit path (ack, rearm, drain).
        subs.add(p.cqB.completions$.subscribe((b) => fast.push(...Array.from(b.wrId, Number))));
        subs.add(
          p.channel.events$
            .pipe(ackEvents({ every: 8 }), rearm(), drainCq({ max: 16 }))
            .subscribe((b) => explicit.push(...Array.from(b.wrId, Number))),
        );
        p.cqA.requestNotify();
        let tick = 0;
        let emptyA = 0;
        const rain = setInterval(() => {
          // Alternate, so some wakeups find nothing at all (really spurious).
          if (tick++ % 2) p.ctx.faults.spuriousWakeup(p.channel);
          else {
            emptyA++;
            p.ctx.faults.emptyEvent(p.cqA);
            p.ctx.faults.emptyEvent(p.cqB);
          }
        }, 1);
        const N = 400;
        for (let i = 0; i < N; i += 10) {
          // b -> a fills cqA (explicit), a -> b fills cqB (fast).
          for (let k = i; k < i + 10; k++) {
            p.a.postRecv({ wrId: 10000 + k, sg: { mr: bufs.dst, offset: (k % 16) * 8, length: 8 } });
            p.b.postSend({ wrId: 20000 + k, sg: { mr: bufs.src, length: 8 }, signaled: false });
          }
          sendToB(p, 10, i, bufs);
          // The next burst once this one is through (the rain goes on meanwhile).
          if (!(await waitFor(() => fast.length >= i + 10 && explicit.length >= i + 10, 5000))) break;
        }
        const ok = await waitFor(() => fast.length >= N && explicit.length >= N, 5000);
        clearInterval(rain);
        expect(ok).toBe(true);
        // Once more through each path, with duplicates off (the markers' events
        // are single): every event queued before them has been read.
        p.ctx.faults.duplicateEvents(false);
        expect(await roundTrip(p.ctx, p.cqB, () => fast)).toEqual(Array.from({ length: N }, (_, i) => i));
        expect(await roundTrip(p.ctx, p.cqA, () => explicit)).toEqual(Array.from({ length: N }, (_, i) => 10000 + i));
        // Events really came twice: apart from the empty ones and the marker's
        // (single), cqA's events come in pairs.
        const paired = p.cqA.stats.events - emptyA - 1;
        expect(paired).toBeGreaterThan(0);
        expect(paired % 2).toBe(0);
      } finally {
        subs.unsubscribe();
        p.ctx.faults.duplicateEvents(false);
      }
      // Everything read was acked (explicit: ackEvents flushed; fast: flushed at close).
      expect(p.cqA.unacked).toBe(0);
      p.close();
      expect(p.cqB.closed && p.cqA.closed).toBe(true);
    });
  });

  describe('the arm race through completions$', () => {
    it('a completion landing in the window before each re-arm, 200 times during traffic: nothing lost, nothing stalls', async () => {
      const p = makePair({ cap: { maxRecvWr: 64, maxSendWr: 64 } });
      const bufs = bufsOf(p);
      const seen: number[] = [];
      const sub = p.cqB.completions$.subscribe((b) => seen.push(...Array.from(b.wrId, Number)));
      try {
        const ROUNDS = 200;
        for (let r = 0; r < ROUNDS; r++) {
          // Lands when the fast path re-arms after the next event.
          p.ctx.faults.completionBeforeArm(p.cqB, { wrId: 100000 + r, status: 'SUCCESS', opcode: 'RECV', qpNum: p.b.qpNum });
          sendToB(p, 1, r, bufs);
          // Wait for both: the raced one must come without any further traffic.
          const ok = await waitFor(() => seen.includes(100000 + r) && seen.includes(r), 2000);
          if (!ok) throw new Error(`round ${r}: stalled; seen so far ${seen.length}`);
        }
        // Once more through the loop: nothing else (no duplicate) was on its way.
        const all = await roundTrip(p.ctx, p.cqB, () => seen);
        const expected = Array.from({ length: ROUNDS }, (_, r) => [r, 100000 + r]).flat();
        expect([...all].sort((x, y) => x - y)).toEqual([...expected].sort((x, y) => x - y));
        expect(new Set(all).size).toBe(all.length);
      } finally {
        sub.unsubscribe();
        p.close();
      }
    });
  });

  describe('DEVICE_FATAL during traffic', () => {
    it('every source errors with DeviceFatalError (not CqOverrunError), every object closes, nothing leaks, the device recovers', async () => {
      const fds0 = openFds();
      const live0 = binding().liveObjects();
      const ctx = isolatedDevice();
      const name = ctx.deviceName;
      const pairs = [0, 1, 2].map(() => makePair({ ctx, cap: { maxRecvWr: 64, maxSendWr: 64 }, cqe: 256 }));
      // An explicit consumer on a channel of its own, and a CQ nobody consumes.
      const ch2 = ctx.createCompChannel();
      const cqX = ctx.createCq({ cqe: 64, channel: ch2, context: 'X' });
      const idle = ctx.createCq({ cqe: 16, channel: ch2, context: 'idle' });
      cqX.requestNotify();
      const pdX = ctx.allocPd();
      const mrs = pairs.map((p) => bufsOf(p));
      const mrX = region(pdX, 64);
      const sourceErrors = new Map<string, Error>();
      let stickyB0: string | undefined;
      const postErrors = new Set<string>();
      const received = [0, 0, 0];
      const subs = new Subscription();
      const keySet = [0, 1, 2].flatMap((k) => [`B${k}`, `A${k}`, `events${k}`]).concat(['explicitX', 'async']);
      const note = (key: string) => ({
        next: () => undefined,
        error: (e: Error) => sourceErrors.set(key, e),
      });
      pairs.forEach((p, k) => {
        const pump = () => {
          try {
            sendToB(p, 4, received[k], mrs[k]);
          } catch (e) {
            postErrors.add(String((e as { code?: string }).code));
          }
        };
        subs.add(
          p.cqB.completions$.subscribe({
            ...note(`B${k}`),
            next: (b: WcBatch) => {
              received[k] += b.length;
              pump();
            },
          }),
        );
        subs.add(p.cqA.completions$.subscribe(note(`A${k}`)));
        subs.add(p.channel.events$.subscribe(note(`events${k}`)));
        pump();
      });
      subs.add(ch2.events$.pipe(ackEvents(), rearm(), drainCq()).subscribe(note('explicitX')));
      subs.add(ctx.asyncEvents$.subscribe(note('async')));
      const explicitPump = setInterval(() => {
        try {
          ctx.faults.errorCompletion(cqX, { wrId: 1, status: 'SUCCESS' });
        } catch {
          /* after the fatal */
        }
      }, 1);
      try {
        expect(await waitFor(() => received.every((r) => r >= 200), 5000)).toBe(true);
        ctx.faults.deviceFatal();
        const keys = keySet;
        const allErrored = await waitFor(() => keys.every((k) => sourceErrors.has(k)), 3000);
        clearInterval(explicitPump);
        expect([...sourceErrors.keys()].sort()).toEqual([...keys].sort());
        expect(allErrored).toBe(true);
        // Sticky, for consumers that come later or pull.
        expect(() => idle.completions$.tryTake()).toThrow(expect.objectContaining({ name: 'DeviceFatalError' }));
        stickyB0 = caughtName(() => pairs[0].cqB.completions$.tryTake());
        expect([...postErrors].every((c) => c === 'EIO')).toBe(true);
      } finally {
        clearInterval(explicitPump);
        subs.unsubscribe();
      }
      expect(() => ctx.close()).not.toThrow();
      for (const p of pairs) for (const o of [p.a, p.b, p.cqA, p.cqB, p.channel, p.pd]) expect(o.closed).toBe(true);
      for (const o of [ch2, cqX, idle, pdX, mrX, ...mrs.flatMap((m) => [m.src, m.dst])]) expect(o.closed).toBe(true);
      expect(binding().liveObjects()).toBe(live0);
      expect(openFds()).toBe(fds0);
      // The device recovers for a context opened later.
      const again = openDevice(name);
      try {
        await expectFreshPairWorks(again);
      } finally {
        again.close();
      }
      // Last, so everything above is checked whatever this says: the fast
      // path's own EIO (the re-arm after DEVICE_FATAL) must surface as the
      // DeviceFatalError it is, not as a CQ overrun.
      const names = Object.fromEntries([...sourceErrors].map(([k, e]) => [k, `${e.name}/${(e as { code?: string }).code}`]));
      expect({ ...names, stickyB0 }).toEqual({
        ...Object.fromEntries(keySet.map((k) => [k, 'DeviceFatalError/ERR_DEVICE_FATAL'])),
        stickyB0: 'DeviceFatalError',
      });
    });
  });
});
