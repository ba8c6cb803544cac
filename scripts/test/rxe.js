// The real-kernel suite (rxe0 in a QEMU VM, test/rxe) as a step of
// `npm test`: run when CI is set or RX_VERBS_RXE=1, otherwise a note says it
// did not run and how to run it. Its merged report is <results>/rxe.json.
'use strict';
const path = require('path');
const { root, resultFile, runStep } = require('./step');

/** Whether this run includes the rxe suite (always in CI, so it is never skipped silently there). */
const rxeWanted = () => (process.env.RX_VERBS_RXE ?? (process.env.CI ? '1' : '0')) === '1';

/** Runs the suite in the VM; resolves its exit status (recorded as rxe.exit). */
function runRxe() {
  const report = resultFile('rxe.json');
  return runStep(process.execPath, [path.join(root, 'test', 'rxe', 'run.js'), ...(report ? ['--output', report] : [])], { name: 'rxe' });
}

/** Says that the suite did not run here, and how to run it. */
function noteRxeSkipped() {
  process.stdout.write(
    '\nnote: the real-kernel suite (rxe0 in a QEMU VM) did not run here; `npm run test:rxe` runs it ' +
      '(`sudo bash test/rxe/setup.sh` installs what it needs). CI always runs it.\n',
  );
}

module.exports = { rxeWanted, runRxe, noteRxeSkipped };
