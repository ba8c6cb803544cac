/**
 * The benchmark runner (`npm run bench`, through bench/run.js): the
 * benchmarks of DESIGN §3 on the soft device, each against its baselines in
 * the same process and run.
 *
 * Suites (`--only a,b`): throughput, eventRate, latency, idle, memory,
 * operators, stall. Native baselines live in bench/native (a separate addon).
 * Every variant of a suite is run in interleaved rounds and the best round
 * is kept (the machine is noisy); ratios come from the same run.
 * `--quick` finishes in under a minute; `--json` also writes
 * bench/results/latest.json (or `--out`). Needs `--expose-gc` (run.js
 * starts it so).
 * @packageDocumentation
 */
import * as fs from 'fs';
import * as path from 'path';
import { parseArgs } from 'util';
import { formatResults, runBench, SUITES, Suite } from './report';
import type { RunConfig } from './rig';

const USAGE = `npm run bench [-- options]
benchmarks against native baselines (throughput, event rate, latency, idle, memory, operators, stall)

  --quick            short runs (under a minute)
  --json             also write the results as JSON (see --out)
  --out <file>       JSON file (default bench/results/latest.json)
  --only <suites>    comma-separated suites: ${SUITES.join(',')}
  -d, --device <dev> soft device to run on (default soft0)
  -q, --quiet        no progress output
  -h, --help         show this help
`;

/** Runs the suites `argv` asks for; the process exit status. */
export async function main(argv: string[]): Promise<number> {
  const { values: options } = parseArgs({
    args: argv,
    options: {
      quick: { type: 'boolean' },
      json: { type: 'boolean' },
      out: { type: 'string' },
      only: { type: 'string' },
      device: { type: 'string', short: 'd', default: 'soft0' },
      quiet: { type: 'boolean', short: 'q' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (options.help) {
    process.stdout.write(USAGE);
    return 0;
  }
  if (typeof (globalThis as { gc?: unknown }).gc !== 'function') {
    throw new Error('the benchmarks need gc(): run them with node --expose-gc (bench/run.js does)');
  }
  const only = options.only === undefined ? [...SUITES] : options.only.split(',').map((s) => s.trim());
  for (const s of only) {
    if (!(SUITES as readonly string[]).includes(s)) {
      process.stderr.write(`bench: unknown suite '${s}' (try: ${SUITES.join(', ')})\n`);
      return 2;
    }
  }
  const cfg: RunConfig = {
    quick: !!options.quick,
    device: options.device ?? 'soft0',
    log: options.quiet ? () => undefined : (line: string) => process.stderr.write(`${line}\n`),
  };
  const results = await runBench(cfg, only as Suite[]);
  process.stdout.write(`${formatResults(results)}\n`);
  if (options.json || options.out) {
    const file = path.resolve(options.out ?? path.join(__dirname, '..', 'results', 'latest.json'));
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, `${JSON.stringify(results, null, 2)}\n`);
    process.stderr.write(`results written to ${file}\n`);
  }
  return 0;
}

if (require.main === module) {
  main(process.argv.slice(2)).then(
    (code) => {
      process.exitCode = code;
    },
    (err: unknown) => {
      process.stderr.write(`bench: ${err instanceof Error && err.stack ? err.stack : String(err)}\n`);
      process.exitCode = 1;
    },
  );
}
