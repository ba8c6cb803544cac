/**
 * scripts/ci/check-examples.js, the check `npm run typecheck` (and so CI)
 * runs over examples/: every example that says `// @ts-check` must pass
 * `strict` against the package's types. Here it meets a deliberate mistake,
 * and the real examples.
 */
import { execFile } from 'child_process';
import * as path from 'path';
import { scaled } from '../support/slow';

const root = path.join(__dirname, '..', '..');
const SCRIPT = path.join(root, 'scripts', 'ci', 'check-examples.js');

function check(dir?: string): Promise<{ code: number; stdout: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [SCRIPT, ...(dir ? [dir] : [])], { cwd: root, timeout: scaled(120_000) }, (err, stdout) => {
      resolve({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout });
    });
  });
}

describe('check-examples', () => {
  it('fails a file that claims @ts-check and breaks strict (an implicit any, a wrong option type), and leaves unclaimed files alone', async () => {
    const r = await check(path.join(root, 'test', 'fixtures', 'ts-check'));
    expect(r.code).toBe(1);
    expect(r.stdout).toMatch(/claims\.js\(\d+,\d+\): error TS7006: Parameter 'n' implicitly has an 'any' type/);
    expect(r.stdout).toMatch(/claims\.js\(\d+,\d+\): error TS2322: Type 'string' is not assignable to type 'number'/);
    expect(r.stdout).not.toMatch(/no-claim\.js/);
    expect(r.stdout).toMatch(/^check-examples: 1 examples with @ts-check under strict, 2 error\(s\)$/m);
  }, scaled(120_000));

  it('passes every example in examples/ that says @ts-check', async () => {
    const r = await check();
    expect(r.stdout).toMatch(/^check-examples: \d+ examples with @ts-check under strict, 0 error\(s\)$/m);
    expect(r.code).toBe(0);
  }, scaled(120_000));
});
