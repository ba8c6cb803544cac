import { lastJson, runFixture } from '../support/fixture-child';

// The fixture overruns CQs of the device under test with real traffic (three
// signaled WRITEs into a CQ of depth 1): soft0 and rxe0 both raise CQ_ERR
// naming the CQ (test/native/cq-overrun.test.ts).
describe('async events of objects the GC collected (issue 16, item 3)', () => {
  it('a dropped context with an unread CQ_ERR does not abort: the event is acked and dropped', async () => {
    const r = await runFixture('async-drain-gc.js', ['30']);
    expect(r.signal).toBeNull();
    expect(r.stderr).not.toMatch(/terminate called|Napi::Error|rx-verbs: .*dropped/);
    expect(r.code).toBe(0);
    const out = lastJson<{ rounds: number; live: number }>(r);
    expect(out.rounds).toBe(30);
    // Every context, CQ and QP was released by its finalizer.
    expect(out.live).toBe(0);
  });

  it('a kept context still receives CQ_ERR for its live CQ after other contexts were dropped', async () => {
    const r = await runFixture('async-drain-gc.js', ['10', 'keep']);
    expect(r.signal).toBeNull();
    expect(r.code).toBe(0);
    const out = lastJson<{ kept: { type: string; sameCq: boolean } }>(r);
    expect(out.kept).toEqual({ type: 'CQ_ERR', sameCq: true });
  });
});
