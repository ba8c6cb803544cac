/**
 * Shared receive queues on the device under test (soft0 here, rxe0 in the
 * VM): many QPs draw from one ring, in order, with the right qpNum; the limit
 * event; capacity; the close order; bad input; memory protection; RNR when
 * the ring is empty; the fast path and credits over an SRQ's QPs; and UD
 * QPs on an SRQ (the GRH room taken from the shared receives).
 */
import { randomBytes } from 'crypto';
import { AsyncEvent, Context, Cq, Mr, Pd, Qp, Srq, openDevice, ConnectOptions, WC_FLAGS } from '../../src';
import { credits } from '../../src/completion';
import { refuseBusy } from '../../src/core/refusals';
import { binding } from '../../src/native/binding';
import { TEST_DEVICE, TEST_GID_INDEX, IS_SOFT, itSoft, expectThrow, pollN, waitFor } from '../support/device';
import { guarded, wcs, expectFreshPairWorks, caught, localError } from '../support/verbs-checks';
import { QKEY, UD_GID_INDEX, decodeGrh, gidBytes, isIpv4Mapped } from '../support/ud';

const MSG = 64;
/** The GRH room in front of every UD receive. */
const UD_GRH = 40;

/**
 * One server side (a PD, one SRQ, one CQ on one channel, `n` QPs on the
 * SRQ) and `n` client QPs connected to them one to one, all on the device
 * under test.
 */
interface Rig {
  ctx: Context;
  pd: Pd;
  srq: Srq;
  cq: Cq;
  clientCq: Cq;
  servers: Qp[];
  clients: Qp[];
  /** Registered memory the clients send from (`n` * 16 messages of MSG bytes). */
  src: Mr;
  close(): void;
}

function rig(n: number, srqOptions: { maxWr: number; maxSge?: number; limit?: number }, connect: ConnectOptions = {}, ctx?: Context): Rig {
  ctx ??= openDevice(TEST_DEVICE);
  try {
    const channel = ctx.createCompChannel();
    const pd = ctx.allocPd();
    const cq = ctx.createCq({ cqe: 512, channel, context: 'server' });
    const clientCq = ctx.createCq({ cqe: 512, channel, context: 'clients' });
    const srq = pd.createSrq(srqOptions);
    const conn: ConnectOptions = { gidIndex: TEST_GID_INDEX, ...connect };
    const servers: Qp[] = [];
    const clients: Qp[] = [];
    for (let i = 0; i < n; i++) {
      const s = pd.createQp({ sendCq: cq, recvCq: cq, srq, cap: { maxSendWr: 16 } });
      const c = pd.createQp({ sendCq: clientCq, recvCq: clientCq, cap: { maxSendWr: 64, maxRecvWr: 1 } });
      s.connect(c.endpoint({ gidIndex: conn.gidIndex }), conn);
      c.connect(s.endpoint({ gidIndex: conn.gidIndex }), conn);
      servers.push(s);
      clients.push(c);
    }
    const src = pd.registerMemory(Buffer.alloc(Math.max(1, n) * 16 * MSG), { access: ['LOCAL_WRITE'] });
    const c = ctx;
    return { ctx, pd, srq, cq, clientCq, servers, clients, src, close: () => c.close() };
  } catch (err) {
    ctx.close();
    throw err;
  }
}

/** Message `k` from client `i`: its bytes name both, so a receive proves where it came from. */
function stamp(r: Rig, i: number, k: number): { offset: number; length: number } {
  const offset = (i * 16 + (k % 16)) * MSG;
  const b = r.src.buffer.subarray(offset, offset + MSG);
  b.fill(0);
  b.writeUInt32LE(i, 0);
  b.writeUInt32LE(k, 4);
  randomBytes(MSG - 8).copy(b, 8);
  return { offset, length: MSG };
}

/** Sends message `k` from client `i` and waits for its send completion. */
async function send(r: Rig, i: number, k: number): Promise<void> {
  const sg = stamp(r, i, k);
  r.clients[i].postSend({ wrId: i * 1000 + k, sg: { mr: r.src, ...sg } });
  const [wc] = await wcs(r.clientCq, 1);
  expect(wc).toMatchObject({ wrId: BigInt(i * 1000 + k), status: 'SUCCESS' });
}

function collect(ctx: Context): { events: AsyncEvent[]; stop(): void } {
  const events: AsyncEvent[] = [];
  const sub = ctx.asyncEvents$.subscribe((e) => events.push(e));
  return { events, stop: () => sub.unsubscribe() };
}

describe('SRQ: sharing', () => {
  it('messages arriving on many QPs consume the shared ring in posting order, each WC naming its QP', async () => {
    const r = rig(4, { maxWr: 64 });
    try {
      const dst = r.pd.registerMemory(Buffer.alloc(32 * MSG), { access: ['LOCAL_WRITE'] });
      for (let k = 0; k < 32; k++) r.srq.postRecv({ wrId: 100 + k, sg: { mr: dst, offset: k * MSG, length: MSG } });
      // One message at a time, the senders interleaved: arrival order is known.
      const order: number[] = [];
      for (let k = 0; k < 32; k++) order.push((k * 3) % 4);
      const sent: Buffer[] = [];
      for (let k = 0; k < 32; k++) {
        await send(r, order[k], k);
        const off = (order[k] * 16 + (k % 16)) * MSG;
        sent.push(Buffer.from(r.src.buffer.subarray(off, off + MSG)));
      }
      const got = await wcs(r.cq, 32);
      expect(got.map((w) => w.wrId)).toEqual([...Array(32).keys()].map((k) => BigInt(100 + k)));
      for (let k = 0; k < 32; k++) {
        // (srcQp is defined for UD only: rxe leaves it 0 on RC)
        expect(got[k]).toMatchObject({ status: 'SUCCESS', opcode: 'RECV', byteLen: MSG, qpNum: r.servers[order[k]].qpNum });
        expect(dst.buffer.subarray(k * MSG, (k + 1) * MSG).equals(sent[k])).toBe(true);
      }
      expect(r.srq.query()).toMatchObject({ limit: 0 });
    } finally {
      r.close();
    }
  });

  it('concurrent senders on every QP: each message lands in exactly one receive, per-QP order kept', async () => {
    const n = 8;
    const per = 8;
    const r = rig(n, { maxWr: 128 });
    try {
      const dst = r.pd.registerMemory(Buffer.alloc(n * per * MSG), { access: ['LOCAL_WRITE'] });
      for (let k = 0; k < n * per; k++) r.srq.postRecv({ wrId: k, sg: { mr: dst, offset: k * MSG, length: MSG } });
      for (let k = 0; k < per; k++) {
        for (let i = 0; i < n; i++) {
          const sg = stamp(r, i, k);
          r.clients[i].postSend({ wrId: i * 1000 + k, sg: { mr: r.src, ...sg } });
        }
      }
      const sends = await wcs(r.clientCq, n * per);
      expect(sends.filter((w) => w.status === 'SUCCESS')).toHaveLength(n * per);
      const got = await wcs(r.cq, n * per);
      expect(got).toHaveLength(n * per);
      expect(new Set(got.map((w) => w.wrId)).size).toBe(n * per);
      const byQp = new Map<number, number[]>();
      for (const w of got) {
        expect(w).toMatchObject({ status: 'SUCCESS', byteLen: MSG });
        const slot = dst.buffer.subarray(Number(w.wrId) * MSG, (Number(w.wrId) + 1) * MSG);
        const client = slot.readUInt32LE(0);
        expect(w.qpNum).toBe(r.servers[client].qpNum);
        const seen = byQp.get(client) ?? [];
        seen.push(slot.readUInt32LE(4));
        byQp.set(client, seen);
      }
      for (let i = 0; i < n; i++) expect(byQp.get(i)).toEqual([...Array(per).keys()]);
    } finally {
      r.close();
    }
  });

  it('query reports what was granted; a QP on an SRQ refuses receives of its own (EINVAL)', () => {
    const r = rig(1, { maxWr: 16, maxSge: 2, limit: 3 });
    try {
      const a = r.srq.query();
      expect(a.maxWr).toBeGreaterThanOrEqual(16);
      expect(a.maxSge).toBeGreaterThanOrEqual(2);
      expect(a.limit).toBe(3);
      expect(r.servers[0].srq).toBe(r.srq);
      const dst = r.pd.registerMemory(Buffer.alloc(MSG), { access: ['LOCAL_WRITE'] });
      const err = caught(() => r.servers[0].postRecv({ wrId: 1, sg: { mr: dst } }));
      expect(err).toMatchObject({ code: 'EINVAL' });
      r.srq.postRecv({ wrId: 2, sg: { mr: dst } }); // the SRQ itself still takes it
    } finally {
      r.close();
    }
  });
});

describe('SRQ: limit event', () => {
  it('fires once when the ring drops below the armed limit, disarms, and fires again after re-arming', async () => {
    const r = rig(2, { maxWr: 32 });
    const seen = collect(r.ctx);
    try {
      const dst = r.pd.registerMemory(Buffer.alloc(32 * MSG), { access: ['LOCAL_WRITE'] });
      let posted = 0;
      const post = (count: number) => {
        for (let k = 0; k < count; k++, posted++) r.srq.postRecv({ wrId: posted, sg: { mr: dst, offset: (posted % 32) * MSG, length: MSG } });
      };
      const limits = () => seen.events.filter((e) => e.type === 'SRQ_LIMIT_REACHED');
      post(8);
      r.srq.arm(4);
      expect(r.srq.query().limit).toBe(4);
      let sent = 0;
      for (; sent < 4; sent++) await send(r, sent % 2, sent); // 8 -> 4 left: not below 4
      expect(await wcs(r.cq, 4)).toHaveLength(4);
      expect(r.srq.query().limit).toBe(4);
      await send(r, 0, sent++); // 3 left: below
      expect(await wcs(r.cq, 1)).toHaveLength(1);
      expect(await waitFor(() => limits().length === 1)).toBe(true);
      expect(limits()[0].srq).toBe(r.srq);
      expect(r.srq.query().limit).toBe(0);
      await send(r, 1, sent++); // disarmed: no second event
      expect(await wcs(r.cq, 1)).toHaveLength(1);
      post(10); // 12 left
      r.srq.arm(6);
      for (let k = 0; k < 6; k++) await send(r, k % 2, sent++); // 6 left: not below
      expect(await wcs(r.cq, 6)).toHaveLength(6);
      expect(r.srq.query().limit).toBe(6);
      expect(limits()).toHaveLength(1);
      await send(r, 1, sent++); // 5 left: below
      expect(await waitFor(() => limits().length === 2)).toBe(true);
      expect(limits()[1].srq).toBe(r.srq);
      expect(r.srq.query().limit).toBe(0);
    } finally {
      seen.stop();
      r.close();
    }
  });

  it("arming a limit beyond the SRQ's capacity is EINVAL", () => {
    const r = rig(0, { maxWr: 16 });
    try {
      const max = r.srq.query().maxWr;
      // Beyond any device's SRQ, and just past this one's granted capacity: the rule book's
      // refusal on every provider (rxe alone would check its ring's index mask, which may
      // exceed the maxWr it reports).
      const refusal = { code: 'EINVAL', syscall: 'ibv_modify_srq', message: expect.stringContaining('srq_limit exceeds max_wr') };
      expect(caught(() => r.srq.arm(1 << 23))).toMatchObject(refusal);
      expect(caught(() => r.srq.arm(max + 1))).toMatchObject(refusal);
      r.srq.arm(max);
      expect(r.srq.query().limit).toBe(max);
      r.srq.arm(0);
      expect(r.srq.query().limit).toBe(0);
    } finally {
      r.close();
    }
  });

  it('a limit beyond the capacity is refused at creation as arm() refuses it (EINVAL), and makes no SRQ', () => {
    const ctx = openDevice(TEST_DEVICE);
    try {
      const pd = ctx.allocPd();
      const max = pd.createSrq({ maxWr: 4 }).query().maxWr; // what the device grants for 4
      const err = caught(() => pd.createSrq({ maxWr: 4, limit: max + 1 }));
      expect(err).toMatchObject({ code: 'EINVAL', syscall: 'ibv_create_srq', message: expect.stringContaining('srq_limit exceeds max_wr') });
      expect(caught(() => pd.createSrq({ maxWr: 4, limit: 1 << 23 }))).toMatchObject({ code: 'EINVAL', syscall: 'ibv_create_srq' });
      if (IS_SOFT) expect(caught(() => pd.createSrq({ maxWr: 4, limit: 10 }))).toMatchObject({ code: 'EINVAL' });
      // Nothing was left behind: the PD holds one SRQ only, and the limit up to the capacity arms.
      expect(caught(() => pd.native.close())?.message).toBe(caught(() => refuseBusy('PD', { SRQ: 1 }))?.message);
      const armed = pd.createSrq({ maxWr: 4, limit: max });
      expect(armed.query().limit).toBe(max);
    } finally {
      ctx.close();
    }
  });
});

describe('SRQ: capacity', () => {
  it('holds exactly maxWr receives: one more is ENOMEM with badWr, and a freed slot takes one again', async () => {
    const r = rig(1, { maxWr: 8, maxSge: 1 });
    try {
      const max = r.srq.query().maxWr;
      const dst = r.pd.registerMemory(Buffer.alloc(MSG), { access: ['LOCAL_WRITE'] });
      const wrs = [...Array(max).keys()].map((k) => ({ wrId: k, sg: { mr: dst } }));
      r.srq.postRecv(wrs);
      const err = caught(() => r.srq.postRecv([{ wrId: 1000, sg: { mr: dst } }]));
      expect(err).toMatchObject({ code: 'ENOMEM', syscall: 'ibv_post_srq_recv', badWr: 0 });
      await send(r, 0, 0);
      expect(await wcs(r.cq, 1)).toMatchObject([{ wrId: 0n, status: 'SUCCESS' }]);
      r.srq.postRecv({ wrId: 1001, sg: { mr: dst } });
      expect(caught(() => r.srq.postRecv({ wrId: 1002, sg: { mr: dst } }))).toMatchObject({ code: 'ENOMEM' });
    } finally {
      r.close();
    }
  });

  it('more SGEs than maxSge is EINVAL; the WRs before it were posted', () => {
    const r = rig(0, { maxWr: 8, maxSge: 1 });
    try {
      const max = r.srq.query().maxSge;
      const dst = r.pd.registerMemory(Buffer.alloc(MSG * (max + 1)), { access: ['LOCAL_WRITE'] });
      const many = [...Array(max + 1).keys()].map((k) => ({ mr: dst, offset: k * MSG, length: MSG }));
      const err = caught(() => r.srq.postRecv([{ wrId: 1, sg: { mr: dst } }, { wrId: 2, sg: many }]));
      expect(err).toMatchObject({ code: 'EINVAL', badWr: 1 });
    } finally {
      r.close();
    }
  });
});

describe('SRQ: close order', () => {
  it("an SRQ in use is EBUSY with the rule book's message; QPs first, then the SRQ; idempotent", () => {
    const r = rig(2, { maxWr: 8 });
    try {
      const err = caught(() => r.srq.close());
      const expected = caught(() => refuseBusy('SRQ', { QP: 2 }));
      expect(err).toMatchObject({ code: 'EBUSY', syscall: 'ibv_destroy_srq', message: expected!.message });
      expect(r.srq.closed).toBe(false);
      // The PD is busy with the SRQ too (asked natively: pd.close() would close its children).
      const pdErr = caught(() => r.pd.native.close());
      expect(pdErr).toMatchObject({ code: 'EBUSY', syscall: 'ibv_dealloc_pd' });
      expect(pdErr!.message).toContain('SRQ');
      r.servers[0].close();
      expect(caught(() => r.srq.close())).toMatchObject({ message: caught(() => refuseBusy('SRQ', { QP: 1 }))!.message });
      r.servers[1].close();
      r.srq.close();
      r.srq.close();
      expect(r.srq.closed).toBe(true);
      expect(caught(() => r.srq.query())).toMatchObject({ code: 'EBADF' });
    } finally {
      r.close();
    }
  });

  it('closing the PD closes its QPs before their SRQ', () => {
    const r = rig(3, { maxWr: 8 });
    try {
      r.pd.close();
      expect(r.srq.closed).toBe(true);
      expect(r.servers.every((q) => q.closed)).toBe(true);
    } finally {
      r.close();
    }
  });
});

describe('SRQ: receive errors, RNR and QP_LAST_WQE_REACHED', () => {
  it('a message longer than the receive: LOC_LEN_ERR, canaries intact, the QP to ERR; the other QPs keep the SRQ', async () => {
    const r = rig(2, { maxWr: 8 });
    const seen = collect(r.ctx);
    try {
      const g = guarded(r.pd, MSG / 2, ['LOCAL_WRITE'], 0x33);
      r.srq.postRecv({ wrId: 7, sg: { mr: g.mr } });
      const sg = stamp(r, 0, 0);
      r.clients[0].postSend({ wrId: 1, sg: { mr: r.src, ...sg } });
      const [recv] = await wcs(r.cq, 1);
      expect(recv).toMatchObject({ wrId: 7n, qpNum: r.servers[0].qpNum });
      expect(localError('LOC_LEN_ERR')).toContain(recv.status);
      const [sent] = await wcs(r.clientCq, 1);
      expect(sent.status).not.toBe('SUCCESS');
      g.expectCanaries();
      expect(await waitFor(() => r.servers[0].state === 'ERR')).toBe(true);
      // QP_LAST_WQE_REACHED: see the soft-only test below (the 6.1 kernel's rxe raises none)
      if (IS_SOFT) expect(await waitFor(() => seen.events.some((e) => e.type === 'QP_LAST_WQE_REACHED' && e.qp === r.servers[0]))).toBe(true);
      // The other QP on the SRQ keeps working.
      const dst = guarded(r.pd, MSG, ['LOCAL_WRITE']);
      r.srq.postRecv({ wrId: 8, sg: { mr: dst.mr } });
      await send(r, 1, 1);
      expect(await wcs(r.cq, 1)).toMatchObject([{ wrId: 8n, status: 'SUCCESS', qpNum: r.servers[1].qpNum }]);
      dst.expectCanaries();
      expect(dst.inner.readUInt32LE(0)).toBe(1);
    } finally {
      seen.stop();
      r.close();
    }
  });

  it('moving a QP on an SRQ to ERR leaves the shared receives in place for the others (nothing flushed)', async () => {
    const r = rig(2, { maxWr: 8 });
    try {
      const dst = r.pd.registerMemory(Buffer.alloc(4 * MSG), { access: ['LOCAL_WRITE'] });
      for (let k = 0; k < 4; k++) r.srq.postRecv({ wrId: k, sg: { mr: dst, offset: k * MSG, length: MSG } });
      r.servers[0].toError();
      expect(r.servers[0].state).toBe('ERR');
      await send(r, 1, 0);
      // The first receive of the ring, not a flush: the errored QP took none of them.
      expect(await wcs(r.cq, 1)).toMatchObject([{ wrId: 0n, status: 'SUCCESS', qpNum: r.servers[1].qpNum }]);
    } finally {
      r.close();
    }
  });

  itSoft('a QP on an SRQ entering ERR raises QP_LAST_WQE_REACHED, once, naming it', async () => {
    const r = rig(2, { maxWr: 8 });
    const seen = collect(r.ctx);
    try {
      r.servers[0].toError();
      const lastWqe = () => seen.events.filter((e) => e.type === 'QP_LAST_WQE_REACHED');
      expect(await waitFor(() => lastWqe().length > 0)).toBe(true);
      r.servers[0].toError(); // already in ERR: no second one
      const dst = r.pd.registerMemory(Buffer.alloc(MSG), { access: ['LOCAL_WRITE'] });
      r.srq.postRecv({ wrId: 1, sg: { mr: dst } });
      await send(r, 1, 0); // a round trip through the device after it
      expect(lastWqe().map((e) => e.qp)).toEqual([r.servers[0]]);
    } finally {
      seen.stop();
      r.close();
    }
  });

  it('an empty SRQ makes senders wait (RNR, retried forever) until a receive is posted', async () => {
    const r = rig(2, { maxWr: 8 });
    try {
      const sg = stamp(r, 1, 0);
      r.clients[1].postSend({ wrId: 1, sg: { mr: r.src, ...sg } });
      // Nothing can complete yet: a marker through the other client proves the device got past it.
      const dst = r.pd.registerMemory(Buffer.alloc(MSG), { access: ['LOCAL_WRITE'] });
      expect(r.cq.poll().length).toBe(0);
      r.srq.postRecv({ wrId: 42, sg: { mr: dst } });
      expect(await wcs(r.cq, 1)).toMatchObject([{ wrId: 42n, status: 'SUCCESS', qpNum: r.servers[1].qpNum }]);
      expect(await wcs(r.clientCq, 1)).toMatchObject([{ wrId: 1n, status: 'SUCCESS' }]);
      expect(dst.buffer.readUInt32LE(0)).toBe(1);
    } finally {
      r.close();
    }
  });

  it('with a finite RNR retry count an empty SRQ fails the send with RNR_RETRY_EXC_ERR', async () => {
    const r = rig(1, { maxWr: 8 }, { rnrRetry: 1, minRnrTimer: 1 });
    try {
      const sg = stamp(r, 0, 0);
      r.clients[0].postSend({ wrId: 9, sg: { mr: r.src, ...sg } });
      const [wc] = await wcs(r.clientCq, 1, 20000);
      expect(wc).toMatchObject({ wrId: 9n, status: 'RNR_RETRY_EXC_ERR' });
    } finally {
      r.close();
    }
  });
});

describe('SRQ: fast path and credits', () => {
  it('completions$ of the server CQ and credit-gated senders move 400 messages through 4 QPs on a 16-slot SRQ', async () => {
    const n = 4;
    const total = 400;
    const r = rig(n, { maxWr: 16 });
    try {
      const slots = r.srq.query().maxWr;
      const dst = r.pd.registerMemory(Buffer.alloc(slots * MSG), { access: ['LOCAL_WRITE'] });
      for (let k = 0; k < slots; k++) r.srq.postRecv({ wrId: k, sg: { mr: dst, offset: k * MSG, length: MSG } });
      let received = 0;
      let bad = 0;
      const perQp = new Map<number, number>();
      const recvSub = r.cq.completions$.subscribe((b) => {
        for (const w of b.toArray()) {
          if (w.status !== 'SUCCESS') bad++;
          const slot = Number(w.wrId);
          const client = dst.buffer.readUInt32LE(slot * MSG);
          if (w.qpNum !== r.servers[client]?.qpNum) bad++;
          perQp.set(client, (perQp.get(client) ?? 0) + 1);
          received++;
          r.srq.postRecv({ wrId: slot, sg: { mr: dst, offset: slot * MSG, length: MSG } }); // recycle the slot
        }
      });
      const sendDone$ = r.clientCq.completions$;
      const credit = credits({ capacity: Math.min(32, r.clientCq.cqe), release$: sendDone$ });
      let posted = 0;
      let completed = 0;
      const pump = () => {
        while (posted < total && credit.tryWaitForCompletion()) {
          const i = posted % n;
          const offset = (i * 16 + (posted % 16)) * MSG;
          r.src.buffer.writeUInt32LE(i, offset);
          r.clients[i].postSend({ wrId: posted++, sg: { mr: r.src, offset, length: MSG } });
        }
      };
      const sendSub = sendDone$.subscribe((b) => {
        completed += b.length;
        for (let i = 0; i < b.length; i++) if (b.status[i] !== 0) bad++;
        pump();
      });
      pump();
      const ok = await waitFor(() => completed === total && received === total, 30000);
      sendSub.unsubscribe();
      recvSub.unsubscribe();
      credit.close();
      expect({ ok, completed, received, bad }).toEqual({ ok: true, completed: total, received: total, bad: 0 });
      for (let i = 0; i < n; i++) expect(perQp.get(i)).toBe(total / n);
      // tryTake on the same source after the push side is done: nothing left over.
      expect(r.cq.completions$.tryTake()).toBeUndefined();
    } finally {
      r.close();
    }
  });
});

describe('SRQ: bad input', () => {
  it('createSrq options are checked before anything native runs', () => {
    const ctx = openDevice(TEST_DEVICE);
    try {
      const pd = ctx.allocPd();
      expectThrow(() => pd.createSrq(undefined as never), 'TypeError');
      expectThrow(() => pd.createSrq({} as never), 'TypeError');
      expectThrow(() => pd.createSrq({ maxWr: 0 }), 'RangeError');
      expectThrow(() => pd.createSrq({ maxWr: 1.5 }), 'RangeError');
      expectThrow(() => pd.createSrq({ maxWr: 8, maxSge: -1 }), 'RangeError');
      expectThrow(() => pd.createSrq({ maxWr: 8, limit: 'x' as never }), 'TypeError');
      // Beyond the device's limits: an errno error from the verb.
      const huge = caught(() => pd.createSrq({ maxWr: 0xffffff }));
      expect(huge).toMatchObject({ syscall: 'ibv_create_srq' });
      expect(typeof huge!.code).toBe('string');
      expect(pd.createSrq({ maxWr: 4 }).query().maxWr).toBeGreaterThanOrEqual(4);
    } finally {
      ctx.close();
    }
  });

  it('srq methods, the native layer and createQp({ srq }) refuse bad input with clear errors', async () => {
    const r = rig(1, { maxWr: 8 });
    const other = openDevice(TEST_DEVICE);
    try {
      const native = r.srq.native as unknown as Record<string, (...a: unknown[]) => unknown>;
      expectThrow(() => r.srq.arm(-1), 'RangeError');
      expectThrow(() => r.srq.arm('1' as never), 'TypeError');
      expectThrow(() => native.arm.call(r.srq.native, {}), 'TypeError');
      expectThrow(() => native.postRecv.call(r.srq.native, 'nope', 1), 'TypeError');
      expectThrow(() => native.postRecv.call(r.srq.native, new Uint8Array(3), 1), 'RangeError');
      expectThrow(() => native.postRecv.call(r.srq.native, new Uint8Array(64), 0), 'RangeError');
      expectThrow(() => r.srq.postRecv({ wrId: 1, sg: { mr: {} as never } }), 'TypeError');
      // Wrong receivers are TypeErrors, never casts.
      const Srq = binding().Srq as unknown as { prototype: Record<string, (...a: unknown[]) => unknown> };
      expectThrow(() => Srq.prototype.query.call({}), 'TypeError');
      expectThrow(() => Srq.prototype.postRecv.call(r.cq.native, new Uint8Array(16), 1), 'TypeError');
      expectThrow(() => new (binding().Srq as unknown as new (x: unknown) => unknown)({}), 'TypeError');
      // createQp: not an Srq, an Srq of another PD / context, a closed Srq.
      const base = { sendCq: r.cq, recvCq: r.cq };
      expectThrow(() => r.pd.createQp({ ...base, srq: {} as never }), 'TypeError');
      const pdNative = r.pd.native as unknown as Record<string, (...a: unknown[]) => unknown>;
      expectThrow(() => pdNative.createQp.call(r.pd.native, r.cq.native, r.cq.native, {}, false, r.cq.native), 'TypeError');
      const pd2 = r.ctx.allocPd();
      const foreign = pd2.createSrq({ maxWr: 4 });
      expect(caught(() => r.pd.createQp({ ...base, srq: foreign }))).toMatchObject({ code: 'EINVAL', syscall: 'ibv_create_qp' });
      const otherSrq = other.allocPd().createSrq({ maxWr: 4 });
      expect(caught(() => r.pd.createQp({ ...base, srq: otherSrq }))).toMatchObject({ code: 'EINVAL' });
      const closed = r.pd.createSrq({ maxWr: 4 });
      closed.close();
      expect(caught(() => r.pd.createQp({ ...base, srq: closed }))).toMatchObject({ code: 'EBADF' });
      expect(caught(() => closed.postRecv({ wrId: 1, sg: { lkey: 0, addr: 0, length: 0 } }))).toMatchObject({ code: 'EBADF' });
      expect(caught(() => closed.arm(1))).toMatchObject({ code: 'EBADF' });
      // A getter that closes the SRQ mid-call: the call sees a closed SRQ, nothing crashes.
      const dst = r.pd.registerMemory(Buffer.alloc(MSG), { access: ['LOCAL_WRITE'] });
      const pd3 = r.ctx.allocPd();
      const tricky = {
        get maxWr() {
          pd3.close();
          return 4;
        },
      };
      expect(caught(() => pd3.createSrq(tricky))).toMatchObject({ code: 'EBADF', syscall: 'ibv_create_srq' });
      // Everything else still works.
      r.srq.postRecv({ wrId: 5, sg: { mr: dst } });
      await send(r, 0, 0);
      expect(await wcs(r.cq, 1)).toMatchObject([{ wrId: 5n, status: 'SUCCESS' }]);
      await expectFreshPairWorks();
    } finally {
      other.close();
      r.close();
    }
  });

  it('a receive naming memory outside its region or a foreign lkey is a protection error; neighbours untouched', async () => {
    const r = rig(1, { maxWr: 8 });
    try {
      const g = guarded(r.pd, MSG, ['LOCAL_WRITE'], 0x44);
      // Past the end of the region by one byte: LOC_PROT_ERR, canaries intact.
      r.srq.postRecv({ wrId: 3, sg: { addr: g.mr.addr + 1n, length: MSG, lkey: g.mr.lkey } });
      const sg = stamp(r, 0, 0);
      r.clients[0].postSend({ wrId: 1, sg: { mr: r.src, ...sg } });
      const [recv] = await wcs(r.cq, 1);
      expect(recv).toMatchObject({ wrId: 3n });
      expect(localError('LOC_PROT_ERR')).toContain(recv.status);
      g.expectCanaries();
      expect(g.inner.every((b) => b === 0x44)).toBe(true);
    } finally {
      r.close();
    }
  });
});

describe('SRQ: many QPs', () => {
  it('100 QPs on one SRQ each deliver a message into the one ring', async () => {
    const n = 100;
    const r = rig(n, { maxWr: 128 });
    try {
      const dst = r.pd.registerMemory(Buffer.alloc(n * MSG), { access: ['LOCAL_WRITE'] });
      for (let k = 0; k < n; k++) r.srq.postRecv({ wrId: k, sg: { mr: dst, offset: k * MSG, length: MSG } });
      for (let i = 0; i < n; i++) {
        const sg = stamp(r, i, 0);
        r.clients[i].postSend({ wrId: i, sg: { mr: r.src, ...sg } });
      }
      expect((await pollN(r.clientCq, n, 20000)).length).toBe(n);
      const got = await wcs(r.cq, n, 20000);
      expect(got).toHaveLength(n);
      const clientsSeen = new Set<number>();
      for (const w of got) {
        expect(w.status).toBe('SUCCESS');
        const client = dst.buffer.readUInt32LE(Number(w.wrId) * MSG);
        expect(w.qpNum).toBe(r.servers[client].qpNum);
        clientsSeen.add(client);
      }
      expect(clientsSeen.size).toBe(n);
    } finally {
      r.close();
    }
  });
});

describe('SRQ: UD QPs', () => {
  /** A context with one SRQ, `n` UD QPs on it (one CQ) and a UD sender with its own CQ. */
  function udRig(n: number, maxWr: number) {
    const ctx = openDevice(TEST_DEVICE);
    try {
      const pd = ctx.allocPd();
      const cq = ctx.createCq({ cqe: 64 });
      const senderCq = ctx.createCq({ cqe: 64 });
      const srq = pd.createSrq({ maxWr });
      const servers = [...Array(n)].map(() => pd.createQp({ type: 'UD', qkey: QKEY, sendCq: cq, recvCq: cq, srq }));
      const sender = pd.createQp({ type: 'UD', qkey: QKEY, sendCq: senderCq, recvCq: senderCq });
      for (const q of [...servers, sender]) q.activate();
      const gid = ctx.queryGid(1, UD_GID_INDEX);
      const ah = pd.createAh({ gid, gidIndex: UD_GID_INDEX });
      return { ctx, pd, cq, senderCq, srq, servers, sender, gid, ah };
    } catch (err) {
      ctx.close();
      throw err;
    }
  }

  it('two UD QPs on one SRQ take datagrams from the shared ring in order: GRH in front, srcQp, byte counts, the limit event', async () => {
    const r = udRig(2, 16);
    const seen = collect(r.ctx);
    try {
      const slot = UD_GRH + MSG;
      const dst = guarded(r.pd, 6 * slot, ['LOCAL_WRITE'], 0xee, 64);
      for (let k = 0; k < 6; k++) r.srq.postRecv({ wrId: k, sg: { mr: dst.mr, offset: k * slot, length: slot } });
      r.srq.arm(3);
      const src = r.pd.registerMemory(randomBytes(MSG), { access: ['LOCAL_WRITE'] });
      const lengths = [MSG, 1, 17, 0];
      for (let k = 0; k < lengths.length; k++) {
        const to = r.servers[k % 2];
        r.sender.postSend({ wrId: 100 + k, sg: { mr: src, length: lengths[k] }, ah: r.ah, remoteQpn: to.qpNum, remoteQkey: QKEY });
        // One at a time: each lands before the next is sent, so the ring order is the sending order.
        const [wc] = await wcs(r.cq, 1);
        expect(wc).toMatchObject({ wrId: BigInt(k), status: 'SUCCESS', opcode: 'RECV', qpNum: to.qpNum, srcQp: r.sender.qpNum, byteLen: UD_GRH + lengths[k] });
        expect(wc.flags & WC_FLAGS.GRH).toBe(WC_FLAGS.GRH);
        const area = dst.inner.subarray(k * slot, (k + 1) * slot);
        const gid = gidBytes(r.gid);
        expect(decodeGrh(area.subarray(0, UD_GRH), isIpv4Mapped(gid)).sgid.equals(gid)).toBe(true);
        expect(area.subarray(UD_GRH, UD_GRH + lengths[k]).equals(src.buffer.subarray(0, lengths[k]))).toBe(true);
        expect(area.subarray(UD_GRH + lengths[k]).every((x) => x === 0xee)).toBe(true);
      }
      expect((await pollN(r.senderCq, lengths.length)).allOk()).toBe(true);
      // Six posted, four taken: two left, below the armed 3.
      expect(await waitFor(() => seen.events.some((e) => e.type === 'SRQ_LIMIT_REACHED'))).toBe(true);
      const limits = seen.events.filter((e) => e.type === 'SRQ_LIMIT_REACHED');
      expect(limits).toHaveLength(1);
      expect(limits[0].srq).toBe(r.srq);
      expect(r.srq.query().limit).toBe(0);
      // The untouched slots and the canaries around the region.
      expect(dst.inner.subarray(4 * slot).every((x) => x === 0xee)).toBe(true);
      dst.expectCanaries();
      // A UD QP on an SRQ has no receive queue of its own.
      expect(caught(() => r.servers[0].postRecv({ wrId: 9, sg: { mr: dst.mr, length: slot } }))).toMatchObject({ code: 'EINVAL' });
      expect(r.servers[1].srq).toBe(r.srq);
    } finally {
      seen.stop();
      r.ctx.close();
    }
  });

  it('a datagram finding the SRQ empty is dropped (UD has no RNR); a receive too small fails LOC_LEN_ERR on that QP only', async () => {
    const r = udRig(2, 8);
    try {
      const src = r.pd.registerMemory(Buffer.alloc(MSG, 0x42), { access: ['LOCAL_WRITE'] });
      r.sender.postSend({ wrId: 1, sg: { mr: src }, ah: r.ah, remoteQpn: r.servers[0].qpNum, remoteQkey: QKEY });
      expect((await wcs(r.senderCq, 1))[0]).toMatchObject({ status: 'SUCCESS' });
      await new Promise((res) => setTimeout(res, 200));
      expect(r.cq.poll().length).toBe(0);
      const dst = r.pd.registerMemory(Buffer.alloc(3 * (UD_GRH + MSG)), { access: ['LOCAL_WRITE'] });
      // Too small for the GRH and the payload: the receive fails, its QP goes to ERR.
      r.srq.postRecv({ wrId: 2, sg: { mr: dst, offset: 0, length: UD_GRH + MSG - 1 } });
      r.srq.postRecv({ wrId: 3, sg: { mr: dst, offset: UD_GRH + MSG, length: UD_GRH + MSG } });
      r.sender.postSend({ wrId: 4, sg: { mr: src }, ah: r.ah, remoteQpn: r.servers[0].qpNum, remoteQkey: QKEY });
      const [bad] = await wcs(r.cq, 1);
      expect(bad.wrId).toBe(2n);
      expect(['LOC_LEN_ERR', 'LOC_QP_OP_ERR']).toContain(bad.status);
      expect(await waitFor(() => r.servers[0].state === 'ERR')).toBe(true);
      // The other QP still takes the next shared receive.
      r.sender.postSend({ wrId: 5, sg: { mr: src }, ah: r.ah, remoteQpn: r.servers[1].qpNum, remoteQkey: QKEY });
      const [good] = await wcs(r.cq, 1);
      expect(good).toMatchObject({ wrId: 3n, status: 'SUCCESS', qpNum: r.servers[1].qpNum, byteLen: UD_GRH + MSG });
    } finally {
      r.ctx.close();
    }
  });
});
