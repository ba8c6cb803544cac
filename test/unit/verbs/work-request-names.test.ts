/**
 * The names post errors give the fields of a work request (`wr[1].sg[2].length`).
 * The encoder makes them once per index and keeps them (work-request.ts):
 * every index, entry and form must still be named exactly.
 */
import { WrEncoder } from '../../../src/verbs/work-request';

const raw = (lkey: unknown = 1, length: unknown = 8) => ({ addr: 0x1000, length, lkey }) as never;
const recv = (wrId: unknown, sg: unknown) => ({ wrId, sg }) as never;

function messageOf(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    return (err as Error).message;
  }
  throw new Error('did not throw');
}

describe('work request field names in errors', () => {
  const enc = new WrEncoder();

  it('names the WR by its index, the entry by its form, and the field', () => {
    const good = recv(1, raw());
    expect(messageOf(() => enc.encodeRecv(recv(-1, raw())))).toMatch(/^wr\[0\]\.wrId must be/);
    expect(messageOf(() => enc.encodeRecv([good, good, recv(2, raw(-5))]))).toMatch(/^wr\[2\]\.sg\.lkey must be/);
    expect(messageOf(() => enc.encodeRecv([good, recv(2, [raw(), raw(), raw(1, 'x')])]))).toMatch(/^wr\[1\]\.sg\[2\]\.length must be/);
    expect(messageOf(() => enc.encodeRecv([good, recv(2, [raw(), 7])]))).toMatch(/^wr\[1\]\.sg\[1\] must be an object/);
    expect(messageOf(() => enc.encodeRecv(recv(3, undefined)))).toMatch(/^wr\[0\]\.sg is required/);
    expect(messageOf(() => enc.encodeSend({ wrId: 1, sg: raw(), signaled: 1 } as never))).toBe('wr[0].signaled must be a boolean, got 1');
    expect(messageOf(() => enc.encodeSend({ wrId: 1, sg: raw(), opcode: 'RDMA_WRITE' } as never))).toMatch(/^wr\[0\]\.remote \(required for RDMA_WRITE\) must be an object/);
    expect(messageOf(() => enc.encodeSend({ wrId: 1, sg: raw(), opcode: 'RDMA_READ', remote: { addr: 0, rkey: -1 } } as never))).toMatch(/^wr\[0\]\.remote\.rkey must be/);
  });

  it('names the same fields the same way every time, and indices past the kept names too', () => {
    const good = recv(1, raw());
    for (let round = 0; round < 3; round++) {
      expect(messageOf(() => enc.encodeRecv([good, recv(2, [raw(), raw(-1)])]))).toMatch(/^wr\[1\]\.sg\[1\]\.lkey must be/);
      expect(messageOf(() => enc.encodeSend([{ wrId: 1, sg: raw() }, { wrId: 2, sg: raw(), inline: 'yes' }] as never))).toMatch(/^wr\[1\]\.inline must be a boolean/);
    }
    const many = Array.from({ length: 70 }, () => good);
    many[69] = recv(1n << 64n, raw());
    expect(messageOf(() => enc.encodeRecv(many))).toMatch(/^wr\[69\]\.wrId must fit in 64 bits/);
    many[69] = recv(1, [raw(), raw(), raw(), raw('k')]);
    expect(messageOf(() => enc.encodeRecv(many))).toMatch(/^wr\[69\]\.sg\[3\]\.lkey must be a number/);
  });
});
