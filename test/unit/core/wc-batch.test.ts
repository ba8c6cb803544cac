import * as fc from 'fast-check';
import { WcBatch, WC_BYTES } from '../../../src/core/wc-batch';

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
  slid: fc.integer({ min: 0, max: 0xffff }),
  sl: fc.integer({ min: 0, max: 15 }),
  dlidPathBits: fc.integer({ min: 0, max: 127 }),
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
          expect([b.slid[i], b.sl[i], b.dlidPathBits[i]]).toEqual([wc.slid, wc.sl, wc.dlidPathBits]);
          expect(b.at(i)).toMatchObject({ slid: wc.slid, sl: wc.sl, dlidPathBits: wc.dlidPathBits, srcQp: wc.srcQp });
          expect([b.statusAt(i), b.opcodeAt(i), b.byteLenAt(i), b.immAt(i), b.qpNumAt(i), b.srcQpAt(i), b.flagsAt(i), b.vendorErrAt(i)]).toEqual([
            wc.status, wc.opcode, wc.byteLen, wc.imm, wc.qpNum, wc.srcQp, wc.flags, wc.vendorErr,
          ]);
        });
        for (const i of [-1, wcs.length, 0.5, NaN]) {
          expect(b.statusAt(i)).toBeUndefined();
          expect(b.vendorErrAt(i)).toBeUndefined();
          expect(b.wrIdLow(i)).toBeUndefined();
        }
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
        // The narrow columns (u16, u8) move with their rows, small parts and large alike.
        expect(Array.from(all.slid)).toEqual(flat.map((w) => w.slid));
        expect(Array.from(all.sl)).toEqual(flat.map((w) => w.sl));
        expect(Array.from(all.dlidPathBits)).toEqual(flat.map((w) => w.dlidPathBits));
        expect(Array.from(all.srcQp)).toEqual(flat.map((w) => w.srcQp));
        // Parts are unchanged by what was carved after them.
        batches.forEach((b, k) => expect(Array.from(b.status)).toEqual(parts[k].map((w) => w.status)));
        const mid = Math.floor(all.length / 2);
        expect(all.slice(mid).toArray()).toEqual(all.toArray().slice(mid));
        expect(all.filter((i) => all.status[i] === 0).length).toBe(flat.filter((w) => w.status === 0).length);
      }),
    );
  });

  it('lays out a batch as documented: u64 wr_id, eight u32 columns, slid u16, sl u8, dlidPathBits u8, 4 zero bytes', () => {
    const n = 3;
    const b = WcBatch.from([0, 1, 2].map((i) => ({ wrId: 10 + i, vendorErr: 20 + i, slid: 0x100 + i, sl: 1 + i, dlidPathBits: 4 + i })));
    expect(WC_BYTES).toBe(48);
    expect(b.buffer.byteLength).toBe(n * WC_BYTES);
    const v = new DataView(b.buffer, b.byteOffset);
    for (let i = 0; i < n; i++) {
      expect(v.getBigUint64(8 * i, true)).toBe(BigInt(10 + i));
      expect(v.getUint32(8 * n + 7 * 4 * n + 4 * i, true)).toBe(20 + i);
      expect(v.getUint16(40 * n + 2 * i, true)).toBe(0x100 + i);
      expect(v.getUint8(42 * n + i)).toBe(1 + i);
      expect(v.getUint8(43 * n + i)).toBe(4 + i);
    }
    expect(new Uint8Array(b.buffer, b.byteOffset + 44 * n, 4 * n).every((x) => x === 0)).toBe(true);
  });

  it('reads a batch at an offset in a shared buffer, as the addon hands them over', () => {
    const src = WcBatch.from([{ wrId: 7n, status: 4, byteLen: 9, slid: 0x1234, sl: 5, dlidPathBits: 3 }]);
    const shared = new ArrayBuffer(64 + WC_BYTES);
    new Uint8Array(shared, 64).set(new Uint8Array(src.buffer, src.byteOffset, WC_BYTES));
    const b = WcBatch.fromBytes(new Uint8Array(shared, 64, WC_BYTES));
    expect(b.at(0)).toMatchObject({ wrId: 7n, status: 'LOC_PROT_ERR', byteLen: 9, slid: 0x1234, sl: 5, dlidPathBits: 3 });
  });

  it('reads fields in place through one view shared by the batches of a slab, each batch only its own', () => {
    const parts = [
      [{ wrId: 1, status: 5, opcode: 128, byteLen: 7, imm: 9 }],
      [{ wrId: 2, status: 0, opcode: 0, byteLen: 64, qpNum: 17 }, { wrId: 3, status: 12, opcode: 1, vendorErr: 99, flags: 1 }],
    ];
    // Laid out back to back in one slab, 8-byte aligned, as the addon does.
    const slab = new ArrayBuffer(4096);
    const words = new Uint32Array(slab);
    let at = 40;
    const batches = parts.map((p) => {
      const src = WcBatch.from(p);
      new Uint8Array(slab, at).set(new Uint8Array(src.buffer, src.byteOffset, p.length * WC_BYTES));
      const b = WcBatch.inSlab(slab, p.length, at, words);
      at += p.length * WC_BYTES;
      return b;
    });
    parts.forEach((p, k) => {
      const b = batches[k];
      p.forEach((wc, i) => {
        expect(b.wrIdLow(i)).toBe(wc.wrId);
        expect([b.statusAt(i), b.opcodeAt(i), b.byteLenAt(i)]).toEqual([wc.status, wc.opcode, wc.byteLen ?? 0]);
        expect([b.immAt(i), b.qpNumAt(i), b.flagsAt(i), b.vendorErrAt(i)]).toEqual([b.imm[i], b.qpNum[i], b.flags[i], b.vendorErr[i]]);
      });
      // Not the neighbour's completions.
      expect(b.statusAt(p.length)).toBeUndefined();
      expect(b.opcodeAt(-1)).toBeUndefined();
    });
    // A transferred slab reads as nothing, as a column made before does.
    const status = batches[1].status;
    structuredClone(slab, { transfer: [slab] });
    expect(batches[1].statusAt(0)).toBeUndefined();
    expect(status[0]).toBeUndefined();
  });

  it('rejects a bad length, offset or short buffer with a RangeError', () => {
    expect(() => new WcBatch(new ArrayBuffer(WC_BYTES), -1)).toThrow(RangeError);
    expect(() => new WcBatch(new ArrayBuffer(2 * WC_BYTES), 1, 4)).toThrow(RangeError);
    expect(() => new WcBatch(new ArrayBuffer(WC_BYTES), 2)).toThrow(RangeError);
    expect(WcBatch.empty().length).toBe(0);
    expect(WcBatch.empty().at(0)).toBeUndefined();
    expect(WcBatch.empty().statusAt(0)).toBeUndefined();
  });
});
