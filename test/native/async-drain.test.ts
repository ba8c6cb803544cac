import { itSoft } from '../helpers/device';
import { lastJson, runFixture } from '../helpers/child-run';

// The fixtures open soft0 and overrun its CQs on purpose: soft only.
describe('async events of objects the GC collected (issue 16, item 3)', () => {
  itSoft('a dropped context with an unread CQ_ERR does not abort: the event is acked and dropped', async () => {
    const r = await runFixture('async-drain-gc.js', ['30']);
    expect(r.signal).toBeNull();
    expect(r.stderr).not.toMatch(/terminate called|Napi::Error|rx-verbs: .*dropped/);
    expect(r.code).toBe(0);
    const out = lastJson<{ rounds: number; live: number }>(r);
    expect(out.rounds).toBe(30);
    // Every context, CQ and QP was released by its finalizer.
    expect(out.live).toBe(0);
  });

  itSoft('a kept context still receives CQ_ERR for its live CQ after other contexts were dropped', async () => {
    const r = await runFixture('async-drain-gc.js', ['10', 'keep']);
    expect(r.signal).toBeNull();
    expect(r.code).toBe(0);
    const out = lastJson<{ kept: { type: string; sameCq: boolean } }>(r);
    expect(out.kept).toEqual({ type: 'CQ_ERR', sameCq: true });
  });
});
