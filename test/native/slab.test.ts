import { lastJson, runFixture } from '../support/fixture-child';

interface CqStats {
  expected: number;
  got: number;
  bad: string[];
  sawOther: boolean;
  transfers: number;
}
interface SlabRun {
  mode: string;
  done: boolean;
  workerGot: number;
  stats: { A: CqStats; B: CqStats };
}

/** Runs the slab fixture in a child and checks it ended normally with every completion of both CQs. */
async function run(mode: string): Promise<SlabRun> {
  const r = await runFixture('slab-transfer.js', [mode, '40'], { nodeArgs: [] });
  expect(r.signal).toBeNull();
  expect(r.stderr).not.toMatch(/Invalid typed array length|FATAL ERROR|terminate called/);
  expect(r.code).toBe(0);
  const out = lastJson<SlabRun>(r);
  for (const k of ['A', 'B'] as const) {
    expect(out.stats[k].bad).toEqual([]);
    expect(out.stats[k].got).toBe(out.stats[k].expected);
  }
  expect(out.done).toBe(true);
  return out;
}

// Each CQ's completions live in a slab of its own (issue 16, item 5). The
// fixture runs on the device under test (test/fixtures/device.js).
describe('completion batch buffers', () => {
  it('transferring a polled batch buffer (structuredClone) loses nothing on that CQ or another', async () => {
    const out = await run('poll');
    expect(out.stats.A.transfers).toBeGreaterThan(1);
  });

  it('transferring a completions$ batch buffer (structuredClone) loses nothing on that CQ or another', async () => {
    const out = await run('stream');
    expect(out.stats.A.transfers).toBeGreaterThan(1);
  });

  it('posting a batch column to a worker with its buffer in the transfer list loses nothing', async () => {
    const out = await run('worker');
    expect(out.stats.A.transfers).toBeGreaterThan(1);
    // The worker received every wr_id that was sent to it.
    expect(out.workerGot).toBe(out.stats.A.got);
  });

  it("a consumer cannot read or rewrite another CQ's batches through its buffer", async () => {
    const out = await run('isolation');
    expect(out.stats.A.sawOther).toBe(false);
    expect(out.stats.B.sawOther).toBe(false);
  });
});
