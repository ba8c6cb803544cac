// jest's global set-up: before any test file runs, the addon and dist/ are
// made to match the sources (scripts/native/build.js, scripts/test/dist.js). Jest itself runs src/ through swc, but
// child-process fixtures, the CLI and the rxe guest load dist/: without this,
// after an edit they would test the code of the last build. A failed build
// fails the whole run, loudly, instead of testing stale code.
'use strict';
const { ensureNative } = require('../../scripts/native/build');
const { ensureFreshDist } = require('../../scripts/test/dist');

module.exports = function globalSetup() {
  // The rxe guest runs what the host built and checked (it has no tsc).
  if (process.env.RX_VERBS_DIST_PREBUILT === '1') return;
  const log = (line) => process.stderr.write(`\n[global set-up] ${line}\n`);
  // A run on another build of the addon (the sanitizer's) leaves ours alone.
  if (!process.env.RX_VERBS_ADDON) ensureNative({ log });
  ensureFreshDist({ log });
};
