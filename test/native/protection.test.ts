import { randomBytes } from 'crypto';
import { makePair, region, expectThrow, Pair } from '../support/device';
import { guarded, wcs, expectQuietAfter, expectFreshPairWorks, localError } from '../support/verbs-checks';
import type { AccessFlag, WcStatus } from '../../src';

const ALL: AccessFlag[] = ['LOCAL_WRITE', 'REMOTE_WRITE', 'REMOTE_READ'];

/**
 * Runs one violation on a fresh pair: `post` posts on `p.a`; the first
 * completion on a's CQ must have `status` (or one of `status`: see
 * localError() for where real devices may differ from the spec's status; the
 * soft device is always held to the exact one). Then the pair's context must
 * still move data on a fresh pair.
 */
async function violation(post: (p: Pair) => void, status: WcStatus | readonly WcStatus[], after?: (p: Pair) => Promise<void> | void): Promise<void> {
  const p = makePair();
  try {
    post(p);
    const [wc] = await wcs(p.cqA, 1);
    expect(wc).toBeDefined();
    expect(wc.wrId).toBe(0xbadn);
    expect(typeof status === 'string' ? [status] : status).toContain(wc.status);
    expect(p.a.state).toBe('ERR');
    await after?.(p);
    await expectFreshPairWorks(p.ctx);
  } finally {
    p.close();
  }
}

describe('memory protection', () => {
  it('a wrong rkey completes REM_ACCESS_ERR and writes nothing', async () => {
    let t: ReturnType<typeof guarded> | undefined;
    let before: Buffer | undefined;
    await violation(
      (p) => {
        t = guarded(p.pd, 256, ALL);
        before = t.snapshot();
        const src = region(p.pd, 64, undefined, 0xee);
        p.a.postSend({ wrId: 0xbad, opcode: 'RDMA_WRITE', sg: { mr: src }, remote: { addr: t.mr.addr, rkey: (t.mr.rkey ^ 0x00ff00ff) >>> 0 } });
      },
      'REM_ACCESS_ERR',
      () => {
        t!.expectCanaries();
        expect(t!.whole.equals(before!)).toBe(true);
      },
    );
  });

  it('a remote address starting before the MR completes REM_ACCESS_ERR and writes nothing', async () => {
    let t: ReturnType<typeof guarded> | undefined;
    let before: Buffer | undefined;
    await violation(
      (p) => {
        t = guarded(p.pd, 256, ALL);
        before = t.snapshot();
        const src = region(p.pd, 16, undefined, 0xee);
        p.a.postSend({ wrId: 0xbad, opcode: 'RDMA_WRITE', sg: { mr: src }, remote: { addr: t.mr.addr - 8n, rkey: t.mr.rkey } });
      },
      'REM_ACCESS_ERR',
      () => {
        t!.expectCanaries();
        expect(t!.whole.equals(before!)).toBe(true);
      },
    );
  });

  it('a remote range ending after the MR completes REM_ACCESS_ERR and writes nothing', async () => {
    let t: ReturnType<typeof guarded> | undefined;
    let before: Buffer | undefined;
    await violation(
      (p) => {
        t = guarded(p.pd, 256, ALL);
        before = t.snapshot();
        const src = region(p.pd, 16, undefined, 0xee);
        p.a.postSend({ wrId: 0xbad, opcode: 'RDMA_WRITE', sg: { mr: src }, remote: { addr: t.mr.remoteAddr(256 - 8), rkey: t.mr.rkey } });
      },
      'REM_ACCESS_ERR',
      () => {
        t!.expectCanaries();
        expect(t!.whole.equals(before!)).toBe(true);
      },
    );
  });

  it('an RDMA READ past the end of the remote MR completes REM_ACCESS_ERR; the local buffer is untouched', async () => {
    let local: ReturnType<typeof guarded> | undefined;
    let before: Buffer | undefined;
    await violation(
      (p) => {
        const remote = guarded(p.pd, 256, ALL, 0x42);
        local = guarded(p.pd, 64, ['LOCAL_WRITE'], 0x00);
        before = local.snapshot();
        p.a.postSend({ wrId: 0xbad, opcode: 'RDMA_READ', sg: { mr: local.mr }, remote: { addr: remote.mr.remoteAddr(256 - 32), rkey: remote.mr.rkey } });
      },
      'REM_ACCESS_ERR',
      () => {
        local!.expectCanaries();
        expect(local!.whole.equals(before!)).toBe(true);
      },
    );
  });

  it('an RDMA WRITE to an MR without REMOTE_WRITE completes REM_ACCESS_ERR and writes nothing', async () => {
    let t: ReturnType<typeof guarded> | undefined;
    let before: Buffer | undefined;
    await violation(
      (p) => {
        t = guarded(p.pd, 256, ['LOCAL_WRITE', 'REMOTE_READ']);
        before = t.snapshot();
        const src = region(p.pd, 64, undefined, 0xee);
        p.a.postSend({ wrId: 0xbad, opcode: 'RDMA_WRITE', sg: { mr: src }, remote: { addr: t.mr.addr, rkey: t.mr.rkey } });
      },
      'REM_ACCESS_ERR',
      () => {
        t!.expectCanaries();
        expect(t!.whole.equals(before!)).toBe(true);
      },
    );
  });

  it('an RDMA READ from an MR without REMOTE_READ completes REM_ACCESS_ERR; nothing is read', async () => {
    let local: ReturnType<typeof guarded> | undefined;
    let before: Buffer | undefined;
    await violation(
      (p) => {
        const remote = guarded(p.pd, 256, ['LOCAL_WRITE', 'REMOTE_WRITE'], 0x42);
        local = guarded(p.pd, 64, ['LOCAL_WRITE'], 0x00);
        before = local.snapshot();
        p.a.postSend({ wrId: 0xbad, opcode: 'RDMA_READ', sg: { mr: local.mr }, remote: { addr: remote.mr.addr, rkey: remote.mr.rkey } });
      },
      'REM_ACCESS_ERR',
      () => {
        local!.expectCanaries();
        expect(local!.whole.equals(before!)).toBe(true);
      },
    );
  });

  it('a wrong local lkey (raw sge) completes LOC_PROT_ERR; the receiver gets nothing', async () => {
    let dst: ReturnType<typeof guarded> | undefined;
    let before: Buffer | undefined;
    await violation(
      (p) => {
        const src = region(p.pd, 64, undefined, 0xee);
        dst = guarded(p.pd, 64, ['LOCAL_WRITE']);
        before = dst.snapshot();
        p.b.postRecv({ wrId: 1, sg: { mr: dst.mr } });
        p.a.postSend({ wrId: 0xbad, sg: { addr: src.addr, length: 64, lkey: (src.lkey ^ 0x00ff00ff) >>> 0 } });
      },
      localError('LOC_PROT_ERR'), // rxe: LOC_QP_OP_ERR (no MR for that lkey)
      async (p) => {
        await expectQuietAfter(p.a, p.cqB); // a is in ERR: its marker is flushed
        expect(dst!.whole.equals(before!)).toBe(true);
      },
    );
  });

  it('a local sge reaching outside its MR (raw sge) completes LOC_PROT_ERR; nothing is sent', async () => {
    let dst: ReturnType<typeof guarded> | undefined;
    let before: Buffer | undefined;
    await violation(
      (p) => {
        const src = guarded(p.pd, 64, ['LOCAL_WRITE'], 0xee);
        dst = guarded(p.pd, 256, ['LOCAL_WRITE']);
        before = dst.snapshot();
        p.b.postRecv({ wrId: 1, sg: { mr: dst.mr } });
        // 8 bytes before the region, 64 long: starts outside it.
        p.a.postSend({ wrId: 0xbad, sg: { addr: src.mr.addr - 8n, length: 64, lkey: src.mr.lkey } });
      },
      'LOC_PROT_ERR',
      async (p) => {
        await expectQuietAfter(p.a, p.cqB); // a is in ERR: its marker is flushed
        expect(dst!.whole.equals(before!)).toBe(true);
      },
    );
  });

  it('an RDMA READ into a local sge reaching past its MR (raw sge) completes LOC_PROT_ERR and writes no canary', async () => {
    let local: ReturnType<typeof guarded> | undefined;
    let before: Buffer | undefined;
    await violation(
      (p) => {
        const remote = guarded(p.pd, 256, ALL, 0x42);
        local = guarded(p.pd, 64, ['LOCAL_WRITE'], 0x00);
        before = local.snapshot();
        p.a.postSend({
          wrId: 0xbad,
          opcode: 'RDMA_READ',
          sg: { addr: local.mr.addr, length: 64 + 16, lkey: local.mr.lkey },
          remote: { addr: remote.mr.addr, rkey: remote.mr.rkey },
        });
      },
      'LOC_PROT_ERR',
      () => {
        local!.expectCanaries();
        expect(local!.whole.equals(before!)).toBe(true);
      },
    );
  });

  it('an RDMA READ into a local MR without LOCAL_WRITE completes LOC_PROT_ERR; nothing is written', async () => {
    let local: ReturnType<typeof guarded> | undefined;
    let before: Buffer | undefined;
    await violation(
      (p) => {
        const remote = guarded(p.pd, 256, ALL, 0x42);
        local = guarded(p.pd, 64, [], 0x00);
        before = local.snapshot();
        p.a.postSend({ wrId: 0xbad, opcode: 'RDMA_READ', sg: { mr: local.mr }, remote: { addr: remote.mr.addr, rkey: remote.mr.rkey } });
      },
      'LOC_PROT_ERR',
      () => {
        expect(local!.whole.equals(before!)).toBe(true);
      },
    );
  });

  it('a receive into an MR without LOCAL_WRITE completes LOC_PROT_ERR on the receive; nothing is written', async () => {
    const p = makePair();
    try {
      const src = region(p.pd, 64, undefined, 0xee);
      const dst = guarded(p.pd, 64, [], 0x00);
      const before = dst.snapshot();
      p.b.postRecv({ wrId: 0xbad, sg: { mr: dst.mr } });
      p.a.postSend({ wrId: 2, sg: { mr: src } });
      const [r] = await wcs(p.cqB, 1);
      expect(r.wrId).toBe(0xbadn);
      expect(localError('LOC_PROT_ERR')).toContain(r.status); // rxe: LOC_QP_OP_ERR (a receive WQE it cannot write)
      const [s] = await wcs(p.cqA, 1);
      expect(s.wrId).toBe(2n);
      expect(s.status).not.toBe('SUCCESS');
      expect(dst.whole.equals(before)).toBe(true);
      await expectFreshPairWorks(p.ctx);
    } finally {
      p.close();
    }
  });

  it('an rkey of an MR in another PD completes REM_ACCESS_ERR and writes nothing', async () => {
    let t: ReturnType<typeof guarded> | undefined;
    let before: Buffer | undefined;
    await violation(
      (p) => {
        const otherPd = p.ctx.allocPd();
        t = guarded(otherPd, 256, ALL);
        before = t.snapshot();
        const src = region(p.pd, 64, undefined, 0xee);
        p.a.postSend({ wrId: 0xbad, opcode: 'RDMA_WRITE', sg: { mr: src }, remote: { addr: t.mr.addr, rkey: t.mr.rkey } });
      },
      'REM_ACCESS_ERR',
      () => {
        expect(t!.whole.equals(before!)).toBe(true);
      },
    );
  });

  it('a local sge of an MR in another PD completes LOC_PROT_ERR', async () => {
    let dst: ReturnType<typeof guarded> | undefined;
    let before: Buffer | undefined;
    await violation(
      (p) => {
        const otherPd = p.ctx.allocPd();
        const src = region(otherPd, 64, undefined, 0xee);
        dst = guarded(p.pd, 64, ['LOCAL_WRITE']);
        before = dst.snapshot();
        p.b.postRecv({ wrId: 1, sg: { mr: dst.mr } });
        p.a.postSend({ wrId: 0xbad, sg: { mr: src } });
      },
      localError('LOC_PROT_ERR'), // rxe: LOC_QP_OP_ERR (no MR for that lkey in this PD)
      async (p) => {
        await expectQuietAfter(p.a, p.cqB); // a is in ERR: its marker is flushed
        expect(dst!.whole.equals(before!)).toBe(true);
      },
    );
  });

  it('the rkey of a deregistered MR completes REM_ACCESS_ERR and writes nothing', async () => {
    let whole: Buffer | undefined;
    let before: Buffer | undefined;
    await violation(
      (p) => {
        const t = guarded(p.pd, 256, ALL);
        whole = t.whole;
        before = t.snapshot();
        const { addr, rkey } = t.mr;
        t.mr.close();
        expect(t.mr.closed).toBe(true);
        const src = region(p.pd, 64, undefined, 0xee);
        p.a.postSend({ wrId: 0xbad, opcode: 'RDMA_WRITE', sg: { mr: src }, remote: { addr, rkey } });
      },
      'REM_ACCESS_ERR',
      () => {
        expect(whole!.equals(before!)).toBe(true);
      },
    );
  });

  it('registering REMOTE_WRITE (or REMOTE_ATOMIC) without LOCAL_WRITE fails with EINVAL', async () => {
    const p = makePair();
    try {
      const buf = randomBytes(64);
      expectThrow(() => p.pd.registerMemory(buf, { access: ['REMOTE_WRITE'] }), 'Error', { code: 'EINVAL', syscall: 'ibv_reg_mr' });
      expectThrow(() => p.pd.registerMemory(buf, { access: ['REMOTE_READ', 'REMOTE_WRITE'] }), 'Error', { code: 'EINVAL' });
      expectThrow(() => p.pd.registerMemory(buf, { access: ['REMOTE_ATOMIC'] }), 'Error', { code: 'EINVAL' });
      // Allowed combinations register.
      p.pd.registerMemory(buf, { access: ['REMOTE_READ'] }).close();
      p.pd.registerMemory(buf, { access: ['LOCAL_WRITE', 'REMOTE_WRITE'] }).close();
      await expectFreshPairWorks(p.ctx);
    } finally {
      p.close();
    }
  });
});
