/**
 * RC atomics (compare-and-swap, fetch-and-add) on the device under test:
 * values, the original value written to the local buffer, host byte order,
 * the post-time rules (aligned target, 8-byte buffer), the completion
 * statuses of the responder's refusals with nothing touched, a counter
 * shared by many QPs, and atomics through the fast path.
 */
import { endianness } from 'os';
import { makePair, region, expectThrow, pollN, sleep, IS_SOFT, Pair, TEST_DEVICE, TEST_GID_INDEX } from '../support/device';
import { guarded, wcs, expectFreshPairWorks, localError, Guarded } from '../support/verbs-checks';
import { credits } from '../../src/completion';
import { openDevice } from '../../src';
import type { AccessFlag, ConnectOptions, Mr, Qp, SendWr } from '../../src';

const ATOMIC_QP: AccessFlag[] = ['LOCAL_WRITE', 'REMOTE_WRITE', 'REMOTE_READ', 'REMOTE_ATOMIC'];
const ATOMIC_MR: AccessFlag[] = ['LOCAL_WRITE', 'REMOTE_ATOMIC'];
const LE = endianness() === 'LE';
const U64 = 1n << 64n;

/** The 64-bit word at `offset`, in host order (how the device reads and writes it). */
function word(buf: Buffer, offset = 0): bigint {
  return LE ? buf.readBigUInt64LE(offset) : buf.readBigUInt64BE(offset);
}

function setWord(buf: Buffer, value: bigint, offset = 0): void {
  if (LE) buf.writeBigUInt64LE(value, offset);
  else buf.writeBigUInt64BE(value, offset);
}

function atomicPair(connect: ConnectOptions = {}): Pair {
  return makePair({ connect: { access: ATOMIC_QP, ...connect } });
}

/** An 8-byte target word (with canaries around) holding `value`, and a local 8-byte result slot (with canaries). */
function words(p: Pair, value: bigint, remoteAccess: AccessFlag[] = ATOMIC_MR, localAccess: AccessFlag[] = ['LOCAL_WRITE']) {
  const target = guarded(p.pd, 8, remoteAccess, 0, 64);
  setWord(target.inner, value);
  const result = guarded(p.pd, 8, localAccess, 0x77, 64);
  return { target, result };
}

function cas(target: Mr, result: Mr, compareAdd: bigint, swap: bigint, wrId: number | bigint = 1, offset = 0): SendWr {
  return { wrId, opcode: 'ATOMIC_CMP_AND_SWP', sg: { mr: result }, remote: { addr: target.remoteAddr(offset), rkey: target.rkey }, compareAdd, swap };
}

function faa(target: Mr, result: Mr, add: bigint, wrId: number | bigint = 1, offset = 0): SendWr {
  return { wrId, opcode: 'ATOMIC_FETCH_AND_ADD', sg: { mr: result }, remote: { addr: target.remoteAddr(offset), rkey: target.rkey }, compareAdd: add };
}

async function one(qp: Qp, wr: SendWr) {
  qp.postSend(wr);
  const [wc] = await wcs(qp.sendCq, 1);
  expect(wc).toBeDefined();
  return wc;
}

describe('atomics', () => {
  it('the device reports HCA atomicity and read/atomic depths', () => {
    const p = atomicPair();
    try {
      const attr = p.ctx.queryDevice();
      expect(attr.atomicCap).toBe('HCA');
      expect(attr.maxQpRdAtom).toBeGreaterThanOrEqual(1);
      expect(attr.maxQpInitRdAtom).toBeGreaterThanOrEqual(1);
    } finally {
      p.close();
    }
  });

  it('compare-and-swap that matches stores swap and returns the original value (COMP_SWAP, 8 bytes)', async () => {
    const p = atomicPair();
    try {
      const { target, result } = words(p, 0x0123456789abcdefn);
      const wc = await one(p.a, cas(target.mr, result.mr, 0x0123456789abcdefn, 0xfedcba9876543210n, 0xc0ffee));
      expect(wc).toMatchObject({ wrId: 0xc0ffeen, status: 'SUCCESS', opcode: 'COMP_SWAP', byteLen: 8, qpNum: p.a.qpNum });
      expect(word(target.inner)).toBe(0xfedcba9876543210n);
      expect(word(result.inner)).toBe(0x0123456789abcdefn);
      target.expectCanaries();
      result.expectCanaries();
    } finally {
      p.close();
    }
  });

  it('compare-and-swap that does not match leaves the word and still returns its value', async () => {
    const p = atomicPair();
    try {
      const { target, result } = words(p, 7n);
      const wc = await one(p.a, cas(target.mr, result.mr, 5n, 9n));
      expect(wc).toMatchObject({ status: 'SUCCESS', opcode: 'COMP_SWAP' });
      expect(word(target.inner)).toBe(7n);
      expect(word(result.inner)).toBe(7n);
      target.expectCanaries();
      result.expectCanaries();
    } finally {
      p.close();
    }
  });

  it('fetch-and-add wraps around at 2^64 and returns the value before the add (FETCH_ADD)', async () => {
    const p = atomicPair();
    try {
      const { target, result } = words(p, U64 - 2n);
      const wc = await one(p.a, faa(target.mr, result.mr, 5n, 0xfaa));
      expect(wc).toMatchObject({ wrId: 0xfaan, status: 'SUCCESS', opcode: 'FETCH_ADD', byteLen: 8 });
      expect(word(target.inner)).toBe(3n);
      expect(word(result.inner)).toBe(U64 - 2n);
      // A negative operand is its two's complement: adding -1n decrements.
      expect(await one(p.a, faa(target.mr, result.mr, -1n))).toMatchObject({ status: 'SUCCESS' });
      expect(word(target.inner)).toBe(2n);
      expect(word(result.inner)).toBe(3n);
      // 0 + (2^64 - 1): the largest operand.
      setWord(target.inner, 1n);
      expect(await one(p.a, faa(target.mr, result.mr, U64 - 1n))).toMatchObject({ status: 'SUCCESS' });
      expect(word(target.inner)).toBe(0n);
      expect(word(result.inner)).toBe(1n);
      target.expectCanaries();
      result.expectCanaries();
    } finally {
      p.close();
    }
  });

  it('operates on the word in host order, not on its bytes as a big-endian wire number', async () => {
    const p = atomicPair();
    try {
      const { target, result } = words(p, 0n);
      target.inner.set([1, 0, 0, 0, 0, 0, 0, 0]);
      const wc = await one(p.a, faa(target.mr, result.mr, 1n));
      expect(wc.status).toBe('SUCCESS');
      // 1 + 1 on a little-endian host is byte 0 = 2; on a big-endian one 2^56 + 1.
      const expected = LE ? [2, 0, 0, 0, 0, 0, 0, 0] : [1, 0, 0, 0, 0, 0, 0, 1];
      expect([...target.inner]).toEqual(expected);
      expect(word(result.inner)).toBe(LE ? 1n : 1n << 56n);
    } finally {
      p.close();
    }
  });

  it('targets any aligned word inside the region, and a result slot anywhere in a bigger local region', async () => {
    const p = atomicPair();
    try {
      const target = guarded(p.pd, 64, ATOMIC_MR, 0);
      const local = guarded(p.pd, 64, ['LOCAL_WRITE'], 0x33);
      setWord(target.inner, 40n, 56);
      const wc = await one(p.a, { ...faa(target.mr, local.mr, 2n, 1, 56), sg: { mr: local.mr, offset: 24 } });
      expect(wc.status).toBe('SUCCESS');
      expect(word(target.inner, 56)).toBe(42n);
      expect(target.inner.subarray(0, 56).every((b) => b === 0)).toBe(true);
      expect(word(local.inner, 24)).toBe(40n);
      expect(local.inner.subarray(0, 24).every((b) => b === 0x33)).toBe(true);
      expect(local.inner.subarray(32).every((b) => b === 0x33)).toBe(true);
      target.expectCanaries();
      local.expectCanaries();
    } finally {
      p.close();
    }
  });

  it('follows the RDMA WRITE before it on the same QP (in order), and a READ after it sees its result', async () => {
    const p = atomicPair();
    try {
      const target = guarded(p.pd, 8, ['LOCAL_WRITE', 'REMOTE_WRITE', 'REMOTE_READ', 'REMOTE_ATOMIC'], 0);
      const src = region(p.pd, 8, { access: ['LOCAL_WRITE'] });
      setWord(src.buffer, 1000n);
      const result = region(p.pd, 8, { access: ['LOCAL_WRITE'] });
      const back = region(p.pd, 8, { access: ['LOCAL_WRITE'] });
      p.a.postSend([
        { wrId: 1, opcode: 'RDMA_WRITE', sg: { mr: src }, remote: { addr: target.mr.addr, rkey: target.mr.rkey }, signaled: false },
        faa(target.mr, result, 1n, 2),
        { wrId: 3, opcode: 'RDMA_READ', sg: { mr: back }, remote: { addr: target.mr.addr, rkey: target.mr.rkey } },
      ]);
      const got = await wcs(p.cqA, 2);
      expect(got.map((w) => [w.wrId, w.status, w.opcode])).toEqual([
        [2n, 'SUCCESS', 'FETCH_ADD'],
        [3n, 'SUCCESS', 'RDMA_READ'],
      ]);
      expect(word(result.buffer)).toBe(1000n);
      expect(word(back.buffer)).toBe(1001n);
      expect(word(target.inner)).toBe(1001n);
    } finally {
      p.close();
    }
  });

  describe('post-time rules (as rxe: EINVAL, nothing posted, nothing touched)', () => {
    /** Posts `bad` after a good FAA: the good one is posted and completes, the bad one is refused with EINVAL at index 1. */
    async function refused(bad: (t: Guarded, r: Guarded) => SendWr, message: RegExp): Promise<void> {
      const p = atomicPair();
      try {
        const { target, result } = words(p, 10n);
        const good = region(p.pd, 8, { access: ['LOCAL_WRITE'] });
        const beforeT = target.snapshot();
        const beforeR = result.snapshot();
        const err = expectThrow(() => p.a.postSend([faa(target.mr, good, 1n, 1), bad(target, result)]), 'Error', { code: 'EINVAL', badWr: 1 });
        expect(err.message).toMatch(message);
        const got = await wcs(p.cqA, 1);
        expect(got.map((w) => [w.wrId, w.status])).toEqual([[1n, 'SUCCESS']]);
        expect(word(good.buffer)).toBe(10n);
        // Only the good atomic changed the word; the refused one touched neither side.
        expect(word(target.inner)).toBe(11n);
        setWord(beforeT, 11n, target.pad);
        expect(target.whole.equals(beforeT)).toBe(true);
        expect(result.whole.equals(beforeR)).toBe(true);
        expect(p.a.state).toBe('RTS');
        expect(await one(p.a, faa(target.mr, result.mr, 1n, 3))).toMatchObject({ wrId: 3n, status: 'SUCCESS' });
        expect(word(target.inner)).toBe(12n);
      } finally {
        p.close();
      }
    }

    it('a misaligned remote address', async () => {
      await refused((t, r) => ({ ...faa(t.mr, r.mr, 1n, 2), remote: { addr: t.mr.addr + 4n, rkey: t.mr.rkey } }), /8-byte aligned/);
    });

    it('a misaligned compare-and-swap', async () => {
      await refused((t, r) => ({ ...cas(t.mr, r.mr, 10n, 0n, 2), remote: { addr: t.mr.addr + 1n, rkey: t.mr.rkey } }), /8-byte aligned/);
    });

    it('a local buffer shorter than 8 bytes', async () => {
      await refused((t, r) => ({ ...faa(t.mr, r.mr, 1n, 2), sg: { mr: r.mr, length: 4 } }), /exactly 8 bytes/);
    });

    it('a local buffer longer than 8 bytes', async () => {
      await refused((t, r) => ({ ...cas(t.mr, r.mr, 10n, 0n, 2), sg: [{ mr: r.mr }, { mr: r.mr, length: 4 }] }), /exactly 8 bytes/);
    });

    it('no local buffer at all', async () => {
      await refused((t, r) => ({ ...faa(t.mr, r.mr, 1n, 2), sg: [] }), /exactly 8 bytes/);
    });

    it('INLINE', async () => {
      await refused((t, r) => ({ ...faa(t.mr, r.mr, 1n, 2), inline: true }), /INLINE|inline/);
    });
  });

  describe("the responder's refusals complete in error and touch nothing", () => {
    async function failing(status: string | string[], build: (p: Pair, t: Guarded, r: Guarded) => SendWr, opts: { connect?: ConnectOptions; remote?: AccessFlag[]; local?: AccessFlag[]; remoteUntouched?: boolean } = {}) {
      const p = atomicPair(opts.connect);
      try {
        const { target, result } = words(p, 5n, opts.remote, opts.local);
        const beforeT = target.snapshot();
        const beforeR = result.snapshot();
        const wc = await one(p.a, build(p, target, result));
        expect(wc.wrId).toBe(0xbadn);
        expect(typeof status === 'string' ? [status] : status).toContain(wc.status);
        // Real devices need not set the opcode of an error completion; soft0 does.
        if (IS_SOFT) expect(['FETCH_ADD', 'COMP_SWAP']).toContain(wc.opcode);
        expect(p.a.state).toBe('ERR');
        if (opts.remoteUntouched !== false) expect(target.whole.equals(beforeT)).toBe(true);
        target.expectCanaries();
        expect(result.whole.equals(beforeR)).toBe(true);
        await expectFreshPairWorks(p.ctx);
      } finally {
        p.close();
      }
    }

    it('a responder QP without REMOTE_ATOMIC: REM_INV_REQ_ERR', async () => {
      await failing('REM_INV_REQ_ERR', (p, t, r) => faa(t.mr, r.mr, 1n, 0xbad), { connect: { access: ['LOCAL_WRITE', 'REMOTE_WRITE', 'REMOTE_READ'] } });
    });

    it('a target region without REMOTE_ATOMIC access: REM_ACCESS_ERR', async () => {
      await failing('REM_ACCESS_ERR', (p, t, r) => faa(t.mr, r.mr, 1n, 0xbad), { remote: ['LOCAL_WRITE', 'REMOTE_WRITE', 'REMOTE_READ'] });
    });

    it('a compare-and-swap on a region without REMOTE_ATOMIC access: REM_ACCESS_ERR', async () => {
      await failing('REM_ACCESS_ERR', (p, t, r) => cas(t.mr, r.mr, 5n, 6n, 0xbad), { remote: ['LOCAL_WRITE', 'REMOTE_WRITE'] });
    });

    it('a wrong rkey: REM_ACCESS_ERR', async () => {
      await failing('REM_ACCESS_ERR', (p, t, r) => ({ ...faa(t.mr, r.mr, 1n, 0xbad), remote: { addr: t.mr.addr, rkey: (t.mr.rkey ^ 0x00ff00ff) >>> 0 } }));
    });

    it('the word just past the region: REM_ACCESS_ERR', async () => {
      await failing('REM_ACCESS_ERR', (p, t, r) => ({ ...faa(t.mr, r.mr, 1n, 0xbad), remote: { addr: t.mr.addr + 8n, rkey: t.mr.rkey } }));
    });

    it('the word just before the region: REM_ACCESS_ERR', async () => {
      await failing('REM_ACCESS_ERR', (p, t, r) => ({ ...faa(t.mr, r.mr, 1n, 0xbad), remote: { addr: t.mr.addr - 8n, rkey: t.mr.rkey } }));
    });

    it('a responder with no read/atomic resources (maxDestRdAtomic 0): REM_INV_REQ_ERR', async () => {
      await failing('REM_INV_REQ_ERR', (p, t, r) => faa(t.mr, r.mr, 1n, 0xbad), { connect: { maxDestRdAtomic: 0 } });
    });

    it('an RDMA READ to a responder with no read/atomic resources (maxDestRdAtomic 0): REM_INV_REQ_ERR as well', async () => {
      // Responder resources bound READs and atomics alike: with none, no READ may be outstanding.
      const p = atomicPair({ maxDestRdAtomic: 0 });
      try {
        const src = guarded(p.pd, 64, ['LOCAL_WRITE', 'REMOTE_READ'], 0x5a, 64);
        const dst = guarded(p.pd, 64, ['LOCAL_WRITE'], 0x77, 64);
        const before = dst.snapshot();
        const wc = await one(p.a, { wrId: 0xbad, opcode: 'RDMA_READ', sg: { mr: dst.mr }, remote: { addr: src.mr.remoteAddr(), rkey: src.mr.rkey } });
        expect(wc).toMatchObject({ wrId: 0xbadn, status: 'REM_INV_REQ_ERR' });
        expect(p.a.state).toBe('ERR');
        expect(dst.whole.equals(before)).toBe(true);
        await expectFreshPairWorks(p.ctx);
      } finally {
        p.close();
      }
    });

    it('a local buffer the device may not write: a local error (soft: nothing touched on either side)', async () => {
      // rxe runs the atomic, then fails writing the result: only the local side is checked there.
      await failing(localError('LOC_PROT_ERR'), (p, t, r) => faa(t.mr, r.mr, 1n, 0xbad), { local: [], remoteUntouched: IS_SOFT });
    });
  });

  it('a requester with no read/atomic depth (maxRdAtomic 0) never issues it; moving to ERR flushes it untouched', async () => {
    const p = atomicPair({ maxRdAtomic: 0 });
    try {
      const { target, result } = words(p, 5n);
      p.a.postSend(faa(target.mr, result.mr, 1n, 0x51));
      await sleep(200);
      expect(p.cqA.poll().length).toBe(0);
      expect(word(target.inner)).toBe(5n);
      p.a.toError();
      const got = await wcs(p.cqA, 1);
      expect(got.map((w) => [w.wrId, w.status])).toEqual([[0x51n, 'WR_FLUSH_ERR']]);
      expect(word(target.inner)).toBe(5n);
      expect(word(result.inner)).toBe(0x7777777777777777n);
    } finally {
      p.close();
    }
  });

  it('a counter shared by 8 QPs, 16 fetch-and-adds each, ends at exactly 128 and hands out every value once', async () => {
    const N = 8;
    const M = 16;
    const ctx = openDevice(TEST_DEVICE);
    try {
      const channel = ctx.createCompChannel();
      const cq = ctx.createCq({ cqe: 2 * N * M + 16, channel });
      const pd = ctx.allocPd();
      const counter = pd.registerMemory(Buffer.alloc(8), { access: ATOMIC_MR });
      const results = pd.registerMemory(Buffer.alloc(N * M * 8, 0xff), { access: ['LOCAL_WRITE'] });
      const conn: ConnectOptions = { gidIndex: TEST_GID_INDEX, access: ATOMIC_QP };
      const cap = { maxSendWr: M, maxRecvWr: 1 };
      const qps: Qp[] = [];
      for (let i = 0; i < N; i++) {
        const a = pd.createQp({ sendCq: cq, recvCq: cq, cap });
        const b = pd.createQp({ sendCq: cq, recvCq: cq, cap });
        a.connect(b.endpoint({ gidIndex: conn.gidIndex }), conn);
        b.connect(a.endpoint({ gidIndex: conn.gidIndex }), conn);
        qps.push(a);
      }
      // Interleaved posts, so the QPs' send queues run side by side.
      for (let k = 0; k < M; k++) {
        for (let i = 0; i < N; i++) {
          const slot = i * M + k;
          qps[i].postSend({ ...faa(counter, results, 1n, slot), sg: { mr: results, offset: slot * 8 } });
        }
      }
      const done = (await pollN(cq, N * M, 20000)).toArray();
      expect(done.length).toBe(N * M);
      expect(done.every((w) => w.status === 'SUCCESS' && w.opcode === 'FETCH_ADD')).toBe(true);
      expect(word(counter.buffer)).toBe(BigInt(N * M));
      const seen = Array.from({ length: N * M }, (_, s) => word(results.buffer, s * 8)).sort((x, y) => (x < y ? -1 : x > y ? 1 : 0));
      expect(seen).toEqual(Array.from({ length: N * M }, (_, v) => BigInt(v)));
    } finally {
      ctx.close();
    }
  });

  it('atomics on a word of a region that large RDMA WRITEs from another context fill meanwhile: every add counted, every write intact', async () => {
    const BIG = 1 << 20;
    const ROUNDS = 6;
    const ADDS = 64;
    const writerCtx = openDevice(TEST_DEVICE);
    const adderCtx = openDevice(TEST_DEVICE);
    try {
      const conn: ConnectOptions = { gidIndex: TEST_GID_INDEX, access: ATOMIC_QP };
      // The region lives in the writer's context: its word 0 is the counter, the rest the writes' target.
      const wcq = writerCtx.createCq({ cqe: 2 * ROUNDS + 2 * ADDS + 8 });
      const wpd = writerCtx.allocPd();
      const shared = wpd.registerMemory(Buffer.alloc(8 + BIG), { access: ['LOCAL_WRITE', 'REMOTE_WRITE', 'REMOTE_ATOMIC'] });
      const src = wpd.registerMemory(Buffer.alloc(BIG, 0x5c), { access: ['LOCAL_WRITE'] });
      const writer = wpd.createQp({ sendCq: wcq, recvCq: wcq, cap: { maxSendWr: ROUNDS, maxRecvWr: 1 } });
      const writeSide = wpd.createQp({ sendCq: wcq, recvCq: wcq, cap: { maxSendWr: 1, maxRecvWr: 1 } });
      writer.connect(writeSide.endpoint({ gidIndex: conn.gidIndex }), conn);
      writeSide.connect(writer.endpoint({ gidIndex: conn.gidIndex }), conn);
      const atomicSide = wpd.createQp({ sendCq: wcq, recvCq: wcq, cap: { maxSendWr: 1, maxRecvWr: 1 } });
      const acq = adderCtx.createCq({ cqe: ADDS + 8 });
      const apd = adderCtx.allocPd();
      const olds = apd.registerMemory(Buffer.alloc(ADDS * 8), { access: ['LOCAL_WRITE'] });
      const adder = apd.createQp({ sendCq: acq, recvCq: acq, cap: { maxSendWr: ADDS, maxRecvWr: 1 } });
      adder.connect(atomicSide.endpoint({ gidIndex: conn.gidIndex }), conn);
      atomicSide.connect(adder.endpoint({ gidIndex: conn.gidIndex }), conn);
      for (let r = 0; r < ROUNDS; r++) {
        writer.postSend({ wrId: r, opcode: 'RDMA_WRITE', sg: { mr: src }, remote: { addr: shared.remoteAddr(8), rkey: shared.rkey } });
      }
      for (let k = 0; k < ADDS; k++) adder.postSend({ ...faa(shared, olds, 3n, k), sg: { mr: olds, offset: k * 8 } });
      const adds = (await pollN(acq, ADDS, 20000)).toArray();
      const writes = (await pollN(wcq, ROUNDS, 20000)).toArray();
      expect(adds.length).toBe(ADDS);
      expect(adds.every((w) => w.status === 'SUCCESS' && w.opcode === 'FETCH_ADD')).toBe(true);
      expect(writes.length).toBe(ROUNDS);
      expect(writes.every((w) => w.status === 'SUCCESS')).toBe(true);
      expect(word(shared.buffer)).toBe(BigInt(3 * ADDS));
      expect(Array.from({ length: ADDS }, (_, k) => word(olds.buffer, k * 8))).toEqual(Array.from({ length: ADDS }, (_, k) => BigInt(3 * k)));
      expect(shared.buffer.subarray(8).every((b) => b === 0x5c)).toBe(true);
    } finally {
      adderCtx.close();
      writerCtx.close();
    }
  });

  it('a lock taken by compare-and-swap from 6 QPs at once has exactly one owner', async () => {
    const N = 6;
    const ctx = openDevice(TEST_DEVICE);
    try {
      const cq = ctx.createCq({ cqe: 64 });
      const pd = ctx.allocPd();
      const lock = pd.registerMemory(Buffer.alloc(8), { access: ATOMIC_MR });
      const seen = pd.registerMemory(Buffer.alloc(N * 8), { access: ['LOCAL_WRITE'] });
      const conn: ConnectOptions = { gidIndex: TEST_GID_INDEX, access: ATOMIC_QP };
      const qps: Qp[] = [];
      for (let i = 0; i < N; i++) {
        const a = pd.createQp({ sendCq: cq, recvCq: cq, cap: { maxSendWr: 4, maxRecvWr: 1 } });
        const b = pd.createQp({ sendCq: cq, recvCq: cq, cap: { maxSendWr: 4, maxRecvWr: 1 } });
        a.connect(b.endpoint({ gidIndex: conn.gidIndex }), conn);
        b.connect(a.endpoint({ gidIndex: conn.gidIndex }), conn);
        qps.push(a);
      }
      qps.forEach((qp, i) => qp.postSend({ ...cas(lock, seen, 0n, BigInt(i + 1), i), sg: { mr: seen, offset: i * 8 } }));
      const done = (await pollN(cq, N, 20000)).toArray();
      expect(done.every((w) => w.status === 'SUCCESS')).toBe(true);
      const owner = word(lock.buffer);
      const olds = Array.from({ length: N }, (_, i) => word(seen.buffer, i * 8));
      // The owner saw the lock free; everyone else saw the owner's id.
      expect(olds[Number(owner) - 1]).toBe(0n);
      expect(olds.filter((v) => v === 0n).length).toBe(1);
      expect(olds.filter((v) => v === owner).length).toBe(N - 1);
    } finally {
      ctx.close();
    }
  });

  it('atomics complete through completions$ (the fast path), gated by credits, and tryTake', async () => {
    const p = atomicPair();
    try {
      const { target, result } = words(p, 0n);
      const n = 24;
      const slots = region(p.pd, n * 8, { access: ['LOCAL_WRITE'] });
      const source = p.cqA.completions$;
      // Subscribed first, so a batch returns its credits before the handler below posts more.
      const credit = credits({ capacity: 8, release$: source });
      let posted = 0;
      const all: bigint[] = [];
      const post = () => {
        while (posted < n && credit.tryAcquire()) {
          p.a.postSend({ ...faa(target.mr, result.mr, 2n, posted), sg: { mr: slots, offset: posted * 8 } });
          posted++;
        }
      };
      const sub = source.subscribe((b) => {
        for (const wc of b.toArray()) {
          expect(wc).toMatchObject({ status: 'SUCCESS', opcode: 'FETCH_ADD' });
          all.push(wc.wrId);
        }
        post();
      });
      post();
      const deadline = Date.now() + 20000;
      while (all.length < n && Date.now() < deadline) await sleep(5);
      sub.unsubscribe();
      credit.close();
      expect(all).toEqual(Array.from({ length: n }, (_, i) => BigInt(i)));
      expect(word(target.inner)).toBe(BigInt(2 * n));
      for (let i = 0; i < n; i++) expect(word(slots.buffer, i * 8)).toBe(BigInt(2 * i));
      // Nobody subscribed now: tryTake() polls and hands the next batch over.
      p.a.postSend(cas(target.mr, result.mr, BigInt(2 * n), 1n, 0x7a));
      let batch = source.tryTake();
      while (!batch && Date.now() < deadline) {
        await sleep(5);
        batch = source.tryTake();
      }
      expect(batch?.toArray()).toEqual([expect.objectContaining({ wrId: 0x7an, status: 'SUCCESS', opcode: 'COMP_SWAP', byteLen: 8 })]);
      expect(word(target.inner)).toBe(1n);
    } finally {
      p.close();
    }
  });

  describe('bad input', () => {
    let p: Pair;
    let target: Guarded;
    let result: Guarded;
    beforeAll(() => {
      p = atomicPair();
      ({ target, result } = words(p, 3n));
    });
    afterAll(() => p.close());

    const cases: [string, (t: Mr, r: Mr) => unknown, string, RegExp][] = [
      ['compareAdd as a number', (t, r) => ({ ...faa(t, r, 1n), compareAdd: 1 }), 'TypeError', /compareAdd.*must be a bigint/],
      ['compareAdd missing', (t, r) => ({ ...faa(t, r, 1n), compareAdd: undefined }), 'TypeError', /compareAdd \(required/],
      ['compareAdd as a string', (t, r) => ({ ...cas(t, r, 1n, 2n), compareAdd: '1' }), 'TypeError', /compareAdd.*bigint/],
      ['swap missing for CMP_AND_SWP', (t, r) => ({ ...cas(t, r, 1n, 2n), swap: undefined }), 'TypeError', /swap \(required/],
      ['swap as a number', (t, r) => ({ ...cas(t, r, 1n, 2n), swap: 2 }), 'TypeError', /swap.*bigint/],
      ['swap given to FETCH_AND_ADD', (t, r) => ({ ...faa(t, r, 1n), swap: 2n }), 'TypeError', /swap is only for ATOMIC_CMP_AND_SWP/],
      ['operands on a SEND', (t, r) => ({ wrId: 1, sg: { mr: r }, compareAdd: 1n }), 'TypeError', /only for ATOMIC/],
      ['compareAdd of 2^64', (t, r) => ({ ...faa(t, r, 1n), compareAdd: U64 }), 'RangeError', /\[-2\^63, 2\^64\)/],
      ['compareAdd below -2^63', (t, r) => ({ ...faa(t, r, 1n), compareAdd: -(1n << 63n) - 1n }), 'RangeError', /\[-2\^63, 2\^64\)/],
      ['swap of 2^64', (t, r) => ({ ...cas(t, r, 1n, 2n), swap: U64 }), 'RangeError', /swap/],
      ['remote missing', (t, r) => ({ ...faa(t, r, 1n), remote: undefined }), 'TypeError', /remote \(required for ATOMIC_FETCH_AND_ADD\)/],
      ['rkey missing', (t, r) => ({ ...faa(t, r, 1n), remote: { addr: t.addr } }), 'TypeError', /remote\.rkey/],
      ['addr missing', (t, r) => ({ ...faa(t, r, 1n), remote: { rkey: t.rkey } }), 'TypeError', /remote\.addr/],
      ['a negative remote address', (t, r) => ({ ...faa(t, r, 1n), remote: { addr: -8n, rkey: t.rkey } }), 'RangeError', /remote\.addr/],
      ['an 8-byte slot past the end of the local region', (t, r) => ({ ...faa(t, r, 1n), sg: { mr: r, offset: 4 } }), 'RangeError', /past the end/],
      ['an unknown atomic opcode', (t, r) => ({ ...faa(t, r, 1n), opcode: 'ATOMIC_WRITE' }), 'RangeError', /opcode must be one of/],
    ];
    for (const [title, build, name, message] of cases) {
      it(`${title}: ${name}, nothing posted`, async () => {
        const before = target.snapshot();
        const err = expectThrow(() => p.a.postSend(build(target.mr, result.mr) as SendWr), name);
        expect(err.message).toMatch(message);
        expect(target.whole.equals(before)).toBe(true);
        // The QP and the objects keep working.
        expect(await one(p.a, faa(target.mr, result.mr, 1n, 9))).toMatchObject({ wrId: 9n, status: 'SUCCESS' });
        expect(word(target.inner)).toBe(word(before, target.pad) + 1n);
      });
    }

    it('a raw packed atomic without its operands is a RangeError from the addon', () => {
      const bytes = new Uint8Array(40);
      const v = new DataView(bytes.buffer);
      v.setUint32(16, 6, true); // ATOMIC_FETCH_AND_ADD, no operands after the header
      expectThrow(() => p.a.native.postSend(bytes, 1), 'RangeError', { message: expect.stringMatching(/atomic operands/) });
      expect(p.a.state).toBe('RTS');
    });

    it('maxRdAtomic / maxDestRdAtomic out of range are RangeErrors', () => {
      const q = p.pd.createQp({ sendCq: p.cqA, recvCq: p.cqA, cap: { maxSendWr: 1, maxRecvWr: 1 } });
      try {
        expectThrow(() => q.toRts({ maxRdAtomic: 256 }), 'RangeError', { message: expect.stringMatching(/maxRdAtomic/) });
        expectThrow(() => q.toRtr(p.b.endpoint(), { maxDestRdAtomic: -1 }), 'RangeError', { message: expect.stringMatching(/maxDestRdAtomic/) });
        expectThrow(() => q.toRtr(p.b.endpoint(), { maxDestRdAtomic: 1.5 }), 'RangeError');
        expectThrow(() => q.toRtr(p.b.endpoint(), { maxDestRdAtomic: '1' as unknown as number }), 'TypeError');
      } finally {
        q.close();
      }
    });
  });
});
