// One step of a test run: a child process whose exit status is what counts.
// With RX_VERBS_RESULTS_DIR set, a named step records that status in
// <dir>/<name>.exit for CI's summary (scripts/ci/summary.js), which also
// fails a step that recorded nothing.
'use strict';
const { spawn } = require('child_process');
const fs = require('fs');
const os = require('os');
const path = require('path');

const root = path.join(__dirname, '..', '..');
const resultsDir = process.env.RX_VERBS_RESULTS_DIR ? path.resolve(process.env.RX_VERBS_RESULTS_DIR) : undefined;

/** A path in the results folder, or undefined when none was asked for. */
const resultFile = (name) => (resultsDir ? path.join(resultsDir, name) : undefined);

/** Records a step's exit status (nothing without a results folder). */
function recordExit(name, status) {
  if (resultsDir && name) fs.writeFileSync(path.join(resultsDir, `${name}.exit`), `${status}\n`);
}

/**
 * Runs `cmd args` in the project root, output to ours (and, with `tee`, to
 * that file too). Resolves its exit status: 128 + N when killed by signal N,
 * as a shell says, since a native crash in jest kills jest before it reports.
 * @param {string} cmd
 * @param {string[]} args
 * @param {{ name?: string, env?: NodeJS.ProcessEnv, tee?: string }} [options]
 * @returns {Promise<number>}
 */
function runStep(cmd, args, options = {}) {
  const { name, env = process.env, tee } = options;
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { cwd: root, env, stdio: ['inherit', tee ? 'pipe' : 'inherit', tee ? 'pipe' : 'inherit'] });
    const log = tee ? fs.createWriteStream(tee) : undefined;
    if (log) {
      child.stdout.on('data', (d) => (process.stdout.write(d), log.write(d)));
      child.stderr.on('data', (d) => (process.stderr.write(d), log.write(d)));
    }
    const finish = (status, why) => {
      if (why) process.stderr.write(`\n${name ?? cmd} ${why} (exit status ${status}); it wrote no report\n`);
      recordExit(name, status);
      if (log) log.end(() => resolve(status));
      else resolve(status);
    };
    child.on('error', (err) => finish(127, `could not start: ${err.message}`));
    child.on('close', (code, signal) => {
      if (code !== null) finish(code);
      else finish(128 + (os.constants.signals[signal] ?? 0), `was killed by ${signal}`);
    });
  });
}

module.exports = { root, resultsDir, resultFile, recordExit, runStep };
