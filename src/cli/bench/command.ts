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
      process.stderr.write(
        'rx-verbs bench: the benchmarks are not part of the installed package.\n' +
          'Clone the rx-verbs repository and run `npm install && npm run bench` (`-- --help` lists the options).\n',
      );
      return 2;
    }
    const r = spawnSync(process.execPath, [runner, ...argv], { stdio: 'inherit' });
    if (r.error) throw r.error;
    return r.status ?? 1;
  },
};

function packageRoot(): string {
  return path.resolve(__dirname, '..', '..', '..');
}
