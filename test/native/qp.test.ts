import { randomBytes } from 'crypto';
import { DEFAULT_RETRY_COUNT, DEFAULT_RNR_RETRY_COUNT, openDevice, WC_FLAGS } from '../../src';
import { WrEncoder } from '../../src/verbs/work-request';
import { QP_ATTR_MASK, RC_TRANSITION_MASK } from '../../src/verbs/qp-attr-mask';
import { makePair, region, pollN, itSoft, expectThrow, TEST_DEVICE, TEST_GID_INDEX, IS_SOFT } from '../support/device';
import { wcs, expectQuietAfter, throughMarker, sendOnce, caught, localError, pastCapacityLength, expectPastCapacity } from '../support/verbs-checks';

// ibv_qp_attr_mask bits and the masks the connection steps use, as the verbs classes send them.
const M = QP_ATTR_MASK;
const INIT_MASK = RC_TRANSITION_MASK.INIT;
const RTR_MASK = RC_TRANSITION_MASK.RTR;

/**
 * A context with a PD, one CQ and two unconnected QPs in RESET. `toRtr(qp)`
 * moves `qp` to RTR towards the other one, with the GID the device needs
 * (RoCE has no LIDs: the AV must carry a GRH, TEST_GID_INDEX).
 */
function loose() {
  const ctx = openDevice(TEST_DEVICE);
  const cq = ctx.createCq({ cqe: 64 });
  const pd = ctx.allocPd();
  const cap = { maxSendWr: 8, maxRecvWr: 8, maxSendSge: 1, maxRecvSge: 1 };
  const a = pd.createQp({ sendCq: cq, recvCq: cq, cap });
  const b = pd.createQp({ sendCq: cq, recvCq: cq, cap });
  const toRtr = (qp: typeof a) => qp.toRtr((qp === a ? b : a).endpoint({ gidIndex: TEST_GID_INDEX }), { gidIndex: TEST_GID_INDEX });
  return { ctx, cq, pd, a, b, toRtr, close: () => ctx.close() };
}

describe('QP state machine', () => {
  it('goes RESET -> INIT -> RTR -> RTS', () => {
    const l = loose();
    try {
      expect(l.a.state).toBe('RESET');
      l.a.toInit();
      expect(l.a.state).toBe('INIT');
      l.toRtr(l.a);
      expect(l.a.state).toBe('RTR');
      l.a.toRts();
      expect(l.a.state).toBe('RTS');
    } finally {
      l.close();
    }
  });

  it('rejects illegal transitions with EINVAL and keeps the state', () => {
    const l = loose();
    try {
      // RESET -> RTR
      expectThrow(() => l.toRtr(l.a), 'Error', { code: 'EINVAL', syscall: 'ibv_modify_qp' });
      expect(l.a.state).toBe('RESET');
      // RESET -> RTS
      expectThrow(() => l.a.toRts(), 'Error', { code: 'EINVAL', syscall: 'ibv_modify_qp' });
      expect(l.a.state).toBe('RESET');
      l.a.toInit();
      // INIT -> RTS (skipping RTR)
      expectThrow(() => l.a.toRts(), 'Error', { code: 'EINVAL', syscall: 'ibv_modify_qp' });
      expect(l.a.state).toBe('INIT');
      l.toRtr(l.a);
      // RTR -> INIT (backwards)
      expectThrow(
        () => l.a.native.modify({ qpState: 1, pkeyIndex: 0, portNum: 1, accessFlags: 1 }, INIT_MASK),
        'Error',
        { code: 'EINVAL', syscall: 'ibv_modify_qp' },
      );
      expect(l.a.state).toBe('RTR');
      l.a.toRts();
      expect(l.a.state).toBe('RTS');
    } finally {
      l.close();
    }
  });

  it('rejects transitions with missing required attributes (EINVAL)', () => {
    const l = loose();
    try {
      // RESET -> INIT without the port
      const e1 = expectThrow(
        () => l.a.native.modify({ qpState: 1, pkeyIndex: 0, accessFlags: 1 }, INIT_MASK & ~M.PORT),
        'Error',
        { code: 'EINVAL', syscall: 'ibv_modify_qp' },
      );
      expect(e1.message.length).toBeGreaterThan(0);
      expect(l.a.state).toBe('RESET');
      l.a.toInit();
      // INIT -> RTR without the destination QP number
      const eb = l.b.endpoint({ gidIndex: TEST_GID_INDEX });
      // On RoCE the AV needs a GRH (the GID to reach b); LID routing otherwise.
      const grh = TEST_GID_INDEX === undefined ? {} : { dgid: eb.gid, sgidIndex: TEST_GID_INDEX, hopLimit: 1 };
      const rtr = {
        qpState: 2,
        pathMtu: 3,
        destQpNum: l.b.qpNum,
        rqPsn: 0,
        maxDestRdAtomic: 1,
        minRnrTimer: 12,
        ah: { dlid: eb.lid, sl: 0, portNum: 1, ...grh },
      };
      expectThrow(() => l.a.native.modify(rtr, RTR_MASK & ~M.DEST_QPN), 'Error', { code: 'EINVAL', syscall: 'ibv_modify_qp' });
      expect(l.a.state).toBe('INIT');
      // INIT -> RTR without the path (AV)
      expectThrow(() => l.a.native.modify(rtr, RTR_MASK & ~M.AV), 'Error', { code: 'EINVAL', syscall: 'ibv_modify_qp' });
      expect(l.a.state).toBe('INIT');
      l.a.native.modify(rtr, RTR_MASK);
      expect(l.a.state).toBe('RTR');
      // RTR -> RTS without the SQ PSN
      const rts = { qpState: 3, timeout: 14, retryCnt: 7, rnrRetry: 7, sqPsn: 0, maxRdAtomic: 1 };
      const rtsMask = RC_TRANSITION_MASK.RTS;
      expectThrow(() => l.a.native.modify(rts, rtsMask & ~M.SQ_PSN), 'Error', { code: 'EINVAL', syscall: 'ibv_modify_qp' });
      expect(l.a.state).toBe('RTR');
      l.a.native.modify(rts, rtsMask);
      expect(l.a.state).toBe('RTS');
    } finally {
      l.close();
    }
  });

  it('toError() flushes both queues with WR_FLUSH_ERR (receives with opcode RECV)', async () => {
    // b's sends wait on a receiver that is not ready (rnrRetry 7 = forever), so they stay outstanding.
    const p = makePair();
    try {
      const send = region(p.pd, 32, undefined, 3);
      const recv = region(p.pd, 32 * 3);
      for (let i = 0; i < 3; i++) p.b.postRecv({ wrId: 100 + i, sg: { mr: recv, offset: 32 * i, length: 32 } });
      p.b.postSend([
        { wrId: 200, sg: { mr: send } },
        { wrId: 201, sg: { mr: send } },
      ]);
      // b's sends wait (no receive at a), its receives are not consumed; a marker a -> b proves the device ran.
      await expectQuietAfter(p.a, p.cqB);
      p.b.toError();
      expect(p.b.state).toBe('ERR');
      const got = await wcs(p.cqB, 5);
      expect(got).toHaveLength(5);
      const byId = new Map(got.map((w) => [w.wrId, w]));
      for (const id of [100n, 101n, 102n]) {
        expect(byId.get(id)).toMatchObject({ status: 'WR_FLUSH_ERR', qpNum: p.b.qpNum });
        // ibv_poll_cq(3): on an error completion only wr_id, status, qp_num and
        // vendor_err are defined; rxe leaves a flushed receive's opcode at 0
        // (SEND). The soft device sets RECV, and is held to it.
        if (IS_SOFT) expect(byId.get(id)?.opcode).toBe('RECV');
      }
      for (const id of [200n, 201n]) {
        expect(byId.get(id)).toMatchObject({ status: 'WR_FLUSH_ERR', qpNum: p.b.qpNum });
      }
      await expectQuietAfter(p.b, p.cqB); // each WR exactly once: the marker is flushed behind them
      expect(recv.buffer.every((x) => x === 0)).toBe(true);
    } finally {
      p.close();
    }
  });
});

describe('QP operations', () => {
  it('SEND: bytes arrive, RECV completion names both QPs, sender completes SEND', async () => {
    const p = makePair();
    try {
      const data = randomBytes(1000);
      const src = p.pd.registerMemory(Buffer.from(data));
      const dst = region(p.pd, 1024);
      p.b.postRecv({ wrId: 7, sg: { mr: dst } });
      p.a.postSend({ wrId: 8, sg: { mr: src } });
      const [r] = await wcs(p.cqB, 1);
      const [s] = await wcs(p.cqA, 1);
      expect(r).toMatchObject({ wrId: 7n, status: 'SUCCESS', opcode: 'RECV', byteLen: 1000, qpNum: p.b.qpNum });
      // src_qp is defined for UD only (ibv_poll_cq(3)); rxe leaves it 0 on RC.
      // The soft device fills it in on RC too, and is held to that.
      if (IS_SOFT) expect(r.srcQp).toBe(p.a.qpNum);
      expect(r.flags & WC_FLAGS.WITH_IMM).toBe(0);
      expect(r.imm).toBeUndefined();
      expect(s).toMatchObject({ wrId: 8n, status: 'SUCCESS', opcode: 'SEND', qpNum: p.a.qpNum });
      expect(dst.buffer.subarray(0, 1000).equals(data)).toBe(true);
      expect(dst.buffer.subarray(1000).every((x) => x === 0)).toBe(true);
    } finally {
      p.close();
    }
  });

  it('the addon reads packed WRs from any view at its offset (Uint8Array, Uint32Array, DataView) or an ArrayBuffer; a detached one is a RangeError', async () => {
    const p = makePair();
    try {
      const src = region(p.pd, 64, undefined, 5);
      const dst = region(p.pd, 5 * 64);
      // One receive packed as the library packs it: a 16-byte header and one
      // 16-byte scatter/gather entry (src/native/wrap/wr_codec.h).
      const packed = (wrId: number): Uint8Array => {
        const encoder = new WrEncoder();
        expect(encoder.encodeRecv({ wrId, sg: { mr: dst, offset: (wrId - 1) * 64, length: 64 } })).toBe(1);
        return encoder.bytes.slice(0, 32);
      };
      const atOffset = new Uint8Array(40);
      atOffset.set(packed(1), 8);
      const words = new Uint32Array(packed(2).buffer);
      const viewBuffer = new ArrayBuffer(48);
      new Uint8Array(viewBuffer).set(packed(3), 16);
      const containers = [atOffset.subarray(8), words, new DataView(viewBuffer, 16, 32), packed(4).buffer as ArrayBuffer];
      for (const c of containers) p.b.native.postRecv(c, 1);
      for (let i = 0; i < 4; i++) p.a.postSend({ wrId: 10 + i, sg: { mr: src, length: 8 + i }, signaled: false });
      const got = await wcs(p.cqB, 4);
      expect(got.map((w) => [w.wrId, w.status, w.byteLen])).toEqual([[1n, 'SUCCESS', 8], [2n, 'SUCCESS', 9], [3n, 'SUCCESS', 10], [4n, 'SUCCESS', 11]]);
      for (let i = 0; i < 4; i++) {
        expect(dst.buffer.subarray(i * 64, i * 64 + 8 + i).every((x) => x === 5)).toBe(true);
        expect(dst.buffer[i * 64 + 8 + i]).toBe(0);
      }
      const detached = packed(5);
      structuredClone(detached.buffer, { transfer: [detached.buffer] });
      expectThrow(() => p.b.native.postRecv(detached, 1), 'RangeError');
    } finally {
      p.close();
    }
  });

  it('SEND_WITH_IMM: the receiver gets imm and the WITH_IMM flag', async () => {
    const p = makePair();
    try {
      const src = region(p.pd, 16, undefined, 9);
      const dst = region(p.pd, 16);
      p.b.postRecv({ wrId: 1, sg: { mr: dst } });
      p.a.postSend({ wrId: 2, opcode: 'SEND_WITH_IMM', imm: 0xdeadbeef, sg: { mr: src } });
      const [r] = await wcs(p.cqB, 1);
      expect(r).toMatchObject({ wrId: 1n, status: 'SUCCESS', opcode: 'RECV', byteLen: 16, imm: 0xdeadbeef });
      expect(r.flags & WC_FLAGS.WITH_IMM).toBe(WC_FLAGS.WITH_IMM);
      expect(dst.buffer.every((x) => x === 9)).toBe(true);
      expect((await wcs(p.cqA, 1))[0]).toMatchObject({ wrId: 2n, status: 'SUCCESS', opcode: 'SEND' });
    } finally {
      p.close();
    }
  });

  it('RDMA_WRITE: bytes land at the remote address and the receiver gets no completion (its receive stays posted)', async () => {
    const p = makePair();
    try {
      const data = randomBytes(300);
      const src = p.pd.registerMemory(Buffer.from(data));
      const target = region(p.pd, 1024);
      const recv = region(p.pd, 64);
      p.b.postRecv({ wrId: 77, sg: { mr: recv } });
      p.a.postSend({ wrId: 3, opcode: 'RDMA_WRITE', sg: { mr: src }, remote: { addr: target.remoteAddr(100), rkey: target.rkey } });
      expect((await wcs(p.cqA, 1))[0]).toMatchObject({ wrId: 3n, status: 'SUCCESS', opcode: 'RDMA_WRITE' });
      expect(target.buffer.subarray(100, 400).equals(data)).toBe(true);
      expect(target.buffer.subarray(0, 100).every((x) => x === 0)).toBe(true);
      expect(target.buffer.subarray(400).every((x) => x === 0)).toBe(true);
      await expectQuietAfter(p.a, p.cqB);
      // The receive was not consumed: the next SEND takes it.
      const small = region(p.pd, 8, undefined, 4);
      p.a.postSend({ wrId: 4, sg: { mr: small } });
      expect((await wcs(p.cqB, 1))[0]).toMatchObject({ wrId: 77n, opcode: 'RECV', byteLen: 8 });
    } finally {
      p.close();
    }
  });

  it('RDMA_WRITE_WITH_IMM: consumes a receive, completes RECV_RDMA_WITH_IMM with imm; the receive buffer is untouched', async () => {
    const p = makePair();
    try {
      const data = randomBytes(200);
      const src = p.pd.registerMemory(Buffer.from(data));
      const target = region(p.pd, 256);
      const recv = region(p.pd, 256, undefined, 0x33);
      p.b.postRecv({ wrId: 55, sg: { mr: recv } });
      p.a.postSend({
        wrId: 5,
        opcode: 'RDMA_WRITE_WITH_IMM',
        imm: 0x12345678,
        sg: { mr: src },
        remote: { addr: target.addr, rkey: target.rkey },
      });
      const [r] = await wcs(p.cqB, 1);
      expect(r).toMatchObject({ wrId: 55n, status: 'SUCCESS', opcode: 'RECV_RDMA_WITH_IMM', imm: 0x12345678 });
      if (IS_SOFT) expect(r.srcQp).toBe(p.a.qpNum); // UD-only field, see the SEND test
      expect(r.flags & WC_FLAGS.WITH_IMM).toBe(WC_FLAGS.WITH_IMM);
      // rxe and mlx5 report the write's length; the soft device does the same.
      expect(IS_SOFT ? [200] : [0, 200]).toContain(r.byteLen);
      expect(target.buffer.subarray(0, 200).equals(data)).toBe(true);
      expect(recv.buffer.every((x) => x === 0x33)).toBe(true);
      expect((await wcs(p.cqA, 1))[0]).toMatchObject({ wrId: 5n, status: 'SUCCESS', opcode: 'RDMA_WRITE' });
    } finally {
      p.close();
    }
  });

  it('RDMA_READ: reads the remote bytes back into local memory', async () => {
    const p = makePair();
    try {
      const remoteData = randomBytes(4096);
      const remote = p.pd.registerMemory(Buffer.from(remoteData), { access: ['LOCAL_WRITE', 'REMOTE_READ'] });
      const local = region(p.pd, 1000);
      p.a.postSend({ wrId: 6, opcode: 'RDMA_READ', sg: { mr: local }, remote: { addr: remote.remoteAddr(1000), rkey: remote.rkey } });
      const [s] = await wcs(p.cqA, 1);
      expect(s).toMatchObject({ wrId: 6n, status: 'SUCCESS', opcode: 'RDMA_READ', byteLen: 1000 });
      expect(local.buffer.equals(remoteData.subarray(1000, 2000))).toBe(true);
      expect(remote.buffer.equals(remoteData)).toBe(true);
      await expectQuietAfter(p.a, p.cqB);
    } finally {
      p.close();
    }
  });

  it('unsignaled sends produce no completion on success; signaled ones do', async () => {
    const p = makePair();
    try {
      const src = region(p.pd, 8, undefined, 1);
      const dst = region(p.pd, 8 * 4);
      for (let i = 0; i < 4; i++) p.b.postRecv({ wrId: i, sg: { mr: dst, offset: 8 * i, length: 8 } });
      p.a.postSend([
        { wrId: 10, sg: { mr: src }, signaled: false },
        { wrId: 11, sg: { mr: src }, signaled: false },
        { wrId: 12, sg: { mr: src }, signaled: true },
        { wrId: 13, sg: { mr: src }, signaled: false },
      ]);
      expect((await wcs(p.cqB, 4)).map((w) => w.wrId)).toEqual([0n, 1n, 2n, 3n]);
      // Everything the four could complete on a's CQ is there once a marker behind them is.
      const sent = await throughMarker(p.a);
      expect(sent.map((w) => w.wrId)).toEqual([12n]);
    } finally {
      p.close();
    }
  });

  it('sqSigAll makes every send complete, whatever signaled says', async () => {
    const p = makePair({ sqSigAllA: true });
    try {
      const src = region(p.pd, 8, undefined, 1);
      const dst = region(p.pd, 8 * 3);
      for (let i = 0; i < 3; i++) p.b.postRecv({ wrId: i, sg: { mr: dst, offset: 8 * i, length: 8 } });
      p.a.postSend([
        { wrId: 20, sg: { mr: src }, signaled: false },
        { wrId: 21, sg: { mr: src }, signaled: false },
        { wrId: 22, sg: { mr: src } },
      ]);
      const sent = await wcs(p.sendA, 3);
      expect(sent.map((w) => [w.wrId, w.status])).toEqual([
        [20n, 'SUCCESS'],
        [21n, 'SUCCESS'],
        [22n, 'SUCCESS'],
      ]);
    } finally {
      p.close();
    }
  });

  itSoft('inline: the buffer is reusable as soon as postSend returns (a non-inline send reads it later)', async () => {
    const p = makePair({ cap: { maxInlineData: 64 } });
    try {
      expect(p.a.cap.maxInlineData).toBeGreaterThanOrEqual(64);
      const src = region(p.pd, 64, undefined, 0x01);
      const dst = region(p.pd, 128);
      p.b.postRecv([
        { wrId: 1, sg: { mr: dst, offset: 0, length: 64 } },
        { wrId: 2, sg: { mr: dst, offset: 64, length: 64 } },
      ]);
      p.ctx.faults.delayUs(30_000); // the device executes each WR 30 ms after it is posted
      p.a.postSend({ wrId: 30, sg: { mr: src }, inline: true });
      src.buffer.fill(0x02); // reuse at once
      p.a.postSend({ wrId: 31, sg: { mr: src } }); // not inline: the device reads at execution time
      src.buffer.fill(0x03);
      const got = await wcs(p.cqB, 2);
      p.ctx.faults.delayUs(0);
      expect(got.map((w) => [w.wrId, w.status])).toEqual([
        [1n, 'SUCCESS'],
        [2n, 'SUCCESS'],
      ]);
      expect(dst.buffer.subarray(0, 64).every((x) => x === 0x01)).toBe(true); // copied at post time
      expect(dst.buffer.subarray(64).every((x) => x === 0x03)).toBe(true); // read at execution time
    } finally {
      p.close();
    }
  });

  it('inline data over maxInlineData fails at post time with EINVAL and posts nothing', async () => {
    const p = makePair({ cap: { maxInlineData: 64 } });
    try {
      const max = p.a.cap.maxInlineData;
      const src = region(p.pd, max + 1, undefined, 5);
      const dst = region(p.pd, max + 1);
      p.b.postRecv({ wrId: 1, sg: { mr: dst } });
      const err = expectThrow(() => p.a.postSend({ wrId: 40, sg: { mr: src }, inline: true }), 'Error', {
        code: 'EINVAL',
        syscall: 'ibv_post_send',
        badWr: 0,
      });
      expect(err.message).toMatch(/inline/i);
      await expectQuietAfter(p.a, p.cqB);
      expect(p.a.state).toBe('RTS');
      // Exactly max inline bytes is fine.
      p.a.postSend({ wrId: 41, sg: { mr: src, length: max }, inline: true });
      expect((await wcs(p.cqB, 1))[0]).toMatchObject({ wrId: 1n, status: 'SUCCESS', byteLen: max });
      expect((await wcs(p.cqA, 1))[0]).toMatchObject({ wrId: 41n, status: 'SUCCESS' });
    } finally {
      p.close();
    }
  });

  it('scatters and gathers across several SGEs on both sides', async () => {
    const p = makePair();
    try {
      const s1 = p.pd.registerMemory(randomBytes(100));
      const s2 = p.pd.registerMemory(randomBytes(300));
      const s3 = p.pd.registerMemory(randomBytes(50));
      const sent = Buffer.concat([s1.buffer.subarray(10, 60), s2.buffer, s3.buffer.subarray(0, 7)]); // 357 bytes
      const r1 = region(p.pd, 100);
      const r2 = region(p.pd, 200);
      const r3 = region(p.pd, 500);
      p.b.postRecv({
        wrId: 1,
        sg: [
          { mr: r1, offset: 0, length: 100 },
          { mr: r2, offset: 50, length: 150 },
          { mr: r3, offset: 10, length: 490 },
        ],
      });
      p.a.postSend({
        wrId: 2,
        sg: [
          { mr: s1, offset: 10, length: 50 },
          { mr: s2 },
          { mr: s3, offset: 0, length: 7 },
        ],
      });
      expect((await wcs(p.cqB, 1))[0]).toMatchObject({ wrId: 1n, status: 'SUCCESS', byteLen: 357 });
      const got = Buffer.concat([r1.buffer, r2.buffer.subarray(50), r3.buffer.subarray(10)]).subarray(0, 357);
      expect(got.equals(sent)).toBe(true);
      expect(r2.buffer.subarray(0, 50).every((x) => x === 0)).toBe(true);
      expect(r3.buffer.subarray(0, 10).every((x) => x === 0)).toBe(true);
      expect(r3.buffer.subarray(10 + 357 - 250).every((x) => x === 0)).toBe(true);
    } finally {
      p.close();
    }
  });

  it('receiver not ready with rnrRetry 0: the SEND completes RNR_RETRY_EXC_ERR and the QP goes to ERR', async () => {
    const p = makePair({ connect: { rnrRetry: 0 } });
    try {
      const src = region(p.pd, 8, undefined, 1);
      p.a.postSend({ wrId: 50, sg: { mr: src } });
      const [s] = await wcs(p.cqA, 1);
      expect(s).toMatchObject({ wrId: 50n, status: 'RNR_RETRY_EXC_ERR', qpNum: p.a.qpNum });
      expect(p.a.state).toBe('ERR');
      await expectQuietAfter(p.a, p.cqB); // the marker is flushed
    } finally {
      p.close();
    }
  });

  it('receiver not ready with rnrRetry 7: the SEND waits until a receive is posted, then succeeds', async () => {
    const p = makePair({ connect: { rnrRetry: 7 } });
    try {
      const src = region(p.pd, 8, undefined, 6);
      const dst = region(p.pd, 8);
      p.a.postSend({ wrId: 60, sg: { mr: src } });
      // a's SEND waits for a receive (its queue is held behind it), so the marker goes b -> a.
      await expectQuietAfter(p.b, p.cqA);
      expect(p.a.state).toBe('RTS');
      p.b.postRecv({ wrId: 61, sg: { mr: dst } });
      expect((await wcs(p.cqB, 1))[0]).toMatchObject({ wrId: 61n, status: 'SUCCESS', byteLen: 8 });
      expect((await wcs(p.cqA, 1))[0]).toMatchObject({ wrId: 60n, status: 'SUCCESS', opcode: 'SEND' });
      expect(dst.buffer.every((x) => x === 6)).toBe(true);
    } finally {
      p.close();
    }
  });

  it('a receive buffer too small completes LOC_LEN_ERR on the receiver and writes nothing past it', async () => {
    const p = makePair();
    try {
      const src = region(p.pd, 64, undefined, 0x77);
      const whole = Buffer.alloc(64, 0xa5);
      const dst = p.pd.registerMemory(whole.subarray(16, 24)); // 8 bytes
      p.b.postRecv({ wrId: 70, sg: { mr: dst } });
      p.a.postSend({ wrId: 71, sg: { mr: src } });
      const [r] = await wcs(p.cqB, 1);
      expect(r.wrId).toBe(70n);
      expect(localError('LOC_LEN_ERR')).toContain(r.status); // exactly LOC_LEN_ERR on soft
      const [s] = await wcs(p.cqA, 1);
      expect(s.wrId).toBe(71n);
      expect(s.status).not.toBe('SUCCESS');
      expect(whole.subarray(0, 16).every((x) => x === 0xa5)).toBe(true);
      expect(whole.subarray(24).every((x) => x === 0xa5)).toBe(true);
    } finally {
      p.close();
    }
  });

  it('posting past maxRecvWr fails with ENOMEM and badWr; the earlier WRs of the array were posted', async () => {
    const p = makePair({ cap: { maxSendWr: 8, maxRecvWr: 8 } });
    try {
      const n = p.b.cap.maxRecvWr;
      expect(n).toBeGreaterThanOrEqual(8);
      // Soft: n + 1 WRs, the last one fails. Real devices may hold more than n (see pastCapacityLength).
      const length = pastCapacityLength(n);
      const dst = region(p.pd, 8 * length);
      const wrs = Array.from({ length }, (_, i) => ({ wrId: 1000 + i, sg: { mr: dst, offset: 8 * i, length: 8 } }));
      const err = expectThrow(() => p.b.postRecv(wrs), 'Error', { code: 'ENOMEM', syscall: 'ibv_post_recv' });
      expect(err.message).toMatch(/full|ENOMEM/);
      const posted = expectPastCapacity(err, n, length); // n on soft
      // The first `posted` are posted: that many sends are received, in order, with their wr_ids.
      const src = region(p.pd, 8, undefined, 2);
      const received: bigint[] = [];
      for (let i = 0; i < posted; i++) {
        p.a.postSend({ wrId: i, sg: { mr: src } });
        received.push(...(await wcs(p.cqB, 1)).map((w) => w.wrId));
        expect((await wcs(p.cqA, 1))[0].status).toBe('SUCCESS');
      }
      expect(received).toEqual(wrs.slice(0, posted).map((w) => BigInt(w.wrId)));
      await expectQuietAfter(p.a, p.cqB);
    } finally {
      p.close();
    }
  });

  it('posting past maxSendWr fails with ENOMEM and badWr; the earlier WRs of the array were posted', async () => {
    // No receive is posted yet and rnrRetry is 7: the sends stay outstanding.
    // (b's receive queue takes a receive for every send posted, however many that is.)
    const p = makePair({ cap: { maxSendWr: 8, maxRecvWr: IS_SOFT ? 64 : 256 } });
    try {
      const n = p.a.cap.maxSendWr;
      expect(n).toBeGreaterThanOrEqual(8);
      const src = region(p.pd, 8, undefined, 2);
      // Soft: n + 2 WRs, the (n+1)th fails. Real devices may hold more than n (see pastCapacityLength).
      const length = pastCapacityLength(n, n + 2);
      const wrs = Array.from({ length }, (_, i) => ({ wrId: 2000 + i, sg: { mr: src } }));
      const err = expectThrow(() => p.a.postSend(wrs), 'Error', { code: 'ENOMEM', syscall: 'ibv_post_send' });
      const posted = expectPastCapacity(err, n, length); // n on soft
      const dst = region(p.pd, 8 * length);
      for (let i = 0; i < length; i++) p.b.postRecv({ wrId: i, sg: { mr: dst, offset: 8 * i, length: 8 } });
      const sent = await wcs(p.cqA, posted);
      expect(sent.map((w) => w.wrId)).toEqual(wrs.slice(0, posted).map((w) => BigInt(w.wrId)));
      expect(sent.every((w) => w.status === 'SUCCESS')).toBe(true);
      expect((await wcs(p.cqB, posted)).length).toBe(posted);
      await expectQuietAfter(p.a, p.cqB);
    } finally {
      p.close();
    }
  });

  it('carries a full 64-bit wr_id both ways (0xffffffffffffffff)', async () => {
    const p = makePair();
    try {
      const src = region(p.pd, 8);
      const dst = region(p.pd, 8);
      p.b.postRecv({ wrId: 0xffffffffffffffffn, sg: { mr: dst } });
      p.a.postSend({ wrId: 0xfedcba9876543210n, sg: { mr: src } });
      const rb = (await wcs(p.cqB, 1))[0];
      const sb = (await wcs(p.cqA, 1))[0];
      expect(rb.wrId).toBe(0xffffffffffffffffn);
      expect(sb.wrId).toBe(0xfedcba9876543210n);
      // And the 32-bit view agrees.
      p.b.postRecv({ wrId: 0xffffffffffffffffn, sg: { mr: dst } });
      p.a.postSend({ wrId: 0x80000000ffffffffn, sg: { mr: src } });
      const batch = await pollN(p.cqA, 1);
      expect((await wcs(p.cqB, 1))[0].wrId).toBe(0xffffffffffffffffn);
      expect(batch.wrId[0]).toBe(0x80000000ffffffffn);
      expect(batch.wrIdLow(0)).toBe(0xffffffff);
      expect(batch.wrIdWords[1]).toBe(0x80000000);
      expect(caught(() => p.a.postSend({ wrId: 0x10000000000000000n, sg: { mr: src } }))?.name).toBe('RangeError');
      await sendOnce(p.a, p.b);
    } finally {
      p.close();
    }
  });
});

describe('qp.query()', () => {
  it('reads back what connect set: state, path MTU in bytes, the peer, both PSNs, retries, timers, atomics, access, port and capacities', () => {
    const cap = { maxSendWr: 16, maxRecvWr: 8, maxSendSge: 2, maxRecvSge: 1, maxInlineData: 0 };
    const connect = {
      mtu: 512,
      retryCnt: 5,
      rnrRetry: 3,
      timeout: 17,
      minRnrTimer: 9,
      // Powers of two: rxe rounds these up to one.
      maxRdAtomic: 4,
      maxDestRdAtomic: 2,
      access: ['LOCAL_WRITE', 'REMOTE_READ'] as const,
    };
    const p = makePair({ cap, connect });
    try {
      const q = p.a.query();
      expect(q).toMatchObject({
        state: 'RTS',
        pathMtu: 512,
        destQpNum: p.b.qpNum,
        sqPsn: p.a.psn,
        rqPsn: p.b.psn,
        retryCount: 5,
        rnrRetry: 3,
        timeout: 17,
        minRnrTimer: 9,
        maxRdAtomic: 4,
        maxDestRdAtomic: 2,
        accessFlags: ['LOCAL_WRITE', 'REMOTE_READ'],
        portNum: 1,
        pkeyIndex: 0,
      });
      // The path towards b: its GID on RoCE (the suite's GID index), its LID otherwise.
      const eb = p.b.endpoint({ gidIndex: TEST_GID_INDEX });
      if (TEST_GID_INDEX === undefined) expect(q.ah).toMatchObject({ port: 1, lid: eb.lid, sl: 0 });
      else expect(q.ah).toMatchObject({ port: 1, gid: eb.gid, gidIndex: TEST_GID_INDEX });
      // At least what was asked for (the device may round up), as creation granted it.
      for (const k of Object.keys(cap) as (keyof typeof cap)[]) expect(q.cap[k]).toBeGreaterThanOrEqual(cap[k]);
      if (IS_SOFT) expect(q.cap).toEqual(p.a.cap);
      // Plain data: it survives JSON as it is.
      expect(JSON.parse(JSON.stringify(q))).toEqual(q);
    } finally {
      p.close();
    }
  });

  it(`connect without retry options gives retryCount ${DEFAULT_RETRY_COUNT} and rnrRetry ${DEFAULT_RNR_RETRY_COUNT}, the CM's defaults`, () => {
    const p = makePair();
    try {
      expect(DEFAULT_RETRY_COUNT).toBe(6); // not 7: rxe retries for ever at 7
      expect(DEFAULT_RNR_RETRY_COUNT).toBe(7);
      for (const qp of [p.a, p.b]) expect(qp.query()).toMatchObject({ retryCount: 6, rnrRetry: 7 });
    } finally {
      p.close();
    }
  });

  it('follows the state from RESET to ERR, and a closed QP is EBADF', () => {
    const l = loose();
    try {
      expect(l.a.query().state).toBe('RESET');
      l.a.toInit({ access: ['LOCAL_WRITE'] });
      expect(l.a.query()).toMatchObject({ state: 'INIT', portNum: 1, accessFlags: ['LOCAL_WRITE'] });
      l.a.toError();
      expect(l.a.query().state).toBe('ERR');
      l.a.close();
      expect(caught(() => l.a.query())).toMatchObject({ code: 'EBADF', syscall: 'ibv_query_qp' });
    } finally {
      l.close();
    }
  });
});

describe('a closed QP', () => {
  it('reports itself before the MRs its work requests name, also when those are closed', () => {
    const p = makePair();
    try {
      const mr = region(p.pd, 8);
      p.a.close();
      mr.close();
      expect(caught(() => p.a.postSend({ wrId: 1, sg: { mr } }))).toMatchObject({
        code: 'EBADF',
        syscall: 'ibv_post_send',
        message: expect.stringContaining('the queue pair is closed'),
      });
      expect(caught(() => p.a.postRecv({ wrId: 2, sg: { mr } }))).toMatchObject({
        code: 'EBADF',
        syscall: 'ibv_post_recv',
        message: expect.stringContaining('the queue pair is closed'),
      });
      // An open QP still names the closed MR.
      expect(caught(() => p.b.postSend({ wrId: 3, sg: { mr } }))?.message).toMatch(/deregistered/);
    } finally {
      p.close();
    }
  });
});
