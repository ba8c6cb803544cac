/**
 * Model-free fuzzing of the public API (fast-check), run in child processes
 * (test/fixtures/fuzz-child.js) so that a native crash is a failed test and
 * not a dead jest. The normal run is a small fixed-seed set (a few thousand
 * calls); RX_VERBS_FUZZ_CALLS=100000 runs that many (or use
 * `node test/soak/fuzz-long.js --calls 100000`, which keeps going after a
 * crash and reports every one).
 */
import { IS_SOFT } from '../support/device';
import { FixtureResult, runFixture } from '../support/fixture-child';
import { scaled } from '../support/slow';

const LONG = process.env.RX_VERBS_FUZZ_CALLS ? Number(process.env.RX_VERBS_FUZZ_CALLS) : undefined;
/** Fixed seeds of the normal run; each child runs CALLS_EACH calls. */
const SEEDS = [11, 22, 33];
const CALLS_EACH = LONG ? Math.ceil(LONG / SEEDS.length) : 1200;

/** The JSON line test/fixtures/fuzz-child.js prints last. */
type FuzzReport = {
  calls: number;
  runs: number;
  errorsThrown: number;
  byName: Record<string, number>;
  sourceErrors: number;
  knownBugs: Record<string, number>;
  opCounts: Record<string, number>;
  violation?: { what: string; detail: string; op: string };
  /** The addon's live wrapped objects and the process's open fds, before any fuzzing and after the last close and GC. */
  liveObjects: { before: number; after: number };
  /** `added`: the fds open at the end that were not at the start, with what they are. */
  fds: { before: number; after: number; added: string[] };
};

interface ChildResult extends FixtureResult<FuzzReport> {
  /** The last "run N" marker the child printed: where a crash happened. */
  lastRun: string;
}

async function runChild(seed: number, calls: number, timeoutMs: number): Promise<ChildResult> {
  const r = await runFixture<FuzzReport>('fuzz-child.js', ['--seed', String(seed), '--calls', String(calls)], timeoutMs);
  const runs = r.stderr.match(/^run \d+$/gm) ?? [];
  return { ...r, lastRun: runs[runs.length - 1] ?? '' };
}

const describeSoft = IS_SOFT ? describe : describe.skip;

describeSoft('fuzzing the public API', () => {
  const results: ChildResult[] = [];
  const timeoutMs = scaled(LONG ? Math.max(60_000, LONG * 5) : 45_000);

  beforeAll(async () => {
    results.push(...(await Promise.all(SEEDS.map((seed) => runChild(seed, CALLS_EACH, timeoutMs)))));
  }, timeoutMs + 10_000);

  it(`${SEEDS.length} fixed seeds x ${CALLS_EACH} calls: no crash, no hang, only TypeError/RangeError/coded errors, bystanders keep working`, () => {
    const total = results.reduce((n, r) => n + (r.report?.calls ?? 0), 0);
    for (const r of results) {
      // A crash (signal, sanitizer exit code) or a hang names the run to replay:
      // node --expose-gc test/fixtures/fuzz-child.js --seed S --run <run> --verbose
      const summary = { code: r.code, signal: r.signal, timedOut: r.timedOut, lastRun: r.lastRun, violation: r.report?.violation };
      if (r.code !== 0) throw new Error(`fuzz child failed: ${JSON.stringify(summary, null, 2)}\n${r.stderrTail}`);
      expect(r.report?.violation).toBeUndefined();
      // It really exercised errors on both sides: thrown ones and emitted ones.
      expect(r.report!.errorsThrown).toBeGreaterThan(0);
    }
    expect(total).toBeGreaterThanOrEqual(SEEDS.length * CALLS_EACH);
  });

  it('every object the runs made (closed, or dropped and collected) is released: live objects and fds back to their baseline', () => {
    for (const r of results) {
      // The counts exist (a report without them would make this pass vacuously).
      expect(r.report?.liveObjects).toEqual({ before: expect.any(Number), after: expect.any(Number) });
      expect(r.report?.fds).toEqual({ before: expect.any(Number), after: expect.any(Number), added: expect.any(Array) });
      expect(r.report!.liveObjects.after).toBe(r.report!.liveObjects.before);
      expect(r.report!.fds.added).toEqual([]);
      expect(r.report!.fds.after).toBe(r.report!.fds.before);
      // The runs made objects and dropped some unclosed, so the check had work to do.
      expect(r.report!.opCounts.openDevice ?? 0).toBeGreaterThan(0);
      expect(r.report!.opCounts.drop ?? 0).toBeGreaterThan(0);
      // Shared receive queues were made, posted to and had QPs created on them.
      expect(r.report!.opCounts.createSrq ?? 0).toBeGreaterThan(0);
      expect(r.report!.opCounts.srqPostRecv ?? 0).toBeGreaterThan(0);
      expect(r.report!.opCounts.createQpOnSrq ?? 0).toBeGreaterThan(0);
    }
  });

  // Bugs the fuzzer found; the children count them apart (and recover) so
  // that they do not hide anything else. Each fails until fixed.
  it('ctx.close() never refuses (it acks events the explicit path read before destroying the CQs)', () => {
    expect(results.map((r) => r.report?.knownBugs?.ctxCloseUnacked ?? 0)).toEqual(results.map(() => 0));
  });

  it('unsubscribing an ackEvents() pipeline never throws (its flush clamps to what is still unacked)', () => {
    expect(results.map((r) => r.report?.knownBugs?.ackFlushThrows ?? 0)).toEqual(results.map(() => 0));
  });
});
