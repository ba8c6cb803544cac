import { itSoft, makePair, Pair, region } from '../support/device';
import { scaled } from '../support/slow';

// take({ spinUs }) on completions$ spins in the addon (one call that polls
// until a completion or the budget runs out), then parks on the channel.
describe('completions$.take({ spinUs }): the native spin', () => {
  let p: Pair;
  beforeEach(() => {
    p = makePair({ sharedCq: true });
  });
  afterEach(() => p.close());

  it('returns the completion the device makes during the spin, without arming or an event', async () => {
    const src = region(p.pd, 64, { access: [] }, 0x5a);
    const dst = region(p.pd, 64);
    const before = p.cqA.stats;
    p.a.postSend({ wrId: 7n, sg: { mr: src }, opcode: 'RDMA_WRITE', remote: { addr: dst.addr, rkey: dst.rkey } });
    // One spin long enough for any device: it returns as soon as the WC is there.
    const batch = await p.cqA.completions$.take({ spinUs: scaled(5_000_000) });
    expect(batch).toBeDefined();
    const wcs = batch!.toArray();
    expect(wcs.map((wc) => wc.wrId)).toEqual([7n]);
    const after = p.cqA.stats;
    expect(after.arms).toBe(before.arms);
    expect(after.events).toBe(before.events);
    expect(after.completions - before.completions).toBe(1);
  });

  it('when the spin runs out, take() arms and parks, and the next completion resolves it', async () => {
    const dst = region(p.pd, 64);
    const before = p.cqA.stats;
    const taken = p.cqA.completions$.take({ spinUs: 2000 });
    // Still pending: nothing was there during the 2 ms spin.
    await new Promise((r) => setImmediate(r));
    expect(p.cqA.stats.polls - before.polls).toBeGreaterThan(1); // it spun
    p.b.postRecv({ wrId: 1n, sg: { mr: dst } });
    const src = region(p.pd, 16, { access: [] }, 0x33);
    p.a.postSend({ wrId: 2n, sg: { mr: src } });
    const batch = await taken;
    expect(batch).toBeDefined();
    expect(p.cqA.stats.arms).toBeGreaterThan(before.arms);
    // Whatever the first batch held, both completions arrive exactly once.
    const seen = batch!.toArray().map((wc) => wc.wrId);
    while (seen.length < 2) {
      const more = await p.cqA.completions$.take({ spinUs: scaled(5_000_000) });
      seen.push(...more!.toArray().map((wc) => wc.wrId));
    }
    expect(seen.sort()).toEqual([1n, 2n]);
  });

  itSoft('spins on the CQ\'s change count, not on its lock: an idle CQ is polled once however long the spin', () => {
    // Polling takes the lock the device needs to add the completion the spin
    // waits for; the soft CQ says when a poll could find something new.
    const native = (p.cqA as unknown as { native: { poll(max: number, spinNs?: number): unknown } }).native;
    const before = p.cqA.stats.polls;
    expect(native.poll(16, 20_000_000)).toBeNull(); // 20 ms over an idle CQ
    expect(p.cqA.stats.polls - before).toBe(1);
  });

  it('refuses a bad budget before touching the CQ', async () => {
    const polls = p.cqA.stats.polls;
    await expect(p.cqA.completions$.take({ spinUs: -1 })).rejects.toThrow(RangeError);
    await expect(p.cqA.completions$.take({ spinUs: Number.NaN })).rejects.toThrow(RangeError);
    await expect(p.cqA.completions$.take({ spinUs: Infinity })).rejects.toThrow(RangeError);
    expect(p.cqA.stats.polls).toBe(polls);
    // The addon's own check of the budget it is handed (nanoseconds, a u32 up to 1 s).
    const native = (p.cqA as unknown as { native: { poll(max: number, spinNs: unknown): unknown } }).native;
    for (const bad of [-1, 1.5e9, 'x', 2 ** 40]) expect(() => native.poll(1, bad)).toThrow(/spinNs/);
    expect(native.poll(1, 0)).toBeNull();
  });
});
