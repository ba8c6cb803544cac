/**
 * The benchmark runner (`npm run bench`, through bench/run.js): the
 * benchmarks of docs/ARCHITECTURE.md, The hot path, on the soft device, each against its baselines in
 * the same process and run.
 *
 * Suites (`--only a,b`): throughput, eventRate, latency, idle, memory,
 * operators, stall, messages. Native baselines live in bench/native (a separate addon).
 * Every variant of a suite is run in interleaved rounds and the best round
 * is kept (the machine is noisy); ratios come from the same run.
 * `--quick` finishes in under a minute; `--json` also writes
 * bench/results/latest.json (or `--out`); `--report` writes the HTML page of
 * bench/suites/page.ts (bench/results/report.html, or the file it names), and
 * `--report-from results.json` writes it from saved results without running
 * anything. Needs `--expose-gc` (run.js starts it so).
 * @packageDocumentation
 */
import * as fs from 'fs';
import * as path from 'path';
import { parseArgs } from 'util';
import { renderPage } from './page';
import { formatResults, Results, runBench, SUITES, Suite, targets } from './report';
import type { RunConfig } from './rig';

const USAGE = `npm run bench [-- options]
benchmarks against native baselines (throughput, event rate, latency, idle, memory, operators, stall, messages)

  --quick            short runs (under a minute)
  --json             also write the results as JSON (see --out)
  --out <file>       JSON file (default bench/results/latest.json)
  --report [file]    also write an HTML page with charts (default bench/results/report.html)
  --report-from <json>  write the page from saved results (--json's file) and run nothing
  --only <suites>    comma-separated suites: ${SUITES.join(',')}
  -d, --device <dev> device to run on (default soft0; rxe0 in the rxe guest)
  --scale <f>        scales the WCs and round trips of throughput, eventRate
                     and latency (default 1; the rxe guest uses less)
  --depths <list>    the throughput suite at these CQ depths only, producer
                     unlimited (default 64,256,1024,4096, quick 256,4096,
                     then paced runs at depth 1024)
  -g, --gid-index <n>  GID index QPs of the device reach each other by (RoCE: ::ffff:127.0.0.1's on rxe0)
  -q, --quiet        no progress output
  -h, --help         show this help
`;

const RESULTS_DIR = path.join(__dirname, '..', 'results');

/**
 * `--report` takes an optional file: parseArgs has no such option type, so a
 * bare `--report` (last, or followed by another option) gets the default.
 */
function withReportDefault(argv: string[]): string[] {
  return argv.flatMap((a, i) => (a === '--report' && (i === argv.length - 1 || argv[i + 1].startsWith('-')) ? [a, path.join(RESULTS_DIR, 'report.html')] : [a]));
}

async function writePage(results: Results, file: string): Promise<void> {
  const out = path.resolve(file);
  fs.mkdirSync(path.dirname(out), { recursive: true });
  fs.writeFileSync(out, await renderPage(results));
  process.stderr.write(`report written to ${out}\n`);
}

/** Results saved by `--json`, or a one-line reason why `file` does not give them. */
function readResults(file: string): Results | string {
  let parsed: unknown;
  try {
    parsed = JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch (err) {
    // Not `instanceof Error`: an error from another realm (a vm context, jest) is one too.
    const message = (err as { message?: unknown } | null)?.message;
    return `cannot read results from ${file}: ${typeof message === 'string' ? message : String(err)}`;
  }
  const r = parsed as Partial<Results> | null;
  if (typeof r !== 'object' || r === null || typeof r.meta !== 'object' || r.meta === null || !Array.isArray(r.targets)) {
    return `${file} does not hold bench results (written by --json: an object with meta and targets)`;
  }
  // Judged again by today's rules: the figures are the run's, the measure each target takes is this code's.
  const results = r as Results;
  results.targets = targets(results);
  return results;
}

/** Runs the suites `argv` asks for; the process exit status. */
export async function main(argv: string[]): Promise<number> {
  const { values: options } = parseArgs({
    args: withReportDefault(argv),
    options: {
      quick: { type: 'boolean' },
      json: { type: 'boolean' },
      out: { type: 'string' },
      report: { type: 'string' },
      'report-from': { type: 'string' },
      only: { type: 'string' },
      device: { type: 'string', short: 'd', default: 'soft0' },
      'gid-index': { type: 'string', short: 'g' },
      scale: { type: 'string' },
      depths: { type: 'string' },
      quiet: { type: 'boolean', short: 'q' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (options.help) {
    process.stdout.write(USAGE);
    return 0;
  }
  if (options['report-from'] !== undefined) {
    const saved = readResults(options['report-from']);
    if (typeof saved === 'string') {
      process.stderr.write(`bench: ${saved}\n`);
      return 2;
    }
    await writePage(saved, options.report ?? path.join(RESULTS_DIR, 'report.html'));
    return 0;
  }
  const only = options.only === undefined ? [...SUITES] : options.only.split(',').map((s) => s.trim());
  for (const s of only) {
    if (!(SUITES as readonly string[]).includes(s)) {
      process.stderr.write(`bench: unknown suite '${s}' (try: ${SUITES.join(', ')})\n`);
      return 2;
    }
  }
  const gidIndex = options['gid-index'] === undefined ? undefined : Number(options['gid-index']);
  if (gidIndex !== undefined && !(Number.isInteger(gidIndex) && gidIndex >= 0 && gidIndex <= 255)) {
    process.stderr.write(`bench: --gid-index must be an integer in [0, 255], got ${options['gid-index']}\n`);
    return 2;
  }
  const scale = options.scale === undefined ? 1 : Number(options.scale);
  if (!(scale > 0 && scale <= 10)) {
    process.stderr.write(`bench: --scale must be a number in (0, 10], got ${options.scale}\n`);
    return 2;
  }
  const depths = options.depths?.split(',').map((d) => Number(d.trim()));
  if (depths && !depths.every((d) => Number.isInteger(d) && d >= 1 && d <= 65536)) {
    process.stderr.write(`bench: --depths must be CQ depths (integers in [1, 65536]) separated by commas, got ${options.depths}\n`);
    return 2;
  }
  // After the options: a mistake in them is reported however the runner was started.
  if (typeof (globalThis as { gc?: unknown }).gc !== 'function') {
    throw new Error('the benchmarks need gc(): run them with node --expose-gc (bench/run.js does)');
  }
  const cfg: RunConfig = {
    quick: !!options.quick,
    scale,
    depths,
    device: options.device ?? 'soft0',
    gidIndex,
    log: options.quiet ? () => undefined : (line: string) => process.stderr.write(`${line}\n`),
  };
  const results = await runBench(cfg, only as Suite[]);
  process.stdout.write(`${formatResults(results)}\n`);
  if (options.json || options.out) {
    const file = path.resolve(options.out ?? path.join(RESULTS_DIR, 'latest.json'));
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, `${JSON.stringify(results, null, 2)}\n`);
    process.stderr.write(`results written to ${file}\n`);
  }
  if (options.report !== undefined) await writePage(results, options.report);
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
