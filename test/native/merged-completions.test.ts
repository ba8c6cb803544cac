import { merge, Observable, Subject } from 'rxjs';
import { failOnError, splitErrors, WcBatch, WorkCompletionError } from '../../src';
import { makePair, Pair, region, waitFor } from '../support/device';

/**
 * The operators that take batches work on any Observable of WcBatch: here
 * the merge() of two CQs' completions$ (a's send CQ and b's receive CQ),
 * with real traffic on the device under test — one SEND that lands, then
 * one that does not fit the receive posted for it (a length error at b:
 * LOC_LEN_ERR on soft0, LOC_QP_OP_ERR on rxe; a's SEND fails too).
 */
function traffic(p: Pair): void {
  const src = region(p.pd, 64, undefined, 1);
  const fits = region(p.pd, 64);
  const tooSmall = region(p.pd, 8);
  p.b.postRecv({ wrId: 1, sg: { mr: fits } });
  p.a.postSend({ wrId: 2, sg: { mr: src } });
  p.b.postRecv({ wrId: 3, sg: { mr: tooSmall } });
  p.a.postSend({ wrId: 4, sg: { mr: src } });
}

const wrIds = (batch: WcBatch) => Array.from(batch.wrId, Number);

describe('operators on merge(sendCq.completions$, recvCq.completions$)', () => {
  it('splitErrors: every completion of both CQs exactly once, the failed ones (with their status) at the sink', async () => {
    const p = makePair({ splitCqs: true });
    try {
      const merged$: Observable<WcBatch> = merge(p.sendA.completions$, p.recvB.completions$);
      const failed = new Subject<WcBatch>();
      const bad: Array<[number, string]> = [];
      const ok: number[] = [];
      failed.subscribe((batch) => bad.push(...batch.toArray().map((wc): [number, string] => [Number(wc.wrId), wc.status])));
      const sub = merged$.pipe(splitErrors(failed)).subscribe((batch) => ok.push(...wrIds(batch)));
      traffic(p);
      expect(await waitFor(() => ok.length + bad.length === 4)).toBe(true);
      sub.unsubscribe();
      expect(ok.sort()).toEqual([1, 2]);
      expect(bad.map(([id]) => id).sort()).toEqual([3, 4]);
      // The receiver's status names the too-short receive: LOC_LEN_ERR on
      // soft0, LOC_QP_OP_ERR on rxe (which reports the length error so).
      expect(['LOC_LEN_ERR', 'LOC_QP_OP_ERR']).toContain(bad.find(([id]) => id === 3)![1]);
      expect(bad.find(([id]) => id === 4)![1]).not.toBe('SUCCESS');
    } finally {
      p.close();
    }
  });

  it('failOnError: the merged stream errors with a WorkCompletionError for the first failed completion, after the good ones', async () => {
    const p = makePair({ splitCqs: true });
    try {
      const ok: number[] = [];
      let error: unknown;
      merge(p.sendA.completions$, p.recvB.completions$)
        .pipe(failOnError())
        .subscribe({ next: (batch) => ok.push(...wrIds(batch)), error: (err: unknown) => (error = err) });
      traffic(p);
      expect(await waitFor(() => error !== undefined)).toBe(true);
      expect(error).toBeInstanceOf(WorkCompletionError);
      expect([3, 4]).toContain(Number((error as WorkCompletionError).completion.wrId));
      expect(ok.every((id) => id === 1 || id === 2)).toBe(true);
    } finally {
      p.close();
    }
  });
});
