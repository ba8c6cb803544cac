/**
 * `rx-verbs bench`: runs the benchmarks (bench/ in a git checkout of
 * rx-verbs, the same as `npm run bench`). They are not part of the installed
 * package, nor are their native baselines part of its addon: where bench/
 * is missing the command says how to get them.
 * @packageDocumentation
 */
import { spawnSync } from 'child_process';
import * as fs from 'fs';
import * as path from 'path';
import type { Command } from '../shared/command';

/** `rx-verbs bench`: hands its arguments to bench/run.js when the checkout has it. */
export const bench: Command = {
  summary: 'benchmarks against native baselines (in a git checkout: same as `npm run bench`)',
  async run(argv) {
    const runner = path.join(packageRoot(), 'bench', 'run.js');
    if (!fs.existsSync(runner)) {
      // Help is asked for and given (exit 0); a run that cannot happen here fails (1): neither is a usage error.
      const help = argv.includes('--help') || argv.includes('-h');
      (help ? process.stdout : process.stderr).write(help ? INSTALLED_HELP : NOT_SHIPPED);
      return help ? 0 : 1;
    }
    const r = spawnSync(process.execPath, [runner, ...argv], { stdio: 'inherit' });
    if (r.error) throw r.error;
    return r.status ?? 1;
  },
};

const NOT_SHIPPED =
  'rx-verbs bench: the benchmarks are not part of the installed package.\n' +
  'Clone the rx-verbs repository and run `npm install && npm run bench` (`-- --help` lists the options).\n';

const INSTALLED_HELP = `Usage: rx-verbs bench [options]

Benchmarks against native baselines. They run from a clone of the rx-verbs
repository: the installed package ships neither the suites nor their native
baselines. In a clone:
  npm install                    build the addon and dist/
  npm run bench -- --help        the options (suites, --quick, --json, --report)
  npm run bench -- --quick       a quick run of every suite
  npx rx-verbs bench [options]   the same as npm run bench
`;

function packageRoot(): string {
  return path.resolve(__dirname, '..', '..', '..');
}
