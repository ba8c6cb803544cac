/**
 * Runs a fixture script (test/fixtures) in a child node process, so that a
 * native crash is a failed test and not a dead jest. The child loads the
 * addon the suite is testing: dist/native/binding honours RX_VERBS_ADDON
 * (set by `npm run test:asan`), and the environment, ASan preload included,
 * is inherited.
 */
import { spawn } from 'child_process';
import * as path from 'path';

/** How a fixture child ended, and the JSON line it printed last. */
export interface FixtureResult<R> {
  code: number | null;
  signal: NodeJS.Signals | null;
  timedOut: boolean;
  report: R | undefined;
  /** Its stderr, the last 100-200 kB of it (for markers a fixture prints as it goes). */
  stderr: string;
  stderrTail: string;
}

/** Runs test/fixtures/`name` with `--expose-gc`; kills it after `timeoutMs` (a hang guard, not an assertion on time). */
export function runFixture<R>(name: string, args: string[] = [], timeoutMs = 60_000): Promise<FixtureResult<R>> {
  const script = path.join(__dirname, '..', 'fixtures', name);
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--expose-gc', script, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    let timedOut = false;
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => {
      err += d;
      if (err.length > 200_000) err = err.slice(-100_000);
    });
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill('SIGKILL');
    }, timeoutMs);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      let report: R | undefined;
      try {
        report = JSON.parse(out.trim().split('\n').pop() ?? '') as R;
      } catch {
        report = undefined;
      }
      resolve({ code, signal, timedOut, report, stderr: err, stderrTail: err.slice(-4000) });
    });
  });
}

/** Throws with the child's stderr when it did not exit cleanly (signal, sanitizer exit code, hang). */
export function expectCleanExit(r: FixtureResult<unknown>): void {
  if (r.signal !== null || r.code !== 0 || r.timedOut || r.report === undefined) {
    throw new Error(`child did not exit cleanly: ${JSON.stringify({ code: r.code, signal: r.signal, timedOut: r.timedOut })}\n${r.stderrTail}`);
  }
}
