/**
 * Who sent a received message, as its completion says: `srcQp`, the
 * sending port's LID (`slid`), the service level (`sl`) and the destination
 * path bits, for UD and RC receives. On soft0 (InfiniBand ports, LIDs) and
 * on rxe0 (RoCE: no LIDs, so `slid` is 0 as rxe reports it, and the sender
 * is named by the GID in the GRH); completions injected with these fields
 * (soft).
 */
import { createSoftDevice, listDevices, openDevice, Context, Cq, WC_FLAGS, WorkCompletion } from '../../src';
import { itSoft, makePair, region, expectThrow } from '../support/device';
import { makeUdSet, QKEY, UD_GID_INDEX, completions, postRecv, gidBytes, isIpv4Mapped, decodeGrh } from '../support/ud';
import { scaled } from '../support/slow';

const GRH = 40;
const LINK_ETHERNET = 2;

jest.setTimeout(scaled(60_000));

/** Whether the device under test is RoCE (no LIDs: `slid` reads 0). */
function isRoce(ctx: Context): boolean {
  return ctx.queryPort(1).linkLayer === LINK_ETHERNET;
}

/** A second soft device: its port has a LID of its own. */
function otherSoftDevice(): Context {
  if (!listDevices().some((d) => d.name === 'soft-wc1')) createSoftDevice({ name: 'soft-wc1' });
  return openDevice('soft-wc1');
}

/** The first receive completion among `n` completions of `cq`. */
async function firstRecv(cq: Cq, n: number): Promise<WorkCompletion> {
  const wc = (await completions(cq, n)).toArray().find((w) => w.opcode === 'RECV' || w.opcode === 'RECV_RDMA_WITH_IMM');
  expect(wc).toBeDefined();
  return wc!;
}

describe('the sender in a work completion', () => {
  it("a UD receive names its sender: srcQp, slid (the port's LID on InfiniBand, 0 on RoCE) and the GID in the GRH", async () => {
    const set = makeUdSet(2);
    try {
      const [a, b] = set.ends;
      const recv = set.pd.registerMemory(Buffer.alloc(GRH + 64), { access: ['LOCAL_WRITE'] });
      postRecv(b.qp, recv, 1, 0, GRH + 64);
      const msg = set.pd.registerMemory(Buffer.from('who am i'), { access: ['LOCAL_WRITE'] });
      a.qp.postSend({ wrId: 9, sg: { mr: msg }, ah: set.ahTo(b), remoteQpn: b.qp.qpNum, remoteQkey: QKEY });
      const sent = (await completions(a.cq, 1)).at(0)!;
      // A send completion names no sender.
      expect(sent).toMatchObject({ status: 'SUCCESS', opcode: 'SEND', slid: 0, sl: 0, dlidPathBits: 0 });
      const batch = await completions(b.cq, 1);
      const wc = batch.at(0)!;
      const lid = isRoce(set.ctx) ? 0 : set.ctx.queryPort(1).lid;
      if (!isRoce(set.ctx)) expect(lid).toBeGreaterThan(0);
      expect(wc).toMatchObject({ status: 'SUCCESS', opcode: 'RECV', srcQp: a.qp.qpNum, slid: lid, sl: 0, dlidPathBits: 0 });
      // The columns say the same as the object.
      expect([batch.slid[0], batch.sl[0], batch.dlidPathBits[0]]).toEqual([lid, 0, 0]);
      expect(wc.flags & WC_FLAGS.GRH).toBe(WC_FLAGS.GRH);
      const gid = gidBytes(a.gid);
      expect(decodeGrh(recv.buffer.subarray(0, GRH), isIpv4Mapped(gid)).sgid.equals(gid)).toBe(true);
    } finally {
      set.close();
    }
  });

  itSoft("a LID-addressed datagram between two InfiniBand soft ports carries the sending port's LID and the address handle's SL", async () => {
    const here = makeUdSet(1);
    const there = makeUdSet(1, { ctx: otherSoftDevice() });
    try {
      const [a] = here.ends;
      const [b] = there.ends;
      const lidA = here.ctx.queryPort(1).lid;
      const lidB = there.ctx.queryPort(1).lid;
      expect(lidA).not.toBe(lidB);
      const inB = there.pd.registerMemory(Buffer.alloc(GRH + 16), { access: ['LOCAL_WRITE'] });
      const inA = here.pd.registerMemory(Buffer.alloc(GRH + 16), { access: ['LOCAL_WRITE'] });
      postRecv(b.qp, inB, 1, 0, GRH + 16);
      postRecv(a.qp, inA, 2, 0, GRH + 16);
      const msgA = here.pd.registerMemory(Buffer.from('ping'), { access: ['LOCAL_WRITE'] });
      const msgB = there.pd.registerMemory(Buffer.from('pong'), { access: ['LOCAL_WRITE'] });
      a.qp.postSend({ wrId: 1, sg: { mr: msgA }, ah: here.pd.createAh({ lid: lidB, sl: 9 }), remoteQpn: b.qp.qpNum, remoteQkey: QKEY });
      const atB = await firstRecv(b.cq, 1);
      expect(atB).toMatchObject({ status: 'SUCCESS', srcQp: a.qp.qpNum, slid: lidA, sl: 9, dlidPathBits: 0 });
      expect(atB.flags & WC_FLAGS.GRH).toBe(0);
      // The answer goes back to the LID the request came from.
      b.qp.postSend({ wrId: 2, sg: { mr: msgB }, ah: there.pd.createAh({ lid: atB.slid, sl: 15 }), remoteQpn: atB.srcQp, remoteQkey: QKEY });
      const atA = await firstRecv(a.cq, 2);
      expect(atA).toMatchObject({ status: 'SUCCESS', srcQp: b.qp.qpNum, slid: lidB, sl: 15, dlidPathBits: 0 });
      expect(inA.buffer.subarray(GRH, GRH + 4).toString()).toBe('pong');
    } finally {
      there.ctx.close();
      here.close();
    }
  });

  it("an RC receive carries the remote port's LID (0 on RoCE) and the path's SL; send completions carry none", async () => {
    const p = makePair({ connect: { sl: 2 } });
    try {
      const roce = isRoce(p.ctx);
      const lid = roce ? 0 : p.ctx.queryPort(1).lid;
      const buf = region(p.pd, 64);
      const target = region(p.pd, 64);
      p.b.postRecv({ wrId: 1, sg: { mr: buf } });
      p.b.postRecv({ wrId: 2, sg: { mr: buf } });
      p.a.postSend({ wrId: 3, sg: { mr: buf, length: 8 } });
      p.a.postSend({ wrId: 4, opcode: 'RDMA_WRITE_WITH_IMM', imm: 7, sg: { mr: buf, length: 8 }, remote: { addr: target.remoteAddr(), rkey: target.rkey } });
      const got = (await completions(p.cqB, 2)).toArray();
      // rxe reports no SL on RoCE (its CQEs carry none); soft0 the path's.
      const sl = roce ? 0 : 2;
      // srcQp is defined for UD receives only (ibv_poll_cq(3)): rxe leaves it 0 on RC, so it is not checked here.
      expect(got.map((w) => [w.wrId, w.opcode, w.slid, w.sl, w.dlidPathBits])).toEqual([
        [1n, 'RECV', lid, sl, 0],
        [2n, 'RECV_RDMA_WITH_IMM', lid, sl, 0],
      ]);
      const sent = (await completions(p.cqA, 2)).toArray();
      expect(sent.map((w) => [w.status, w.slid, w.sl])).toEqual([
        ['SUCCESS', 0, 0],
        ['SUCCESS', 0, 0],
      ]);
    } finally {
      p.close();
    }
  });

  itSoft("an RC pair across two soft devices: each side's receives name the other device's LID", async () => {
    const ctxA = openDevice('soft0');
    const ctxB = otherSoftDevice();
    try {
      const side = (ctx: Context) => {
        const pd = ctx.allocPd();
        const cq = ctx.createCq({ cqe: 16 });
        const qp = pd.createQp({ sendCq: cq, recvCq: cq });
        return { pd, cq, qp, mr: region(pd, 64) };
      };
      const a = side(ctxA);
      const b = side(ctxB);
      a.qp.connect(b.qp.endpoint(), { sl: 6 });
      b.qp.connect(a.qp.endpoint(), { sl: 11 });
      type Side = ReturnType<typeof side>;
      const exchange = async (from: Side, to: Side) => {
        to.qp.postRecv({ wrId: 1, sg: { mr: to.mr } });
        from.qp.postSend({ wrId: 2, sg: { mr: from.mr, length: 4 } });
        const got = await firstRecv(to.cq, 1);
        // The sender's own completion, out of the way of its later receive.
        expect((await completions(from.cq, 1)).at(0)).toMatchObject({ opcode: 'SEND', status: 'SUCCESS' });
        return got;
      };
      expect(await exchange(a, b)).toMatchObject({ slid: ctxA.queryPort(1).lid, sl: 6 });
      expect(await exchange(b, a)).toMatchObject({ slid: ctxB.queryPort(1).lid, sl: 11 });
      expect(ctxA.queryPort(1).lid).not.toBe(ctxB.queryPort(1).lid);
    } finally {
      ctxB.close();
      ctxA.close();
    }
  });

  itSoft('injected completions carry srcQp, slid, sl and dlidPathBits; values beyond their widths are refused', async () => {
    const ctx = openDevice('soft0');
    try {
      const cq = ctx.createCq({ cqe: 8 });
      const f = ctx.faults;
      f.errorCompletion(cq, { wrId: 5, status: 'SUCCESS', opcode: 'RECV', byteLen: 48, srcQp: 0xabcdef, slid: 0xbeef, sl: 15, dlidPathBits: 127 });
      const wc = (await completions(cq, 1)).at(0)!;
      expect(wc).toMatchObject({ wrId: 5n, status: 'SUCCESS', opcode: 'RECV', byteLen: 48, srcQp: 0xabcdef, slid: 0xbeef, sl: 15, dlidPathBits: 127 });
      for (const bad of [{ slid: 0x10000 }, { slid: -1 }, { sl: 16 }, { dlidPathBits: 128 }, { srcQp: 0x1000000 }, { slid: 1.5 }]) {
        expectThrow(() => f.errorCompletion(cq, { wrId: 6, ...bad }), 'RangeError', { message: expect.stringMatching(Object.keys(bad)[0]) });
      }
      expectThrow(() => f.errorCompletion(cq, { wrId: 6, sl: '1' as unknown as number }), 'TypeError');
      expect(cq.poll().length).toBe(0);
    } finally {
      ctx.close();
    }
  });

  it('reach JS through completions$ (the fast path) too', async () => {
    const set = makeUdSet(2);
    try {
      const [a, b] = set.ends;
      const recv = set.pd.registerMemory(Buffer.alloc(GRH + 16), { access: ['LOCAL_WRITE'] });
      postRecv(b.qp, recv, 1, 0, GRH + 16);
      const msg = set.pd.registerMemory(Buffer.from('fast'), { access: ['LOCAL_WRITE'] });
      const first = new Promise<WorkCompletion>((resolve) => {
        const sub = b.cq.completions$.subscribe((batch) => {
          for (const wc of batch) {
            if (wc.opcode !== 'RECV') continue;
            sub.unsubscribe();
            resolve(wc);
          }
        });
      });
      a.qp.postSend({ wrId: 1, sg: { mr: msg }, ah: set.pd.createAh({ gid: b.gid, gidIndex: UD_GID_INDEX }), remoteQpn: b.qp.qpNum, remoteQkey: QKEY });
      const wc = await first;
      expect(wc).toMatchObject({ srcQp: a.qp.qpNum, slid: isRoce(set.ctx) ? 0 : set.ctx.queryPort(1).lid, dlidPathBits: 0 });
    } finally {
      set.close();
    }
  });
});
