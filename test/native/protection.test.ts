import { randomBytes } from 'crypto';
import { makePair, region, expectThrow, Pair } from '../support/device';
import { guarded, wcs, expectQuietAfter, expectFreshPairWorks, localError } from '../support/verbs-checks';
import type { AccessFlag, Pd, SgEntry, WcStatus } from '../../src';

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

/** The registered buffer (with canaries around it) that a violation must leave as it was. */
type Watched = ReturnType<typeof guarded>;

/**
 * One violation: `arrange` makes the memory and returns the buffer to watch
 * and the posts that violate (made after the watched buffer's snapshot);
 * then the first completion on a's CQ has `status`, and the watched buffer
 * is unchanged. `check` says what else holds: `canaries` (the guard bytes
 * around the MR are intact too), `receiver` (b's receive got nothing: a's
 * marker after it is flushed), or just `unchanged`.
 */
interface Violation {
  title: string;
  status: WcStatus | readonly WcStatus[];
  check: 'canaries' | 'receiver' | 'unchanged';
  arrange(p: Pair): { watched: Watched; post(): void };
}

/** An RDMA WRITE of 64 bytes of 0xee from `p`'s PD to `remote`. */
function writeTo(p: Pair, remote: { addr: bigint; rkey: number }, length = 64): void {
  const src = region(p.pd, length, undefined, 0xee);
  p.a.postSend({ wrId: 0xbad, opcode: 'RDMA_WRITE', sg: { mr: src }, remote });
}

/** A 256-byte remote MR (0x42) and a 64-byte local one with LOCAL_WRITE (0x00) to READ into, watched. */
function readSetup(pd: Pd, remoteAccess: AccessFlag[] = ALL, localAccess: AccessFlag[] = ['LOCAL_WRITE']) {
  return { remote: guarded(pd, 256, remoteAccess, 0x42), local: guarded(pd, 64, localAccess, 0x00) };
}

/** A SEND of `sg` from a to b, whose receive goes into a watched MR of `dstSize` bytes. */
function sendToWatched(p: Pair, sg: SgEntry, dstSize = 64) {
  const watched = guarded(p.pd, dstSize, ['LOCAL_WRITE']);
  return {
    watched,
    post: () => {
      p.b.postRecv({ wrId: 1, sg: { mr: watched.mr } });
      p.a.postSend({ wrId: 0xbad, sg });
    },
  };
}

const VIOLATIONS: Violation[] = [
  {
    title: 'a wrong rkey completes REM_ACCESS_ERR and writes nothing',
    status: 'REM_ACCESS_ERR',
    check: 'canaries',
    arrange: (p) => {
      const t = guarded(p.pd, 256, ALL);
      return { watched: t, post: () => writeTo(p, { addr: t.mr.addr, rkey: (t.mr.rkey ^ 0x00ff00ff) >>> 0 }) };
    },
  },
  {
    title: 'a remote address starting before the MR completes REM_ACCESS_ERR and writes nothing',
    status: 'REM_ACCESS_ERR',
    check: 'canaries',
    arrange: (p) => {
      const t = guarded(p.pd, 256, ALL);
      return { watched: t, post: () => writeTo(p, { addr: t.mr.addr - 8n, rkey: t.mr.rkey }, 16) };
    },
  },
  {
    title: 'a remote range ending after the MR completes REM_ACCESS_ERR and writes nothing',
    status: 'REM_ACCESS_ERR',
    check: 'canaries',
    arrange: (p) => {
      const t = guarded(p.pd, 256, ALL);
      return { watched: t, post: () => writeTo(p, { addr: t.mr.remoteAddr(256 - 8), rkey: t.mr.rkey }, 16) };
    },
  },
  {
    title: 'an RDMA READ past the end of the remote MR completes REM_ACCESS_ERR; the local buffer is untouched',
    status: 'REM_ACCESS_ERR',
    check: 'canaries',
    arrange: (p) => {
      const { remote, local } = readSetup(p.pd);
      return {
        watched: local,
        post: () => p.a.postSend({ wrId: 0xbad, opcode: 'RDMA_READ', sg: { mr: local.mr }, remote: { addr: remote.mr.remoteAddr(256 - 32), rkey: remote.mr.rkey } }),
      };
    },
  },
  {
    title: 'an RDMA WRITE to an MR without REMOTE_WRITE completes REM_ACCESS_ERR and writes nothing',
    status: 'REM_ACCESS_ERR',
    check: 'canaries',
    arrange: (p) => {
      const t = guarded(p.pd, 256, ['LOCAL_WRITE', 'REMOTE_READ']);
      return { watched: t, post: () => writeTo(p, { addr: t.mr.addr, rkey: t.mr.rkey }) };
    },
  },
  {
    title: 'an RDMA READ from an MR without REMOTE_READ completes REM_ACCESS_ERR; nothing is read',
    status: 'REM_ACCESS_ERR',
    check: 'canaries',
    arrange: (p) => {
      const { remote, local } = readSetup(p.pd, ['LOCAL_WRITE', 'REMOTE_WRITE']);
      return { watched: local, post: () => p.a.postSend({ wrId: 0xbad, opcode: 'RDMA_READ', sg: { mr: local.mr }, remote: { addr: remote.mr.addr, rkey: remote.mr.rkey } }) };
    },
  },
  {
    title: 'a wrong local lkey (raw sge) completes LOC_PROT_ERR; the receiver gets nothing',
    status: localError('LOC_PROT_ERR'), // rxe: LOC_QP_OP_ERR (no MR for that lkey)
    check: 'receiver',
    arrange: (p) => {
      const src = region(p.pd, 64, undefined, 0xee);
      return sendToWatched(p, { addr: src.addr, length: 64, lkey: (src.lkey ^ 0x00ff00ff) >>> 0 });
    },
  },
  {
    title: 'a local sge reaching outside its MR (raw sge) completes LOC_PROT_ERR; nothing is sent',
    status: 'LOC_PROT_ERR',
    check: 'receiver',
    arrange: (p) => {
      const src = guarded(p.pd, 64, ['LOCAL_WRITE'], 0xee);
      // 8 bytes before the region, 64 long: starts outside it.
      return sendToWatched(p, { addr: src.mr.addr - 8n, length: 64, lkey: src.mr.lkey }, 256);
    },
  },
  {
    title: 'an RDMA READ into a local sge reaching past its MR (raw sge) completes LOC_PROT_ERR and writes no canary',
    status: 'LOC_PROT_ERR',
    check: 'canaries',
    arrange: (p) => {
      const { remote, local } = readSetup(p.pd);
      return {
        watched: local,
        post: () =>
          p.a.postSend({
            wrId: 0xbad,
            opcode: 'RDMA_READ',
            sg: { addr: local.mr.addr, length: 64 + 16, lkey: local.mr.lkey },
            remote: { addr: remote.mr.addr, rkey: remote.mr.rkey },
          }),
      };
    },
  },
  {
    title: 'an RDMA READ into a local MR without LOCAL_WRITE completes LOC_PROT_ERR; nothing is written',
    status: 'LOC_PROT_ERR',
    check: 'unchanged',
    arrange: (p) => {
      const { remote, local } = readSetup(p.pd, ALL, []);
      return { watched: local, post: () => p.a.postSend({ wrId: 0xbad, opcode: 'RDMA_READ', sg: { mr: local.mr }, remote: { addr: remote.mr.addr, rkey: remote.mr.rkey } }) };
    },
  },
  {
    title: 'an rkey of an MR in another PD completes REM_ACCESS_ERR and writes nothing',
    status: 'REM_ACCESS_ERR',
    check: 'unchanged',
    arrange: (p) => {
      const t = guarded(p.ctx.allocPd(), 256, ALL);
      return { watched: t, post: () => writeTo(p, { addr: t.mr.addr, rkey: t.mr.rkey }) };
    },
  },
  {
    title: 'a local sge of an MR in another PD completes LOC_PROT_ERR',
    status: localError('LOC_PROT_ERR'), // rxe: LOC_QP_OP_ERR (no MR for that lkey in this PD)
    check: 'receiver',
    arrange: (p) => {
      const src = region(p.ctx.allocPd(), 64, undefined, 0xee);
      return sendToWatched(p, { mr: src });
    },
  },
  {
    title: 'the rkey of a deregistered MR completes REM_ACCESS_ERR and writes nothing',
    status: 'REM_ACCESS_ERR',
    check: 'unchanged',
    arrange: (p) => {
      const t = guarded(p.pd, 256, ALL);
      return {
        watched: t,
        post: () => {
          const { addr, rkey } = t.mr;
          t.mr.close();
          expect(t.mr.closed).toBe(true);
          writeTo(p, { addr, rkey });
        },
      };
    },
  },
];

describe('memory protection', () => {
  for (const v of VIOLATIONS) {
    it(v.title, async () => {
      let watched: Watched | undefined;
      let before: Buffer | undefined;
      await violation(
        (p) => {
          const arranged = v.arrange(p);
          watched = arranged.watched;
          before = watched.snapshot();
          arranged.post();
        },
        v.status,
        async (p) => {
          if (v.check === 'canaries') watched!.expectCanaries();
          if (v.check === 'receiver') await expectQuietAfter(p.a, p.cqB); // a is in ERR: its marker is flushed
          expect(watched!.whole.equals(before!)).toBe(true);
        },
      );
    });
  }

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
