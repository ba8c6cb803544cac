/**
 * Runs a fixture (test/fixtures/) in a child Node process, for crash
 * reproducers: the child inherits the environment, so it loads the addon the
 * suite is testing (RX_VERBS_ADDON under the sanitizer run) through dist/.
 */
import { execFile } from 'child_process';
import * as path from 'path';

/** How a child ended and what it wrote. */
export interface ChildResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** The path of a fixture by file name. */
export const fixturePath = (name: string): string => path.join(__dirname, '..', 'fixtures', name);

/** Runs `node [nodeArgs] fixture [args]` and resolves however it ends (never rejects on exit). */
export function runFixture(name: string, args: string[] = [], nodeArgs: string[] = ['--expose-gc'], timeoutMs = 60000): Promise<ChildResult> {
  return new Promise((resolve) => {
    execFile(process.execPath, [...nodeArgs, fixturePath(name), ...args], { timeout: timeoutMs, maxBuffer: 16 << 20 }, (err, stdout, stderr) => {
      const e = err as (Error & { code?: unknown; signal?: NodeJS.Signals | null }) | null;
      resolve({
        code: e ? (typeof e.code === 'number' ? e.code : null) : 0,
        signal: e?.signal ?? null,
        stdout,
        stderr,
      });
    });
  });
}

/** The child's last stdout line parsed as JSON, with its stderr in the message when that fails. */
export function lastJson<T = Record<string, unknown>>(r: ChildResult): T {
  const line = r.stdout.trim().split('\n').pop() ?? '';
  try {
    return JSON.parse(line) as T;
  } catch {
    throw new Error(`child printed no JSON (code ${r.code}, signal ${r.signal})\nstdout: ${r.stdout}\nstderr: ${r.stderr}`);
  }
}
