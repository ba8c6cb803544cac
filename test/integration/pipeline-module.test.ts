import { Subscription } from 'rxjs';
import { credits } from '../../src';
import { makePair, region, waitFor } from '../support/device';
// The same module the marble test (test/unit/testing/pipeline-module.test.ts) runs on the testing kit.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { completionPipeline } = require('../../examples/lib/completion-pipeline');

describe('examples/lib/completion-pipeline on the device', () => {
  it('delivers every completion of real traffic exactly once, in order per QP', async () => {
    const p = makePair({ cqe: 64, cap: { maxSendWr: 32, maxRecvWr: 32 } });
    const sub = new Subscription();
    try {
      const total = 3000;
      const src = region(p.pd, 16, undefined, 9);
      const dst = region(p.pd, 16 * 32);
      const credit = credits({ capacity: 32 });
      const recvIds: number[] = [];
      const sendIds: number[] = [];
      let posted = 0;
      const pump = () => {
        while (posted < total && credit.tryWaitForCompletion()) {
          p.b.postRecv({ wrId: posted, sg: { mr: dst, offset: (posted % 32) * 16, length: 16 } });
          p.a.postSend({ wrId: posted, sg: { mr: src } });
          posted++;
        }
      };
      sub.add(
        completionPipeline(p.channel).subscribe((batch: import('../../src').WcBatch) => {
          for (let i = 0; i < batch.length; i++) {
            expect(batch.status[i]).toBe(0);
            if (batch.opcode[i] === 128) {
              recvIds.push(batch.wrIdLow(i));
              credit.complete();
            } else sendIds.push(batch.wrIdLow(i));
          }
          pump();
        }),
      );
      p.cqA.requestNotify();
      p.cqB.requestNotify();
      pump();
      expect(await waitFor(() => recvIds.length === total && sendIds.length === total, 15000)).toBe(true);
      const expected = Array.from({ length: total }, (_, i) => i);
      expect(recvIds).toEqual(expected);
      expect(sendIds).toEqual(expected);
    } finally {
      sub.unsubscribe();
      p.close();
    }
  });
});
