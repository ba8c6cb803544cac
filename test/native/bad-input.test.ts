import { execFile } from 'child_process';
import * as path from 'path';
import { openDevice, createSoftDevice, listDevices, Mr, SendWr, RecvWr, AccessFlag } from '../../src';
import { binding } from '../../src/native/binding';
import { makePair, region, expectThrow, itSoft, TEST_DEVICE, IS_SOFT } from '../support/device';
import { wcs, expectFreshPairWorks, sendOnce, localError, pastCapacityLength, expectPastCapacity } from '../support/verbs-checks';

/** Casts garbage to whatever a parameter wants (the point of these tests). */
const bad = <T>(v: unknown): T => v as T;

describe('bad input: clear errors, the process keeps running, other objects keep working', () => {
  it('wrong types give TypeErrors', async () => {
    const p = makePair();
    try {
      const mr = region(p.pd, 64);
      expectThrow(() => openDevice(bad(42)), 'TypeError');
      expectThrow(() => p.ctx.createCq(bad(null)), 'TypeError');
      expectThrow(() => p.ctx.createCq(bad({ cqe: '4' })), 'TypeError');
      expectThrow(() => p.ctx.createCq(bad({ cqe: 4, channel: {} })), 'TypeError');
      expectThrow(() => p.pd.registerMemory(bad('a string')), 'TypeError');
      expectThrow(() => p.pd.registerMemory(bad(null)), 'TypeError');
      expectThrow(() => p.pd.registerMemory(Buffer.alloc(8), bad({ access: 'LOCAL_WRITE' })), 'TypeError');
      expectThrow(() => p.pd.createQp(bad({ sendCq: {}, recvCq: p.cqA })), 'TypeError');
      expectThrow(() => p.pd.createQp(bad({ sendCq: p.cqA, recvCq: p.cqA, cap: 5 })), 'TypeError');
      expectThrow(() => p.pd.createQp(bad({ sendCq: p.cqA, recvCq: p.cqA, sqSigAll: 'yes' })), 'TypeError');
      expectThrow(() => p.a.postSend(bad(null)), 'TypeError');
      expectThrow(() => p.a.postSend(bad({ wrId: 'one', sg: { mr } })), 'TypeError');
      expectThrow(() => p.a.postSend(bad({ wrId: 1 })), 'TypeError'); // no sg
      expectThrow(() => p.a.postSend(bad({ wrId: 1, sg: { mr }, signaled: 1 })), 'TypeError');
      expectThrow(() => p.a.postSend(bad({ wrId: 1, sg: { mr }, opcode: 'RDMA_WRITE' })), 'TypeError'); // no remote
      expectThrow(() => p.a.postSend(bad({ wrId: 1, sg: { mr }, opcode: 'SEND_WITH_IMM' })), 'TypeError'); // no imm
      expectThrow(() => p.a.postRecv(bad({ wrId: 1, sg: 'mr' })), 'TypeError');
      expectThrow(() => p.a.toRtr(bad(null)), 'TypeError');
      expectThrow(() => p.a.toRtr(bad({ qpNum: '1', lid: 0, psn: 0, port: 1 })), 'TypeError');
      expectThrow(() => p.cqA.requestNotify(bad('yes')), 'TypeError');
      expectThrow(() => p.cqA.poll(bad('10')), 'TypeError');
      expectThrow(() => p.cqA.ack(bad(null)), 'TypeError');
      await sendOnce(p.a, p.b); // this pair is untouched
      await expectFreshPairWorks();
    } finally {
      p.close();
    }
  });

  it('negative, fractional and huge sizes give RangeErrors (or EINVAL from the verb)', async () => {
    const p = makePair();
    try {
      const mr = region(p.pd, 64);
      for (const cqe of [0, -1, 1.5, 2 ** 40, NaN, Infinity]) expectThrow(() => p.ctx.createCq({ cqe }), 'RangeError');
      const maxCqe = p.ctx.queryDevice().maxCqe;
      expectThrow(() => p.ctx.createCq({ cqe: maxCqe + 1 }), 'Error', { code: 'EINVAL', syscall: 'ibv_create_cq' });
      p.ctx.createCq({ cqe: maxCqe }).close(); // the limit itself is fine
      expectThrow(() => p.ctx.createCq({ cqe: 4, compVector: -1 }), 'RangeError');
      expectThrow(() => p.pd.registerMemory(Buffer.alloc(0)), 'RangeError');
      for (const length of [-1, 1.5, 2 ** 33]) {
        expectThrow(() => p.a.postSend({ wrId: 1, sg: { mr, length } }), 'RangeError');
        expectThrow(() => p.a.postSend({ wrId: 1, sg: { addr: mr.addr, length, lkey: mr.lkey } }), 'RangeError');
      }
      expectThrow(() => p.a.postSend({ wrId: 1, sg: { mr, offset: 65 } }), 'RangeError');
      expectThrow(() => p.a.postSend({ wrId: 1, sg: { mr, offset: 60, length: 8 } }), 'RangeError');
      expectThrow(() => p.a.postSend({ wrId: 1, sg: { mr, offset: -1 } }), 'RangeError');
      expectThrow(() => p.a.postSend({ wrId: -1, sg: { mr } }), 'RangeError');
      expectThrow(() => p.a.postSend({ wrId: 1.5, sg: { mr } }), 'RangeError');
      expectThrow(() => p.a.postSend({ wrId: 2n ** 64n, sg: { mr } }), 'RangeError');
      expectThrow(() => p.a.postSend({ wrId: 1, sg: { mr }, opcode: 'SEND_WITH_IMM', imm: 2 ** 32 }), 'RangeError');
      expectThrow(() => p.a.postSend({ wrId: 1, sg: { mr }, opcode: 'RDMA_WRITE', remote: { addr: -1, rkey: 1 } }), 'RangeError');
      expectThrow(() => p.a.postSend({ wrId: 1, sg: { mr }, opcode: 'RDMA_WRITE', remote: { addr: 0, rkey: -1 } }), 'RangeError');
      expectThrow(() => p.a.postSend({ wrId: 1, sg: Array.from({ length: 65 }, () => ({ mr })) }), 'RangeError');
      expectThrow(() => p.pd.createQp({ sendCq: p.cqA, recvCq: p.cqA, cap: { maxSendWr: -1 } }), 'RangeError');
      expectThrow(() => p.pd.createQp({ sendCq: p.cqA, recvCq: p.cqA, cap: { maxSendWr: 1.5 } }), 'RangeError');
      const maxQpWr = p.ctx.queryDevice().maxQpWr;
      expectThrow(() => p.pd.createQp({ sendCq: p.cqA, recvCq: p.cqA, cap: { maxSendWr: maxQpWr + 1 } }), 'Error', { code: 'EINVAL', syscall: 'ibv_create_qp' });
      expectThrow(() => p.cqA.poll(-1), 'RangeError');
      expectThrow(() => p.cqA.poll(1.5), 'RangeError');
      expectThrow(() => p.cqA.ack(-1), 'RangeError');
      expectThrow(() => p.cqA.ack(1), 'RangeError'); // nothing to ack
      expectThrow(() => p.a.connect(p.b.endpoint(), { mtu: 1000 }), 'RangeError');
      expectThrow(() => p.a.toRts({ rnrRetry: 8 }), 'RangeError');
      expectThrow(() => p.a.toRtr(p.b.endpoint(), { minRnrTimer: 32 }), 'RangeError');
      expectThrow(() => p.ctx.queryPort(0), 'RangeError');
      // Many SGEs over the QP's maxSendSge: rejected by the verb, nothing posted.
      expectThrow(() => p.a.postSend({ wrId: 1, sg: Array.from({ length: 5 }, () => ({ mr, length: 1 })) }), 'Error', { code: 'EINVAL', badWr: 0 });
      await sendOnce(p.a, p.b);
      await expectFreshPairWorks();
    } finally {
      p.close();
    }
  });

  it('bad opcode names and bad access flag names give RangeErrors', async () => {
    const p = makePair();
    try {
      const mr = region(p.pd, 64);
      for (const opcode of ['SEND_INV', 'send', '', 'ATOMIC_WRITE', 'ATOMIC_FETCH_AND_ADD_MASKED']) {
        expectThrow(() => p.a.postSend(bad<SendWr>({ wrId: 1, opcode, sg: { mr } })), 'RangeError');
      }
      for (const access of [['REMOTE_EXEC'], ['local_write'], [''], [1]]) {
        expectThrow(() => p.pd.registerMemory(Buffer.alloc(8), { access: bad<AccessFlag[]>(access) }), 'RangeError');
      }
      const l = p.pd.createQp({ sendCq: p.cqA, recvCq: p.cqA });
      expectThrow(() => l.toInit({ access: bad<AccessFlag[]>(['BOGUS']) }), 'RangeError');
      expect(l.state).toBe('RESET');
      l.close();
      await sendOnce(p.a, p.b);
      await expectFreshPairWorks();
    } finally {
      p.close();
    }
  });

  it('closed objects give EBADF-coded errors', async () => {
    const p = makePair();
    try {
      const mr = region(p.pd, 64);
      const ebadf = { code: 'EBADF' };
      // A closed QP.
      const q = p.pd.createQp({ sendCq: p.cqA, recvCq: p.cqA });
      q.close();
      expect(q.closed).toBe(true);
      expectThrow(() => q.postSend({ wrId: 1, sg: { mr } }), 'Error', ebadf);
      expectThrow(() => q.postRecv({ wrId: 1, sg: { mr } }), 'Error', ebadf);
      expectThrow(() => q.toInit(), 'Error', ebadf);
      q.close(); // idempotent
      // A closed MR in a work request.
      const gone = region(p.pd, 8);
      gone.close();
      expectThrow(() => p.a.postSend({ wrId: 1, sg: { mr: gone } }), 'Error', ebadf);
      // A closed CQ.
      const cq = p.ctx.createCq({ cqe: 4, channel: p.channel });
      cq.close();
      expectThrow(() => cq.poll(), 'Error', ebadf);
      expectThrow(() => cq.requestNotify(), 'Error', ebadf);
      expectThrow(() => p.pd.createQp({ sendCq: cq, recvCq: cq }), 'Error', ebadf);
      // A closed channel.
      const otherCtx = openDevice(TEST_DEVICE);
      try {
        const ch = otherCtx.createCompChannel();
        ch.close();
        expectThrow(() => otherCtx.createCq({ cqe: 4, channel: ch }), 'Error', ebadf);
        // A closed PD.
        const pd = otherCtx.allocPd();
        pd.close();
        expectThrow(() => pd.registerMemory(Buffer.alloc(8)), 'Error', ebadf);
        expectThrow(() => pd.createQp({ sendCq: p.cqA, recvCq: p.cqA }), 'Error', ebadf);
      } finally {
        otherCtx.close();
      }
      // A closed context.
      expectThrow(() => otherCtx.allocPd(), 'Error', ebadf);
      expectThrow(() => otherCtx.createCompChannel(), 'Error', ebadf);
      expectThrow(() => otherCtx.createCq({ cqe: 4 }), 'Error', ebadf);
      expectThrow(() => otherCtx.queryDevice(), 'Error', ebadf);
      otherCtx.close(); // idempotent
      await sendOnce(p.a, p.b);
      await expectFreshPairWorks();
    } finally {
      p.close();
    }
  });

  it('unregistered buffers (not an Mr) give TypeErrors', async () => {
    const p = makePair();
    try {
      const buf = Buffer.alloc(64);
      expectThrow(() => p.a.postSend(bad({ wrId: 1, sg: { mr: buf } })), 'TypeError');
      expectThrow(() => p.a.postSend(bad({ wrId: 1, sg: buf })), 'TypeError');
      expectThrow(() => p.a.postRecv(bad<RecvWr>({ wrId: 1, sg: { mr: { lkey: 1, addr: 0n, length: 64 } as unknown as Mr } })), 'TypeError');
      expectThrow(() => p.a.postSend(bad({ wrId: 1, sg: [{ mr: region(p.pd, 8) }, { mr: new ArrayBuffer(8) }] })), 'TypeError');
      await sendOnce(p.a, p.b);
      await expectFreshPairWorks();
    } finally {
      p.close();
    }
  });

  it('posting past capacity fails with ENOMEM and badWr; the QP keeps working', async () => {
    const p = makePair({ cap: { maxRecvWr: 4 } });
    try {
      const n = p.b.cap.maxRecvWr;
      const dst = region(p.pd, 8);
      // Soft: n + 3 WRs, the (n+1)th fails. Real devices may hold more than n (see pastCapacityLength).
      const length = pastCapacityLength(n, n + 3);
      const err = expectThrow(() => p.b.postRecv(Array.from({ length }, (_, i) => ({ wrId: i, sg: { mr: dst } }))), 'Error', {
        code: 'ENOMEM',
      });
      expect(err.syscall).toBe('ibv_post_recv');
      const posted = expectPastCapacity(err, n, length); // n on soft
      // Drain those receives (sends in rounds that a's send queue and the CQs hold), then the pair works.
      const src = region(p.pd, 8);
      for (let done = 0; done < posted; ) {
        const k = Math.min(posted - done, p.a.cap.maxSendWr);
        for (let i = 0; i < k; i++) p.a.postSend({ wrId: done + i, sg: { mr: src } });
        expect((await wcs(p.cqB, k)).length).toBe(k);
        expect((await wcs(p.cqA, k)).every((w) => w.status === 'SUCCESS')).toBe(true);
        done += k;
      }
      await sendOnce(p.a, p.b);
      await expectFreshPairWorks();
    } finally {
      p.close();
    }
  });

  it('a bad device name fails with ENODEV (naming it); an empty one with a RangeError', async () => {
    const err = expectThrow(() => openDevice('no_such_dev0'), 'Error', { code: 'ENODEV', syscall: 'ibv_open_device' });
    expect(err.message).toContain('no_such_dev0');
    expectThrow(() => openDevice(''), 'RangeError');
    await expectFreshPairWorks();
  });

  itSoft('createSoftDevice with a taken name fails with EEXIST; bad options give TypeError/RangeError', async () => {
    expectThrow(() => createSoftDevice({ name: 'soft0' }), 'Error', { code: 'EEXIST' });
    const name = `badin${process.pid % 100000}`;
    createSoftDevice({ name });
    expectThrow(() => createSoftDevice({ name }), 'Error', { code: 'EEXIST' });
    expectThrow(() => createSoftDevice(bad(null)), 'TypeError');
    expectThrow(() => createSoftDevice(bad({})), 'TypeError');
    expectThrow(() => createSoftDevice(bad({ name: 5 })), 'TypeError');
    expectThrow(() => createSoftDevice({ name: '' }), 'RangeError');
    expectThrow(() => createSoftDevice({ name: 'x'.repeat(64) }), 'RangeError');
    expectThrow(() => createSoftDevice({ name: `${name}b`, ports: 0 }), 'RangeError');
    expectThrow(() => createSoftDevice({ name: `${name}c`, maxCqe: -1 }), 'RangeError');
    expectThrow(() => createSoftDevice({ name: `${name}d`, maxSge: 1.5 }), 'RangeError');
    expectThrow(() => createSoftDevice(bad({ name: `${name}e`, maxInline: '8' })), 'TypeError');
    // None of the failed ones exists; the good one works.
    const names = listDevices().map((d) => d.name);
    expect(names).toContain(name);
    for (const s of ['b', 'c', 'd', 'e']) expect(names).not.toContain(`${name}${s}`);
    const ctx = openDevice(name);
    try {
      await expectFreshPairWorks(ctx);
    } finally {
      ctx.close();
    }
  });

  it('objects from another context are refused (EINVAL), or fail at the device (LOC_PROT_ERR)', async () => {
    const p = makePair();
    const other = openDevice(TEST_DEVICE);
    try {
      const ch2 = other.createCompChannel();
      const cq2 = other.createCq({ cqe: 8, channel: ch2 });
      const pd2 = other.allocPd();
      expectThrow(() => p.ctx.createCq({ cqe: 4, channel: ch2 }), 'Error', { code: 'EINVAL', syscall: 'ibv_create_cq' });
      expectThrow(() => p.pd.createQp({ sendCq: cq2, recvCq: cq2 }), 'Error', { code: 'EINVAL', syscall: 'ibv_create_qp' });
      expectThrow(() => pd2.createQp({ sendCq: p.cqA, recvCq: cq2 }), 'Error', { code: 'EINVAL', syscall: 'ibv_create_qp' });
      // An MR of the other context in a local sge: the device refuses the access.
      const foreign = pd2.registerMemory(Buffer.alloc(16, 1));
      const dst = region(p.pd, 16);
      p.b.postRecv({ wrId: 1, sg: { mr: dst } });
      p.a.postSend({ wrId: 0xbad, sg: { mr: foreign } });
      const [wc] = await wcs(p.cqA, 1);
      expect(wc.wrId).toBe(0xbadn);
      expect(localError('LOC_PROT_ERR')).toContain(wc.status); // rxe: LOC_QP_OP_ERR (no MR for that lkey in this PD)
      expect(dst.buffer.every((x) => x === 0)).toBe(true);
      await expectFreshPairWorks(p.ctx);
      await expectFreshPairWorks(other);
    } finally {
      other.close();
      p.close();
    }
  });

  it('garbage passed straight to the native classes throws (TypeError/RangeError), never crashes', async () => {
    const p = makePair();
    try {
      const b = binding();
      const n = p.a.native;
      expectThrow(() => n.postSend(new ArrayBuffer(3), 5), 'RangeError');
      const lying = new Uint8Array(40);
      new DataView(lying.buffer).setUint32(32, 3, true); // claims 3 SGEs, carries none
      expectThrow(() => n.postSend(lying, 1), 'RangeError');
      expectThrow(() => n.postSend(new Uint8Array(40), 2), 'RangeError'); // one WR's bytes, count 2
      expectThrow(() => n.postSend(bad(null), 1), 'TypeError');
      expectThrow(() => n.postSend(new Uint8Array(64), 0), 'RangeError');
      expectThrow(() => n.postSend(new Uint8Array(64), bad('1')), 'TypeError');
      expectThrow(() => n.postSend(new Uint8Array(64), 2 ** 40), 'RangeError');
      expectThrow(() => n.postRecv(bad({}), 1), 'TypeError');
      expectThrow(() => n.postRecv(new ArrayBuffer(7), 1), 'RangeError');
      const huge = new Uint8Array(16);
      new DataView(huge.buffer).setUint32(8, 0xffffffff, true); // nsge = 4 billion
      expectThrow(() => n.postRecv(huge, 1), 'RangeError');
      expectThrow(() => n.modify(bad(null), 1), 'TypeError');
      expectThrow(() => n.modify(bad({ qpState: 'RTS' }), 1), 'TypeError');
      expectThrow(() => n.modify(bad({ qpState: 2, ah: 5 }), 1 | (1 << 7)), 'TypeError');
      expectThrow(() => n.modify(bad({ qpState: 2, ah: { dgid: 'zz' } }), 1 | (1 << 7)), 'RangeError');
      expectThrow(() => n.modify({ qpState: 99 }, 1), 'RangeError');
      expectThrow(() => p.cqA.native.startFastPath(bad(0)), 'RangeError');
      expectThrow(() => p.ctx.native.createCq(bad('x'), null), 'TypeError');
      expectThrow(() => p.ctx.native.createCq(4, bad({})), 'TypeError');
      if (IS_SOFT) expectThrow(() => p.ctx.native.faults.portEvent(bad(99)), 'RangeError');
      expectThrow(() => p.pd.native.createQp(bad(null), bad(null)), 'TypeError');
      expectThrow(() => p.pd.native.createQp(p.cqA.native, bad(p.channel.native)), 'TypeError');
      expectThrow(() => p.pd.native.createQp(p.cqA.native, p.cqA.native, {}, false, bad(p.cqA.native)), 'TypeError');
      expectThrow(() => p.pd.native.createSrq(bad('8'), 1, 0), 'TypeError');
      expectThrow(() => p.pd.native.createSrq(0, 1, 0), 'RangeError');
      expectThrow(() => p.pd.native.createSrq(8, -1, 0), 'RangeError');
      expectThrow(() => p.pd.native.registerMemory(Buffer.alloc(8), -1), 'RangeError');
      expectThrow(() => p.channel.native.setOwner(bad(5)), 'TypeError');
      expectThrow(() => p.channel.native.setOwner(bad({ handleWakeup: 1 })), 'TypeError');
      expectThrow(() => p.ctx.native.watchAsync(bad('f')), 'TypeError');
      expectThrow(() => p.ctx.native.watchAsync(bad({})), 'TypeError');
      // Constructing native classes directly.
      for (const C of [b.Context, b.Pd, b.Mr, b.CompletionChannel, b.Cq, b.Qp, b.Srq, b.Ah] as unknown as Array<new (...a: unknown[]) => unknown>) {
        expectThrow(() => new C(), 'TypeError');
        expectThrow(() => new C({}), 'TypeError');
        expectThrow(() => new C(1, 2, 3), 'TypeError');
      }
      expect(p.a.state).toBe('RTS');
      await sendOnce(p.a, p.b);
      await expectFreshPairWorks();
    } finally {
      p.close();
    }
  });

  it('native methods called on the wrong receiver throw, never crash (checked in a child process)', async () => {
    // The addon under test, found by the package's own rule (RX_VERBS_ADDON,
    // else build/): under the sanitizer run that is the instrumented build.
    const loader = path.resolve(__dirname, '..', '..', 'dist', 'native', 'binding.js');
    const script = `
      const b = require(${JSON.stringify(loader)}).binding();
      const out = [];
      let calls = 0;
      const classes = ['Context', 'Pd', 'Mr', 'CompletionChannel', 'Cq', 'Qp', 'Srq', 'Ah'];
      for (const name of classes) {
        const C = b[name];
        for (const key of Object.getOwnPropertyNames(C.prototype)) {
          if (key === 'constructor') continue;
          const d = Object.getOwnPropertyDescriptor(C.prototype, key);
          const fns = [d.value, d.get, d.set].filter((f) => typeof f === 'function');
          for (const f of fns) {
            for (const self of [{}, Object.create(C.prototype), null, undefined, 5]) {
              calls++;
              try { f.call(self, 1, 2, 3); out.push(name + '.' + key + ': no throw'); }
              catch (e) { if (!(e instanceof Error)) out.push(name + '.' + key + ': threw a non-Error'); }
            }
          }
        }
      }
      const ctx = b.openDevice('soft0');
      const pd = ctx.allocPd();
      // A method of one class on an instance of another.
      try { b.Cq.prototype.poll.call(pd, 1); out.push('Cq.poll on a Pd: no throw'); } catch (e) {}
      try { b.Qp.prototype.postSend.call(ctx, new ArrayBuffer(40), 1); out.push('Qp.postSend on a Context: no throw'); } catch (e) {}
      try { b.Srq.prototype.postRecv.call(pd, new ArrayBuffer(32), 1); out.push('Srq.postRecv on a Pd: no throw'); } catch (e) {}
      try { b.Pd.prototype.createQp.call(pd, null, null, {}, false, pd); out.push('createQp with a Pd as srq: no throw'); } catch (e) {}
      pd.close(); ctx.close();
      console.log(JSON.stringify({ out, calls }));
    `;
    const r = await new Promise<{ code: number | null; signal: string | null; stdout: string; stderr: string }>((resolve) => {
      const child = execFile(process.execPath, ['-e', script], { timeout: 20_000 }, (_err, stdout, stderr) =>
        resolve({ code: child.exitCode, signal: child.signalCode, stdout, stderr }),
      );
    });
    expect({ code: r.code, signal: r.signal, stderr: r.stderr }).toEqual({ code: 0, signal: null, stderr: '' });
    const res = JSON.parse(r.stdout.trim()) as { out: string[]; calls: number };
    expect(res.out).toEqual([]);
    expect(res.calls).toBeGreaterThan(100);
    await expectFreshPairWorks();
  });
});
