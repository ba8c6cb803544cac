/**
 * Verbs objects are bound to their thread (src/core/thread-bound.ts): posting
 * one to a worker, or structuredClone, throws a DataCloneError naming it,
 * instead of delivering a dead copy. A WcBatch is data: it crosses as a copy
 * its receiver rebuilds. On the device under test, with a real Worker.
 */
import * as path from 'path';
import { inspect } from 'util';
import { Worker } from 'worker_threads';
import { openDevice, WcBatch } from '../../src';
import { makePair, pollN, region, TEST_DEVICE, TEST_GID_INDEX } from '../support/device';
import { caught } from '../support/verbs-checks';
import { scaled } from '../support/slow';

const fixture = path.join(__dirname, '..', 'fixtures', 'clone-receiver.js');

/** A worker that answers each message with what reached it. */
function receiver(): { ask(m: unknown): Promise<unknown>; post(m: unknown): void; stop(): Promise<number> } {
  const w = new Worker(fixture);
  return {
    post: (m) => w.postMessage(m),
    ask: (m) =>
      new Promise((resolve, reject) => {
        w.once('message', resolve);
        w.once('error', reject);
        w.postMessage(m);
      }),
    stop: () => w.terminate(),
  };
}

describe('verbs objects and worker threads', () => {
  it('every verbs object refuses postMessage and structuredClone with a DataCloneError that names it and says what to do', async () => {
    const p = makePair();
    const w = receiver();
    try {
      const srq = p.pd.createSrq({ maxWr: 4 });
      const ud = p.pd.createQp({ type: 'UD', qkey: 1, sendCq: p.cqA, recvCq: p.cqA });
      const ah = p.pd.createAh({ gid: p.ctx.queryGid(1, TEST_GID_INDEX ?? 0), gidIndex: TEST_GID_INDEX ?? 0 });
      const objects: [string, object][] = [
        ['Context', p.ctx],
        ['Pd', p.pd],
        ['Mr', region(p.pd, 8)],
        ['Mr', p.pd.allocMemory(8)],
        ['CompletionChannel', p.channel],
        ['Cq', p.cqA],
        ['Qp', p.a],
        ['UdQp', ud],
        ['Srq', srq],
        ['Ah', ah],
      ];
      for (const [name, o] of objects) {
        for (const copy of [() => w.post(o), () => structuredClone(o)]) {
          const err = caught(copy);
          expect(err?.name).toBe('DataCloneError');
          expect(err?.message).toMatch(new RegExp(`^${name} cannot be sent to another thread`));
          expect(err?.message).toMatch(/openDevice\(\)/);
          expect(err?.message).toMatch(/SharedArrayBuffer/);
        }
      }
      // Reached through a plain object, the object met first is the one named.
      expect(caught(() => w.post({ event: 'x', qp: p.b }))?.message).toMatch(/^Qp cannot be sent/);
      expect(caught(() => w.post([p.cqB]))?.message).toMatch(/^Cq cannot be sent/);
      // Nothing was sent, and the port still works.
      expect(await w.ask({ plain: 1 })).toEqual({ keys: ['plain'] });
    } finally {
      await w.stop();
      p.close();
    }
  });

  it('a WcBatch crosses as a copy of its data, rebuilt with new WcBatch(buffer, length, byteOffset)', async () => {
    const p = makePair();
    const w = receiver();
    try {
      const dst = region(p.pd, 64);
      const src = region(p.pd, 8);
      p.b.postRecv([{ wrId: 1, sg: { mr: dst, offset: 0, length: 32 } }, { wrId: 2, sg: { mr: dst, offset: 32, length: 32 } }]);
      p.a.postSend([{ wrId: 0xfedcba9876543210n, sg: { mr: src } }, { wrId: 11, sg: { mr: src } }]);
      const batch = await pollN(p.cqB, 2);
      expect(batch.length).toBe(2);
      const here = batch.toArray().map((wc) => ({ ...wc, wrId: String(wc.wrId) }));
      expect(await w.ask({ kind: 'batch', batch })).toEqual(here);
      // A batch of its own buffer (WcBatch.concat) crosses the same way.
      expect(await w.ask({ kind: 'batch', batch: WcBatch.concat([batch]) })).toEqual(here);
    } finally {
      await w.stop();
      p.close();
    }
  }, scaled(30000));

  it('inspection, JSON, identity and property reads work as before', () => {
    const ctx = openDevice(TEST_DEVICE);
    try {
      const pd = ctx.allocPd();
      const cq = ctx.createCq({ cqe: 4 });
      const qp = pd.createQp({ sendCq: cq, recvCq: cq });
      expect(() => inspect(qp, { depth: 4 })).not.toThrow();
      expect(inspect(qp)).toMatch(/^Qp \{/);
      expect(JSON.stringify({ qp, n: 1 })).toBe('{"qp":"[Qp]","n":1}');
      expect(qp.pd).toBe(pd);
      expect(qp.sendCq).toBe(cq);
      expect({ qp }).toEqual({ qp });
      expect(Object.keys(qp)).toContain('pd');
    } finally {
      ctx.close();
    }
  });
});
