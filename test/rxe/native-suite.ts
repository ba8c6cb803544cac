/**
 * The native suite (test/native/*.test.ts) as ONE jest test file, for the rxe
 * VM: under software emulation every test file costs ~20 s of set-up (a new
 * environment, jest's framework and every module loaded and compiled again),
 * so the guest loads all of them into one environment and module registry.
 * Each file's tests run inside a describe block named after the file; the
 * test code is the same that runs on soft0. Not matched by the normal
 * testMatch (no .test.ts): run.js passes --testMatch for it.
 * RXE_NATIVE_FILES (comma-separated names, e.g. qp.test.ts) picks files.
 */
import * as fs from 'fs';
import * as path from 'path';

const dir = path.resolve(__dirname, '..', 'native');
const only = process.env.RXE_NATIVE_FILES ? process.env.RXE_NATIVE_FILES.split(',').map((s) => s.trim()) : undefined;
const files = fs
  .readdirSync(dir)
  .filter((f) => f.endsWith('.test.ts') && (!only || only.includes(f)))
  .sort();

for (const file of files) {
  describe(`native/${file}`, () => {
    require(path.join(dir, file));
  });
}
