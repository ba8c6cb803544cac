import { credits, WcBatch } from '../../src';
import { makePair, region, sleep, waitFor } from '../helpers/device';

/** Posts `total` signaled RDMA WRITEs from a to b, gated by `gate()`. */
function writer(p: ReturnType<typeof makePair>, total: number, gate: () => boolean) {
  const mr = region(p.pd, 8);
  let posted = 0;
  return {
    get posted() {
      return posted;
    },
    pump(max = Infinity) {
      for (let n = 0; n < max && posted < total && gate(); n++) {
        p.a.postSend({ wrId: posted++, opcode: 'RDMA_WRITE', sg: { mr }, remote: { addr: mr.addr, rkey: mr.rkey } });
      }
    },
  };
}

describe('backpressure on a native hot source', () => {
  it('pause: a consumer slower than the producer loses no WC and never overruns when sends are gated by credits', async () => {
    const depth = 32;
    const p = makePair({ cqe: depth, cap: { maxSendWr: depth } });
    try {
      const source = p.cqA.completions({ highWaterMark: 4, lowWaterMark: 1, overflow: 'pause' });
      const credit = credits({ capacity: p.cqA.cqe });
      const total = 600;
      const w = writer(p, total, () => credit.tryWaitForCompletion());
      const seen: number[] = [];
      let maxPending = 0;
      let paused = 0;
      // The producer posts a few WRs every turn of the event loop; the
      // consumer takes 2 ms per batch, so batches pile up and the source pauses.
      const producer = setInterval(() => w.pump(4), 0);
      try {
        for await (const batch of source) {
          maxPending = Math.max(maxPending, source.pending);
          if (source.isPaused) paused++;
          for (let i = 0; i < batch.length; i++) {
            expect(batch.status[i]).toBe(0);
            seen.push(batch.wrIdLow(i));
          }
          credit.release(batch.length);
          await sleep(2);
          if (seen.length === total) break;
        }
      } finally {
        clearInterval(producer);
      }
      expect(seen).toEqual(Array.from({ length: total }, (_, i) => i));
      expect(maxPending).toBeLessThanOrEqual(5);
      expect(paused).toBeGreaterThan(0);
      expect(p.a.state).toBe('RTS'); // no overrun
    } finally {
      p.close();
    }
  });

  it('error: overflowing the buffer errors the source with BufferOverflowError', async () => {
    const p = makePair({ cqe: 256, cap: { maxSendWr: 256 } });
    try {
      const source = p.cqA.completions({ highWaterMark: 2, overflow: 'error' });
      const hold = source.retain(); // demand, but nobody takes
      const w = writer(p, 200, () => true);
      for (let i = 0; i < 20 && source.terminated === undefined; i++) {
        w.pump(1);
        await sleep(3);
      }
      // What was read before the overflow stays takeable; the error comes after it.
      expect(() => {
        while (source.tryTake() !== undefined);
      }).toThrow(expect.objectContaining({ name: 'BufferOverflowError' }));
      hold.unsubscribe();
    } finally {
      p.close();
    }
  });

  it.each(['dropOldest', 'dropNewest'] as const)('%s: drops with onDropped and keeps the rest', async (overflow) => {
    const p = makePair({ cqe: 1024, cap: { maxSendWr: 512 } });
    try {
      const dropped: WcBatch[] = [];
      const source = p.cqA.completions({ highWaterMark: 2, overflow, onDropped: (b) => dropped.push(b) });
      const hold = source.retain();
      const w = writer(p, 64, () => true);
      for (let i = 0; i < 64; i++) {
        w.pump(1);
        await sleep(1);
      }
      expect(await waitFor(() => dropped.length > 0, 2000)).toBe(true);
      const kept: WcBatch[] = [];
      for (let b = source.tryTake(); b; b = source.tryTake()) kept.push(b);
      const keptIds = WcBatch.concat(kept).toArray().map((wc) => Number(wc.wrId));
      const droppedIds = WcBatch.concat(dropped).toArray().map((wc) => Number(wc.wrId));
      // Every completion is either kept or reported dropped, never both, never lost.
      expect([...keptIds, ...droppedIds].sort((x, y) => x - y)).toEqual(Array.from({ length: keptIds.length + droppedIds.length }, (_, i) => i));
      if (overflow === 'dropOldest') expect(Math.min(...keptIds)).toBeGreaterThan(Math.min(...droppedIds));
      else expect(Math.max(...droppedIds)).toBeGreaterThan(Math.max(...keptIds));
      hold.unsubscribe();
    } finally {
      p.close();
    }
  });
});
