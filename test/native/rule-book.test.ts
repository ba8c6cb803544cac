/**
 * The addon (src/native/rules/) and the TS rule book (src/core/refusals.ts)
 * state the same refusals: same error class, message, code, errno and verb,
 * on the device under test and on the virtual CQ of the testing kit.
 */
import { refuseBusy, refuseBusyCq, refuseClosed, refuseOverAck } from '../../src/core/refusals';
import { virtualCq } from '../../src/testing';
import { WrEncoder } from '../../src/verbs/work-request';
import type { Mr } from '../../src';
import { makePair, Pair, region, TEST_GID_INDEX, waitFor } from '../support/device';
import { caught } from '../support/verbs-checks';

/** Sends A -> B and reads B's completion event from the channel, leaving it unacked; returns B's receive region. */
async function readOneEventOnB(p: Pair): Promise<Mr> {
  const recv = region(p.pd, 8);
  p.b.postRecv({ wrId: 1, sg: { mr: recv } });
  p.cqB.requestNotify();
  p.a.postSend({ wrId: 2, sg: { mr: region(p.pd, 8) }, signaled: false });
  expect(await waitFor(() => p.channel.tryGetEvent() !== undefined)).toBe(true);
  return recv;
}

/** The parts of an error the rules fix. */
function shape(err: unknown): Record<string, unknown> {
  const e = err as Error & Record<string, unknown>;
  return { class: e?.constructor?.name, message: e?.message, code: e?.code, errno: e?.errno, syscall: e?.syscall };
}

describe('one rule book for the addon and TS', () => {
  it('refuses an over-ack the same way on the device, on the virtual CQ and in TS', () => {
    const p = makePair();
    try {
      const native = caught(() => p.cqA.ack(3));
      const cq = virtualCq(undefined);
      const virtual = caught(() => cq.ack(3));
      const ts = caught(() => refuseOverAck(3, 0));
      expect(native?.name).toBe('RangeError'); // another realm's RangeError: jest runs tests in a vm context
      expect(shape(native)).toEqual(shape(ts));
      expect(shape(virtual)).toEqual(shape(ts));
    } finally {
      p.close();
    }
  });

  it('refuses to destroy a CQ with unacked events the same way on the device and on the virtual CQ', async () => {
    const p = makePair();
    try {
      await readOneEventOnB(p);
      p.b.close();
      const native = caught(() => p.cqB.close());

      const cq = virtualCq(undefined);
      cq.channel.events$.subscribe();
      cq.requestNotify();
      cq.addCompletions({});
      const virtual = caught(() => cq.close());

      expect(native).toMatchObject({ code: 'EBUSY', syscall: 'ibv_destroy_cq' });
      expect(shape(native)).toEqual(shape(caught(() => refuseBusyCq(0, 1, 0))));
      expect(shape(virtual)).toEqual(shape(native));
      p.cqB.ack(1);
      cq.ack(1);
    } finally {
      p.close();
    }
  });

  it('refuses to destroy a CQ, PD, channel or context still in use with the TS rule book\'s messages', () => {
    const p = makePair(); // one channel, two CQs, one PD with two QPs
    try {
      region(p.pd, 8);
      expect(shape(caught(() => p.cqA.native.close()))).toEqual(shape(caught(() => refuseBusy('CQ', { QP: 1 }))));
      expect(shape(caught(() => p.pd.native.close()))).toEqual(shape(caught(() => refuseBusy('PD', { QP: 2, MR: 1 }))));
      expect(shape(caught(() => p.channel.native.close()))).toEqual(
        shape(caught(() => refuseBusy('completion channel', { CQ: 2 }))),
      );
      expect(shape(caught(() => p.ctx.native.close()))).toEqual(
        shape(caught(() => refuseBusy('context', { QP: 2, CQ: 2, MR: 1, PD: 1, 'completion channel': 1 }))),
      );
    } finally {
      p.close();
    }
  });

  it('refuses a post on a closed QP or SRQ the same way in the addon and in TS, before looking at the work requests', () => {
    const p = makePair();
    try {
      const srq = p.pd.createSrq({ maxWr: 4 });
      const mr = region(p.pd, 8);
      p.a.close();
      srq.close();
      mr.close(); // what the WRs name is closed too: the QP or SRQ is reported first
      // Well-formed packed WRs for the addon itself (a raw entry names no MR).
      const encoder = new WrEncoder();
      const raw = { addr: 0n, length: 0, lkey: 0 };
      encoder.encodeSend({ wrId: 1, sg: raw });
      const send = encoder.bytes.slice(); // the addon reads as many WRs as it is told: one
      encoder.encodeRecv({ wrId: 1, sg: raw });
      const recv = encoder.bytes.slice();
      const cases = [
        { native: () => p.a.native.postSend(send, 1), ts: () => p.a.postSend({ wrId: 1, sg: { mr } }), what: 'queue pair', verb: 'ibv_post_send' },
        { native: () => p.a.native.postRecv(recv, 1), ts: () => p.a.postRecv({ wrId: 1, sg: { mr } }), what: 'queue pair', verb: 'ibv_post_recv' },
        { native: () => srq.native.postRecv(recv, 1), ts: () => srq.postRecv({ wrId: 1, sg: { mr } }), what: 'shared receive queue', verb: 'ibv_post_srq_recv' },
      ];
      for (const c of cases) {
        const rule = shape(caught(() => refuseClosed(c.what, c.verb, true)));
        expect(rule).toMatchObject({ code: 'EBADF', errno: -9, syscall: c.verb, message: `${c.verb} failed: EBADF (Bad file descriptor): the ${c.what} is closed` });
        expect(shape(caught(c.native))).toEqual(rule);
        expect(shape(caught(c.ts))).toEqual(rule);
      }
    } finally {
      p.close();
    }
  });

  it('pd.close() closes every kind of child the PD made (QPs, SRQs, address handles, MRs); the PD itself refuses while any lives', () => {
    const p = makePair();
    try {
      const srq = p.pd.createSrq({ maxWr: 4 });
      const onSrq = p.pd.createQp({ sendCq: p.cqA, recvCq: p.cqA, srq });
      const mr = region(p.pd, 8);
      const ah = p.pd.createAh({ gid: p.ctx.queryGid(1, TEST_GID_INDEX ?? 0), gidIndex: TEST_GID_INDEX ?? 0 });
      // One rule for every kind: the verb refuses (EBUSY) while children live ...
      expect(shape(caught(() => p.pd.native.close()))).toEqual(shape(caught(() => refuseBusy('PD', { QP: 3, SRQ: 1, AH: 1, MR: 1 }))));
      // ... and pd.close() closes them first, in the teardown order, then the PD.
      p.pd.close();
      for (const o of [p.a, p.b, onSrq, srq, ah, mr, p.pd]) expect(o.closed).toBe(true);
    } finally {
      p.close();
    }
  });

  it('closes a context with every kind of child in the safe order, leaving nothing to refuse', async () => {
    const p = makePair();
    const recv = await readOneEventOnB(p);
    expect(p.cqB.unacked).toBe(1); // settled (acked) by the teardown before the CQ goes
    p.ctx.close();
    for (const o of [p.a, p.b, p.cqA, p.cqB, recv, p.pd, p.channel, p.ctx]) expect(o.closed).toBe(true);
  });
});
