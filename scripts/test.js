#!/usr/bin/env node
// `npm test`: builds the TypeScript, runs jest (arguments pass through), then
// the real-kernel suite in the rxe VM (test/rxe) when CI is set or
// RX_VERBS_RXE=1 — in CI it always runs, so it can never be skipped silently;
// elsewhere it says that it did not run and how to run it.
// RX_VERBS_RESULTS_DIR=dir writes dir/jest.json and dir/rxe.json reports.
'use strict';
const { spawnSync } = require('child_process');
const path = require('path');

const root = path.join(__dirname, '..');
const bin = (name) => path.join(root, 'node_modules', '.bin', name);
const run = (cmd, args) => spawnSync(cmd, args, { cwd: root, stdio: 'inherit' }).status ?? 1;

if (run(bin('tsc'), ['-p', 'tsconfig.build.json']) !== 0) process.exit(1);

const results = process.env.RX_VERBS_RESULTS_DIR;
const jestArgs = process.argv.slice(2);
if (results) jestArgs.push('--json', `--outputFile=${path.resolve(results, 'jest.json')}`);
const jestStatus = run(bin('jest'), jestArgs);

const rxe = process.env.RX_VERBS_RXE ?? (process.env.CI ? '1' : '0');
let rxeStatus = 0;
if (rxe === '1') {
  const rxeArgs = results ? ['--output', path.resolve(results, 'rxe.json')] : [];
  rxeStatus = run('bash', [path.join(root, 'test', 'rxe', 'run.sh'), ...rxeArgs]);
} else {
  process.stdout.write(
    '\nnote: the real-kernel suite (rxe0 in a QEMU VM) did not run here; `npm run test:rxe` runs it ' +
      '(`sudo bash test/rxe/setup.sh` installs what it needs). CI always runs it.\n',
  );
}
process.exit(jestStatus || rxeStatus);
