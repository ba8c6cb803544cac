import { credits, HotSource, WcBatch } from '../../src';
import { makePair, Pair, region, waitFor } from '../support/device';

/** Posts signaled RDMA WRITEs from a to b, wr_ids 0, 1, 2, ... in order, gated by `gate()`. */
function writer(p: Pair, total: number, gate: () => boolean) {
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

/**
 * Posts one WR and waits until the source's driver has read its completion
 * (the CQ's poll count reaches what was posted), so each one reaches the
 * buffer as a batch of its own: what the strategies do is then exact, not a
 * matter of how the device happened to group completions.
 */
async function deliverOneByOne(p: Pair, source: HotSource<WcBatch>, count: number, stop = () => false): Promise<number> {
  const w = writer(p, count, () => true);
  const c0 = p.cqA.stats.completions;
  while (w.posted < count && !stop()) {
    w.pump(1);
    expect(await waitFor(() => p.cqA.stats.completions - c0 === w.posted || source.terminated !== undefined)).toBe(true);
  }
  return w.posted;
}

const idsOf = (batches: WcBatch[]) => WcBatch.concat(batches).toArray().map((wc) => Number(wc.wrId));
const range = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => from + i);

describe('backpressure on a native hot source', () => {
  it('pause: a consumer slower than the producer loses no WC and never overruns when sends are gated by credits', async () => {
    const depth = 32;
    const p = makePair({ cqe: depth, cap: { maxSendWr: depth } });
    try {
      const source = p.cqA.completions({ highWaterMark: 4, lowWaterMark: 1, overflow: 'pause' });
      const credit = credits({ capacity: p.cqA.cqe });
      const total = 600;
      const c0 = p.cqA.stats.completions;
      // The producer posts one WR per turn of the event loop once the last
      // one was read, so completions reach the buffer one batch each.
      const w = writer(p, total, () => p.cqA.stats.completions - c0 === w.posted && credit.tryWaitForCompletion());
      const seen: number[] = [];
      let maxPending = 0;
      let sawPause = false;
      const producer = setInterval(() => w.pump(1), 0);
      try {
        for await (const batch of source) {
          maxPending = Math.max(maxPending, source.pending);
          for (let i = 0; i < batch.length; i++) {
            expect(batch.status[i]).toBe(0);
            seen.push(batch.wrIdLow(i));
          }
          credit.release(batch.length);
          // The slow consumer: the first time, it sits on its batch until the
          // buffer passes the high mark and the source pauses.
          if (!sawPause) sawPause = await waitFor(() => source.isPaused);
          if (seen.length === total) break;
        }
      } finally {
        clearInterval(producer);
      }
      expect(sawPause).toBe(true);
      expect(w.posted).toBe(total);
      expect(seen).toEqual(range(0, total));
      expect(maxPending).toBeLessThanOrEqual(5);
      expect(p.a.state).toBe('RTS'); // no overrun
    } finally {
      p.close();
    }
  });

  it('error: the delivery past the high mark errors the source with BufferOverflowError', async () => {
    const p = makePair({ cqe: 256, cap: { maxSendWr: 256 } });
    try {
      const source = p.cqA.completions({ highWaterMark: 2, overflow: 'error' });
      const hold = source.retain(); // demand, but nobody takes
      const posted = await deliverOneByOne(p, source, 10, () => source.terminated !== undefined);
      // Two batches fill the buffer; the third overflows it.
      expect(posted).toBe(3);
      expect(source.terminated).toBe('error');
      // What was read before the overflow stays takeable, in order; the error comes after it.
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
      const total = 64;
      expect(await deliverOneByOne(p, source, total)).toBe(total);
      const kept: WcBatch[] = [];
      for (let b = source.tryTake(); b; b = source.tryTake()) kept.push(b);
      const keptIds = idsOf(kept);
      const droppedIds = idsOf(dropped);
      // Every posted wr_id is either kept or reported dropped, never both,
      // never lost; the buffer keeps exactly highWaterMark of them, in order.
      expect([...keptIds, ...droppedIds].sort((x, y) => x - y)).toEqual(range(0, total));
      if (overflow === 'dropOldest') {
        expect(keptIds).toEqual([total - 2, total - 1]);
        expect(droppedIds).toEqual(range(0, total - 2));
      } else {
        expect(keptIds).toEqual([0, 1]);
        expect(droppedIds).toEqual(range(2, total));
      }
      hold.unsubscribe();
    } finally {
      p.close();
    }
  });
});
