/**
 * Runs a fixture script (test/fixtures) in a child node process, so that a
 * native crash is a failed test and not a dead jest. The child loads the
 * package from dist/, which jest's global set-up (test/support/
 * global-setup.js) has just rebuilt from the current sources, and the
 * addon the suite is testing: dist/native/binding honours RX_VERBS_ADDON
 * (set by `npm run test:asan`), and the environment, ASan preload included,
 * is inherited.
 */
import { spawn } from 'child_process';
import * as path from 'path';

/** How a fixture child ended, what it wrote, and the JSON line it printed last. */
export interface FixtureResult<R = Record<string, unknown>> {
  code: number | null;
  signal: NodeJS.Signals | null;
  timedOut: boolean;
  /** Its last stdout line parsed as JSON; undefined when that line is not JSON. */
  report: R | undefined;
  stdout: string;
  /** Its stderr, the last 100-200 kB of it (for markers a fixture prints as it goes). */
  stderr: string;
  stderrTail: string;
}

/** How to start a fixture child. */
export interface FixtureOptions {
  /** Node's own flags (default `--expose-gc`: fixtures check what GC frees). */
  nodeArgs?: string[];
  /** Kill the child after this long: a hang guard, never an assertion on time (default 60 s). */
  timeoutMs?: number;
}

/** The path of a fixture by file name. */
export const fixturePath = (name: string): string => path.join(__dirname, '..', 'fixtures', name);

/**
 * Runs `node [nodeArgs] test/fixtures/<name> [args]` and resolves however it
 * ends (never rejects on a failed exit). A number for `options` is the
 * timeout alone.
 */
export function runFixture<R = Record<string, unknown>>(name: string, args: string[] = [], options: FixtureOptions | number = {}): Promise<FixtureResult<R>> {
  const { nodeArgs = ['--expose-gc'], timeoutMs = 60_000 } = typeof options === 'number' ? { timeoutMs: options } : options;
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [...nodeArgs, fixturePath(name), ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
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
        report = JSON.parse(lastLine(out)) as R;
      } catch {
        report = undefined;
      }
      resolve({ code, signal, timedOut, report, stdout: out, stderr: err, stderrTail: err.slice(-4000) });
    });
  });
}

const lastLine = (text: string): string => text.trim().split('\n').pop() ?? '';

/** The child's last stdout line parsed as JSON; throws with its output when there is none. */
export function lastJson<T = Record<string, unknown>>(r: FixtureResult<unknown>): T {
  if (r.report === undefined) {
    throw new Error(`child printed no JSON (code ${r.code}, signal ${r.signal}, timed out: ${r.timedOut})\nstdout: ${r.stdout}\nstderr: ${r.stderrTail}`);
  }
  return r.report as T;
}

/** Throws with the child's stderr when it did not exit cleanly (signal, sanitizer exit code, hang, no report). */
export function expectCleanExit(r: FixtureResult<unknown>): void {
  if (r.signal !== null || r.code !== 0 || r.timedOut || r.report === undefined) {
    throw new Error(`child did not exit cleanly: ${JSON.stringify({ code: r.code, signal: r.signal, timedOut: r.timedOut })}\n${r.stderrTail}`);
  }
}
