import * as fc from 'fast-check';
import { WcBatch, WC_BYTES } from '../../src/core/wc-batch';

const wcArb = fc.record({
  wrId: fc.bigInt({ min: 0n, max: 0xffffffffffffffffn }),
  status: fc.integer({ min: 0, max: 21 }),
  opcode: fc.constantFrom(0, 1, 2, 128, 129),
  byteLen: fc.nat(),
  imm: fc.integer({ min: 0, max: 0xffffffff }),
  qpNum: fc.integer({ min: 0, max: 0xffffff }),
  srcQp: fc.integer({ min: 0, max: 0xffffff }),
  flags: fc.integer({ min: 0, max: 3 }),
  vendorErr: fc.nat(),
});

describe('WcBatch', () => {
  it('round-trips every field through from(), at(), and the columns', () => {
    fc.assert(
      fc.property(fc.array(wcArb, { maxLength: 40 }), (wcs) => {
        const b = WcBatch.from(wcs);
        expect(b.length).toBe(wcs.length);
        wcs.forEach((wc, i) => {
          expect(b.wrId[i]).toBe(wc.wrId);
          expect(b.wrIdLow(i)).toBe(Number(wc.wrId & 0xffffffffn));
          expect([b.status[i], b.opcode[i], b.byteLen[i], b.imm[i], b.qpNum[i], b.srcQp[i], b.flags[i], b.vendorErr[i]]).toEqual([
            wc.status, wc.opcode, wc.byteLen, wc.imm, wc.qpNum, wc.srcQp, wc.flags, wc.vendorErr,
          ]);
        });
      }),
    );
  });

  it('concatenates, slices and filters without mixing batches that share a slab', () => {
    fc.assert(
      fc.property(fc.array(fc.array(wcArb, { maxLength: 300 }), { maxLength: 6 }), (parts) => {
        const batches = parts.map((p) => WcBatch.from(p));
        const all = WcBatch.concat(batches);
        const flat = parts.flat();
        expect(all.toArray().map((w) => w.wrId)).toEqual(flat.map((w) => w.wrId));
        expect(Array.from(all.vendorErr)).toEqual(flat.map((w) => w.vendorErr));
        // Parts are unchanged by what was carved after them.
        batches.forEach((b, k) => expect(Array.from(b.status)).toEqual(parts[k].map((w) => w.status)));
        const mid = Math.floor(all.length / 2);
        expect(all.slice(mid).toArray()).toEqual(all.toArray().slice(mid));
        expect(all.filter((i) => all.status[i] === 0).length).toBe(flat.filter((w) => w.status === 0).length);
      }),
    );
  });

  it('reads a batch at an offset in a shared buffer, as the addon hands them over', () => {
    const src = WcBatch.from([{ wrId: 7n, status: 4, byteLen: 9 }]);
    const shared = new ArrayBuffer(64 + WC_BYTES);
    new Uint8Array(shared, 64).set(new Uint8Array(src.buffer, src.byteOffset, WC_BYTES));
    const b = WcBatch.fromBytes(new Uint8Array(shared, 64, WC_BYTES));
    expect(b.at(0)).toMatchObject({ wrId: 7n, status: 'LOC_PROT_ERR', byteLen: 9 });
  });

  it('rejects a bad length, offset or short buffer with a RangeError', () => {
    expect(() => new WcBatch(new ArrayBuffer(40), -1)).toThrow(RangeError);
    expect(() => new WcBatch(new ArrayBuffer(80), 1, 4)).toThrow(RangeError);
    expect(() => new WcBatch(new ArrayBuffer(40), 2)).toThrow(RangeError);
    expect(WcBatch.empty().length).toBe(0);
    expect(WcBatch.empty().at(0)).toBeUndefined();
  });
});
