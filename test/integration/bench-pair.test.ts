/**
 * The cross-host benchmarks' tooling (bench/cm), where no guest is needed:
 * the report from the figures the pair driver records, its --check, the
 * bench cases' parsers on the output the programs print, and cm-loop's
 * handling of bad arguments and a host without RDMA devices. The benchmarks
 * themselves run in the rxe pair guests (test/rxe/run.js --bench-pair).
 */
import { execFileSync, spawnSync } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';

// Plain CommonJS modules of the harness.
// eslint-disable-next-line @typescript-eslint/no-var-requires
const report = require('../../bench/cm/pair-report') as {
  summarize: (records: object[], meta: object) => Record<string, any>;
  missingRatios: (r: object) => string[];
};
// eslint-disable-next-line @typescript-eslint/no-var-requires
const { benchCases } = require('../../bench/cm/pair-cases') as {
  benchCases: (quick: boolean) => { name: string; bench: { group: string; impl: string; parse: (out: string) => any } }[];
};
// eslint-disable-next-line @typescript-eslint/no-var-requires
const { buildCmLoop, BINARY } = require('../../bench/cm/build') as { buildCmLoop: (o?: object) => boolean; BINARY: string };

const ROOT = path.join(__dirname, '..', '..');
const REPORT = path.join(ROOT, 'bench', 'cm', 'pair-report.js');

const records = () => [
  { group: 'connect', impl: 'native', p50Us: 100, p99Us: 300, us: [90, 100, 110, 300] },
  { group: 'connect', impl: 'native', p50Us: 120, p99Us: 200, us: [100, 120, 130, 200] },
  { group: 'connect', impl: 'ours', p50Us: 130, p99Us: 400, us: [120, 130, 140, 400] },
  { group: 'connect', impl: 'ours', p50Us: 150, p99Us: 150, us: [110, 150, 150, 150] },
  { group: 'accept', impl: 'native', connections: 40, inflight: 8, perSecond: 20 },
  { group: 'accept', impl: 'native', connections: 40, inflight: 8, perSecond: 25 },
  { group: 'accept', impl: 'ours', connections: 40, inflight: 8, perSecond: 15 },
  { group: 'pingpong', impl: 'native', iters: 200, usecPerIter: 50 },
  { group: 'pingpong', impl: 'native', iters: 200, usecPerIter: 40 },
  { group: 'pingpong', impl: 'ours', iters: 200, usecPerIter: 60 },
];

describe('the pair benchmarks report', () => {
  it('merges the rounds of set-up samples, keeps the best round of rate and ping-pong, and judges the targets', () => {
    const r = report.summarize(records(), { quick: true });
    // native: 90 100 100 110 120 130 200 300 -> p50 120, p99 300; ours: 110 120 130 140 150 150 150 400 -> 150, 400
    expect(r.connect.native).toMatchObject({ samples: 8, p50Us: 120, p99Us: 300, roundP50Us: [100, 120] });
    expect(r.connect.ours).toMatchObject({ samples: 8, p50Us: 150, p99Us: 400 });
    expect(r.connectP50RatioToNative).toBeCloseTo(1.25);
    expect(r.accept.native.perSecond).toBe(25);
    expect(r.acceptRateRatioToNative).toBeCloseTo(0.6);
    expect(r.pingpong.native.usecPerIter).toBe(40);
    expect(r.pingpongRatioToNative).toBeCloseTo(1.5);
    expect(r.targets.map((t: { met: boolean }) => t.met)).toEqual([false, false]);
    expect(report.missingRatios(r)).toEqual([]);
  });

  it('leaves out, and names, the ratios of a group with only one side', () => {
    const r = report.summarize(records().filter((x) => !(x.group === 'accept' && x.impl === 'ours')), {});
    expect(r.accept).toBeUndefined();
    expect(report.missingRatios(r)).toEqual(['acceptRateRatioToNative']);
  });

  it('--check passes a complete file and fails one without a ratio', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rxv-pair-bench-'));
    try {
      const full = path.join(dir, 'full.json');
      fs.writeFileSync(full, JSON.stringify(report.summarize(records(), {})));
      expect(spawnSync(process.execPath, [REPORT, '--check', full]).status).toBe(0);
      const partial = path.join(dir, 'partial.json');
      fs.writeFileSync(partial, JSON.stringify(report.summarize(records().filter((x) => x.group !== 'pingpong'), {})));
      const r = spawnSync(process.execPath, [REPORT, '--check', partial], { encoding: 'utf8' });
      expect(r.status).toBe(1);
      expect(r.stderr).toMatch(/lacks pingpongRatioToNative/);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('the pair bench cases', () => {
  const cases = benchCases(true);
  const parse = (group: string, impl: string, out: string) => cases.find((c) => c.bench.group === group && c.bench.impl === impl)!.bench.parse(out);

  it('cover every group with both sides', () => {
    const kinds = new Set(cases.map((c) => `${c.bench.group}/${c.bench.impl}`));
    expect([...kinds].sort()).toEqual(['accept/native', 'accept/ours', 'connect/native', 'connect/ours', 'pingpong/native', 'pingpong/ours']);
    expect(new Set(cases.map((c) => c.name)).size).toBe(cases.length);
  });

  it("read the programs' report lines, and nothing from output without them", () => {
    expect(parse('connect', 'ours', 'x\nBENCH {"p50Us":1,"us":[1]}\n')).toEqual({ p50Us: 1, us: [1] });
    expect(parse('pingpong', 'ours', '12800 bytes in 0.10 seconds = 1.02 Mbit/sec\n100 iters in 0.10 seconds = 1000.50 usec/iter\n')).toEqual({ iters: 100, seconds: 0.1, usecPerIter: 1000.5 });
    expect(parse('connect', 'native', 'cm-loop: rdma_connect: Connection refused\n')).toBeUndefined();
    expect(parse('pingpong', 'native', 'Couldn\'t connect to 198.18.0.1:18515\n')).toBeUndefined();
  });
});

describe('cm-loop', () => {
  let built = false;
  beforeAll(() => {
    built = buildCmLoop({ log: () => undefined });
  }, 120_000);

  it('refuses bad arguments with its usage (exit 2)', () => {
    // Without usable librdmacm headers (rdma_cma.h needs infiniband/verbs.h too) it cannot be built.
    if (!built) return expect(execFileSync('sh', [path.join(__dirname, '..', '..', 'scripts', 'probe-rdmacm.sh')], { encoding: 'utf8' }).trim()).toBe('0');
    for (const args of [[], ['client', '127.0.0.1', '7471', '0', '1'], ['server', 'not-an-address', '7471', '1'], ['nonsense']]) {
      const r = spawnSync(BINARY, args, { encoding: 'utf8', timeout: 10_000 });
      expect(r.status).toBe(2);
      expect(r.stderr).toMatch(/usage: cm-loop|is not an IPv4 address/);
    }
  });
});
