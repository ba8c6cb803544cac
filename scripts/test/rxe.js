// The real-kernel suite (rxe0 in a QEMU VM, test/rxe) as a step of
// `npm test`: run when CI is set or RX_VERBS_RXE=1, otherwise a note says it
// did not run and how to run it. Its merged report is <results>/rxe.json.
'use strict';
const path = require('path');
const { root, resultFile, runStep } = require('./step');

/** Whether this run includes the rxe suite (always in CI, so it is never skipped silently there). */
const rxeWanted = () => (process.env.RX_VERBS_RXE ?? (process.env.CI ? '1' : '0')) === '1';

/**
 * In CI the guests the suite boots anyway also run the benchmarks' quick
 * modes (the bench part after jest and interop, the pair benchmarks after
 * the pair cases), so their ratios are checked present without a boot of
 * their own; RXE_PARTS or RXE_PAIR_BENCH set by hand win.
 */
function rxeEnv() {
  if (!process.env.CI) return process.env;
  // Scale 0.03: the bench part's smallest sizes (about a minute on rxe0 under TCG).
  return { RXE_PARTS: 'jest interop bench pair', RXE_PAIR_BENCH: 'after', RXE_BENCH_QUICK: '1', RXE_BENCH_SCALE: '0.03', ...process.env };
}

/** Runs the suite in the VM; resolves its exit status (recorded as rxe.exit). */
function runRxe() {
  const report = resultFile('rxe.json');
  return runStep(process.execPath, [path.join(root, 'test', 'rxe', 'run.js'), ...(report ? ['--output', report] : [])], { name: 'rxe', env: rxeEnv() });
}

/** Says that the suite did not run here, and how to run it. */
function noteRxeSkipped() {
  process.stdout.write(
    '\nnote: the real-kernel suite (rxe0 in a QEMU VM) did not run here; `npm run test:rxe` runs it ' +
      '(`sudo bash test/rxe/setup.sh` installs what it needs). CI always runs it.\n',
  );
}

module.exports = { rxeWanted, runRxe, noteRxeSkipped };
