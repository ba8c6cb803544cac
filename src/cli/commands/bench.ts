/**
 * `rx-verbs bench` (also `npm run bench`): the benchmarks of DESIGN §3 on
 * the soft device, each against its baselines in the same process and run.
 *
 * Suites (`--only a,b`): throughput, eventRate, latency, idle, memory,
 * operators, stall. Native baselines live in src/native/bench (`nativeBench`).
 * Every variant of a suite is run in interleaved rounds and the best round
 * is kept (the machine is noisy); ratios come from the same run.
 * `--quick` finishes in under a minute; `--json` also writes
 * bench/results/latest.json (or `--out`).
 * @packageDocumentation
 */
import { spawnSync } from 'child_process';
import * as fs from 'fs';
import * as path from 'path';
import { helpText, OptionSpec, parseArgs, UsageError } from '../args';
import { formatResults, runBench, SUITES, Suite } from '../bench/report';
import type { RunConfig } from '../bench/rig';
import type { Command } from './index';

const SPECS: OptionSpec[] = [
  { name: 'quick', type: 'flag', help: 'short runs (under a minute)' },
  { name: 'json', type: 'flag', help: 'also write the results as JSON (see --out)' },
  { name: 'out', type: 'string', help: 'JSON file (default bench/results/latest.json)' },
  { name: 'only', type: 'string', help: 'comma-separated suites: throughput,eventRate,latency,idle,memory,operators,stall' },
  { name: 'device', short: 'd', type: 'string', help: 'soft device to run on', default: 'soft0' },
  { name: 'quiet', short: 'q', type: 'flag', help: 'no progress output' },
  { name: 'help', short: 'h', type: 'flag', help: 'show this help' },
];


/** V8 flags the memory suite needs: gc() (default heap sizes, so RSS is what a user sees). */
const NODE_FLAGS = ['--expose-gc'];

/** `rx-verbs bench`: every suite, a table on stdout, JSON with `--json`. */
export const bench: Command = {
  summary: 'benchmarks against native baselines (throughput, event rate, latency, idle, memory, operators, stall)',
  async run(argv) {
    const { options } = parseArgs(argv, SPECS);
    if (options.help) {
      process.stdout.write(helpText('rx-verbs bench [options]', this.summary, SPECS));
      return 0;
    }
    if (typeof (globalThis as { gc?: unknown }).gc !== 'function') return reexec();
    const only = options.only === undefined ? [...SUITES] : String(options.only).split(',').map((s) => s.trim());
    for (const s of only) if (!(SUITES as readonly string[]).includes(s)) throw new UsageError(`unknown suite '${s}' (try: ${SUITES.join(', ')})`);
    const cfg: RunConfig = {
      quick: !!options.quick,
      device: String(options.device),
      log: options.quiet ? () => undefined : (line: string) => process.stderr.write(`${line}\n`),
    };
    const results = await runBench(cfg, only as Suite[]);
    process.stdout.write(`${formatResults(results)}\n`);
    if (options.json || options.out) {
      const file = path.resolve(String(options.out ?? path.join(packageRoot(), 'bench', 'results', 'latest.json')));
      fs.mkdirSync(path.dirname(file), { recursive: true });
      fs.writeFileSync(file, `${JSON.stringify(results, null, 2)}\n`);
      process.stderr.write(`results written to ${file}\n`);
    }
    return 0;
  },
};

/** Runs this same command again in a child Node with the flags the suites need. */
function reexec(): number {
  if (process.env.RX_VERBS_BENCH_CHILD) throw new Error('bench: gc() is still not exposed in the child process');
  const script = process.argv[1];
  const r = spawnSync(process.execPath, [...NODE_FLAGS, ...process.execArgv, script, ...process.argv.slice(2)], {
    stdio: 'inherit',
    env: { ...process.env, RX_VERBS_BENCH_CHILD: '1' },
  });
  if (r.error) throw r.error;
  return r.status ?? 1;
}

function packageRoot(): string {
  return path.resolve(__dirname, '..', '..', '..');
}
