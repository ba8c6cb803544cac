#!/usr/bin/env node
// The one runner for the test suites (its parts: scripts/test/).
//
//   node scripts/test.js [jest args]      `npm test`: dist/ from the current
//       sources, jest (arguments pass through), then the real-kernel suite in
//       the rxe VM (test/rxe) when CI is set or RX_VERBS_RXE=1 — in CI it
//       always runs, so it can never be skipped silently; elsewhere it says
//       that it did not run and how to run it.
//   node scripts/test.js --asan [paths]   `npm run test:asan`: the native
//       suites under ASan, UBSan and LSan (scripts/test/asan.js).
//   node scripts/test.js --headerless [jest args]   `npm run test:headerless`:
//       jest against the addon built without rdma-core's headers, as a
//       newcomer's clone builds it (scripts/test/headerless.js).
//
// Exits non-zero when a suite failed, including when jest itself was killed
// (a native crash in a test file kills jest: it runs the tests in-process).
// RX_VERBS_RESULTS_DIR=dir writes each suite's jest --json report
// (dir/jest.json, dir/rxe.json, dir/asan.json, dir/headerless.json) and its exit status
// (dir/<suite>.exit) for CI's summary.
'use strict';
const { ensureFreshDist } = require('./test/dist');
const { ensureNative } = require('./native/build');
const { runJest } = require('./test/jest');
const { rxeWanted, runRxe, noteRxeSkipped } = require('./test/rxe');
const { runAsan } = require('./test/asan');
const { runHeaderless } = require('./test/headerless');

/** `npm test`: jest, then rxe. */
async function suites(jestArgs) {
  try {
    // Once here; jest's global set-up then finds both fresh and builds nothing.
    ensureNative();
    ensureFreshDist();
  } catch (err) {
    process.stderr.write(`${err.message}\n`);
    return 1;
  }
  // --forceExit: a failed test can leave a device or listener open, and
  // jest runs in band on a 2-core machine: without it the run would hang
  // instead of failing. Exit behaviour itself is tested in child processes.
  const jestStatus = await runJest(['--forceExit', ...jestArgs], { name: 'jest' });
  let rxeStatus = 0;
  if (rxeWanted()) rxeStatus = await runRxe();
  else noteRxeSkipped();
  return jestStatus || rxeStatus;
}

async function main(argv) {
  if (argv[0] === '--asan') return runAsan(argv.slice(1));
  if (argv[0] === '--headerless') return runHeaderless(argv.slice(1));
  return suites(argv);
}

main(process.argv.slice(2)).then(
  (status) => process.exit(status),
  (err) => {
    process.stderr.write(`${err.stack ?? err}\n`);
    process.exit(1);
  },
);
