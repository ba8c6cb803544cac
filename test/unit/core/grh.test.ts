import { GRH_BYTES, readGrh } from '../../../src/core/grh';

const SGID = 'fe80:0000:0000:0000:0202:03ff:fe04:0506';
const DGID = 'fe80:0000:0000:0000:0202:03ff:fe04:0708';
const hex = (gid: string) => Buffer.from(gid.replace(/:/g, ''), 'hex');

/** A GRH as InfiniBand and RoCE write one: the IPv6 header's layout. */
function grh6(trafficClass: number, flowLabel: number, hopLimit: number, nextHeader: number): Buffer {
  const b = Buffer.alloc(GRH_BYTES);
  b.writeUInt32BE(((6 << 28) | (trafficClass << 20) | flowLabel) >>> 0, 0);
  b.writeUInt16BE(36, 4);
  b[6] = nextHeader;
  b[7] = hopLimit;
  hex(SGID).copy(b, 8);
  hex(DGID).copy(b, 24);
  return b;
}

/** RoCE v2 over IPv4: 20 undefined bytes, then an IPv4 header with its checksum. */
function grh4(src: number[], dst: number[], tos: number, ttl: number, fill = 0): Buffer {
  const b = Buffer.alloc(GRH_BYTES, fill);
  const ip = b.subarray(20);
  ip.fill(0);
  ip[0] = 0x45;
  ip[1] = tos;
  ip.writeUInt16BE(48, 2);
  ip[8] = ttl;
  ip[9] = 17;
  ip.set(src, 12);
  ip.set(dst, 16);
  let sum = 0;
  for (let i = 0; i < 20; i += 2) sum += ip.readUInt16BE(i);
  while (sum > 0xffff) sum = (sum & 0xffff) + (sum >>> 16);
  ip.writeUInt16BE(~sum & 0xffff, 10);
  return b;
}

describe('readGrh', () => {
  it('reads a GRH: both GIDs as queryGid spells them, traffic class, flow label, hop limit, next header', () => {
    expect(readGrh(grh6(0xa5, 0x12345, 64, 0x1b))).toEqual({
      version: 6,
      sgid: SGID,
      dgid: DGID,
      trafficClass: 0xa5,
      flowLabel: 0x12345,
      hopLimit: 64,
      nextHeader: 0x1b,
    });
  });

  it('reads RoCE v2 over IPv4: the addresses in bytes 32-39 as IPv4-mapped GIDs, TOS and TTL', () => {
    const expected = {
      version: 4,
      sgid: '0000:0000:0000:0000:0000:ffff:c0a8:0102',
      dgid: '0000:0000:0000:0000:0000:ffff:0a00:00fe',
      trafficClass: 0x10,
      flowLabel: 0,
      hopLimit: 63,
      nextHeader: 17,
    };
    expect(readGrh(grh4([192, 168, 1, 2], [10, 0, 0, 254], 0x10, 63))).toEqual(expected);
    // The first 20 bytes are undefined: even when they read as IPv6, the checksummed IPv4 header wins.
    expect(readGrh(grh4([192, 168, 1, 2], [10, 0, 0, 254], 0x10, 63, 0x60))).toEqual(expected);
  });

  it('reads from any view at its offset, or an ArrayBuffer (shared too), and only the first 40 bytes', () => {
    const wire = Buffer.concat([Buffer.alloc(8, 0xee), grh6(0, 0, 1, 17), Buffer.from('payload')]);
    const at = new Uint8Array(wire.buffer, wire.byteOffset + 8, GRH_BYTES + 7);
    expect(readGrh(at).sgid).toBe(SGID);
    expect(readGrh(new DataView(wire.buffer, wire.byteOffset + 8)).dgid).toBe(DGID);
    const own = grh6(0, 0, 1, 17);
    expect(readGrh(own.buffer.slice(own.byteOffset, own.byteOffset + GRH_BYTES)).sgid).toBe(SGID);
    const shared = new SharedArrayBuffer(GRH_BYTES);
    new Uint8Array(shared).set(own);
    expect(readGrh(shared).dgid).toBe(DGID);
  });

  it('refuses what is not a GRH area, saying what was expected', () => {
    expect(() => readGrh(undefined as never)).toThrow(TypeError);
    expect(() => readGrh('grh' as never)).toThrow(TypeError);
    expect(() => readGrh(Buffer.alloc(GRH_BYTES - 1))).toThrow(/a GRH area is 40 bytes, got 39/);
    expect(() => readGrh(Buffer.alloc(GRH_BYTES))).toThrow(/not a GRH: its first byte says IP version 0/);
  });
});
