// The jest step, shared by `npm test` and the sanitizer run: jest from this
// project, and its --json report in the results folder when one is asked for.
'use strict';
const path = require('path');
const { root, resultFile, runStep } = require('./step');

/**
 * Runs jest with `args`; `name` names its report (<name>.json) and exit
 * status (<name>.exit) in the results folder.
 * @param {string[]} args
 * @param {{ name: string, env?: NodeJS.ProcessEnv, tee?: string }} options
 */
function runJest(args, options) {
  const report = resultFile(`${options.name}.json`);
  const all = report ? [...args, '--json', `--outputFile=${report}`] : args;
  return runStep(process.execPath, [path.join(root, 'node_modules', 'jest', 'bin', 'jest.js'), ...all], options);
}

module.exports = { runJest };
