import { WcBatch } from '../../../src';

const detach = (b: ArrayBuffer) => structuredClone(b, { transfer: [b] });
const batchOf = (...ids: number[]) => WcBatch.from(ids.map((wrId) => ({ wrId })));

describe('WcBatch buffers made in JS', () => {
  it('concat, slice, filter and from give each batch a buffer of its own', () => {
    const a = batchOf(1, 2);
    const b = batchOf(3, 4);
    const made = [a, b, WcBatch.concat([a, b]), a.slice(1), WcBatch.concat([a, b]).filter((i) => i !== 0)];
    const buffers = new Set(made.map((m) => m.buffer));
    expect(buffers.size).toBe(made.length);
  });

  it("rewriting or detaching one batch's buffer leaves the others and later batches intact", () => {
    const a = batchOf(1, 2);
    const b = batchOf(3, 4);
    new Uint8Array(a.buffer).fill(0xff);
    detach(a.buffer);
    expect(b.toArray().map((w) => w.wrId)).toEqual([3n, 4n]);
    const later = WcBatch.concat([b, batchOf(5)]);
    expect(later.toArray().map((w) => w.wrId)).toEqual([3n, 4n, 5n]);
  });

  it('the shared empty batch survives an attempt to detach its buffer', () => {
    const e = WcBatch.empty();
    detach(e.buffer);
    const again = WcBatch.empty();
    expect(again.length).toBe(0);
    expect(again.status.length).toBe(0);
    expect(WcBatch.concat([]).wrId.length).toBe(0);
    expect(batchOf().toArray()).toEqual([]);
  });

  it('no consumer can change the shared empty batch', () => {
    const e = WcBatch.empty() as unknown as { length: number };
    expect(() => {
      'use strict';
      e.length = 5;
    }).toThrow(TypeError);
    expect(WcBatch.empty().length).toBe(0);
    expect(WcBatch.empty().status.length).toBe(0);
  });
});
