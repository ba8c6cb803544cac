#!/usr/bin/env node
// `npm test`: builds the TypeScript, runs jest (arguments pass through), then
// the real-kernel suite in the rxe VM (test/rxe) when CI is set or
// RX_VERBS_RXE=1 — in CI it always runs, so it can never be skipped silently;
// elsewhere it says that it did not run and how to run it.
// Exits non-zero when either failed, including when jest itself was killed
// (a native crash in a test file kills jest: it runs the tests in-process).
// RX_VERBS_RESULTS_DIR=dir writes dir/jest.json and dir/rxe.json reports and
// each one's exit status (dir/jest.exit, dir/rxe.exit) for CI's summary.
'use strict';
const { spawnSync } = require('child_process');
const fs = require('fs');
const os = require('os');
const path = require('path');

const root = path.join(__dirname, '..');
const results = process.env.RX_VERBS_RESULTS_DIR;
const bin = (name) => path.join(root, 'node_modules', '.bin', name);

/** Runs a command; returns its exit status, 128 + N when killed by signal N (as a shell says). */
function run(name, cmd, args) {
  const r = spawnSync(cmd, args, { cwd: root, stdio: 'inherit' });
  let status = r.status;
  if (status === null) {
    status = 128 + (os.constants.signals[r.signal] ?? 0);
    process.stderr.write(`\n${name} was killed by ${r.signal ?? 'an error'} (exit status ${status}); it wrote no report\n`);
  }
  if (results && name) fs.writeFileSync(path.resolve(results, `${name}.exit`), `${status}\n`);
  return status;
}

if (run(undefined, bin('tsc'), ['-p', 'tsconfig.build.json']) !== 0) process.exit(1);

const jestArgs = process.argv.slice(2);
if (results) jestArgs.push('--json', `--outputFile=${path.resolve(results, 'jest.json')}`);
const jestStatus = run('jest', bin('jest'), jestArgs);

const rxe = process.env.RX_VERBS_RXE ?? (process.env.CI ? '1' : '0');
let rxeStatus = 0;
if (rxe === '1') {
  const rxeArgs = results ? ['--output', path.resolve(results, 'rxe.json')] : [];
  rxeStatus = run('rxe', process.execPath, [path.join(root, 'test', 'rxe', 'run.js'), ...rxeArgs]);
} else {
  process.stdout.write(
    '\nnote: the real-kernel suite (rxe0 in a QEMU VM) did not run here; `npm run test:rxe` runs it ' +
      '(`sudo bash test/rxe/setup.sh` installs what it needs). CI always runs it.\n',
  );
}
process.exit(jestStatus || rxeStatus);
