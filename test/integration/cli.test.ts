/**
 * The `rx-verbs` command's manners, as Node's and POSIX tools have them:
 * `--version`, `help <command>`, usage errors in our own words on one line
 * with exit status 2, output that starts where the result starts, and a
 * `bench --help` that answers in a clone and in an installed package.
 * Runs the built CLI (dist/cli/main.js), as users do.
 */
import { execFile } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { scaled } from '../support/slow';

const root = path.resolve(__dirname, '..', '..');
const MAIN = path.join(root, 'dist', 'cli', 'main.js');

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

function node(args: string[], timeout = 60_000): Promise<Run> {
  return new Promise((resolve) => {
    execFile(process.execPath, args, { timeout, env: { ...process.env, RX_VERBS_DEVICE: 'soft0' } }, (err, stdout, stderr) => {
      const code = err ? (typeof err.code === 'number' ? err.code : 1) : 0;
      resolve({ code, stdout, stderr });
    });
  });
}

const cli = (...args: string[]) => node([MAIN, ...args]);

/** A usage error: exit 2, nothing on stdout, one line on stderr matching `message`. */
function expectUsageError(r: Run, message: RegExp): void {
  expect(r.code).toBe(2);
  expect(r.stdout).toBe('');
  expect(r.stderr.split('\n')).toHaveLength(2); // one line and its newline
  expect(r.stderr.trim()).toMatch(message);
}

describe('rx-verbs: the command line', () => {
  it('--version (and -v) prints the package version and exits 0', async () => {
    const { version } = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')) as { version: string };
    for (const flag of ['--version', '-v']) {
      const r = await cli(flag);
      expect(r).toEqual({ code: 0, stdout: `${version}\n`, stderr: '' });
    }
  });

  it("help <command> shows that command's help, the same as <command> --help", async () => {
    for (const command of ['demo', 'pingpong', 'rping']) {
      const viaHelp = await cli('help', command);
      expect(viaHelp.code).toBe(0);
      expect(viaHelp.stdout).toMatch(new RegExp(`^Usage: rx-verbs ${command} `));
      expect(viaHelp.stdout).toBe((await cli(command, '--help')).stdout);
    }
    const top = await cli('help');
    expect(top.code).toBe(0);
    expect(top.stdout).toMatch(/^Usage: rx-verbs <command>/);
  });

  it('help with an unknown command, an unknown command and an option before the command are usage errors, with a suggestion', async () => {
    expectUsageError(await cli('help', 'frob'), /^rx-verbs: unknown command 'frob'; see 'rx-verbs --help'$/);
    expectUsageError(await cli('demp'), /^rx-verbs: unknown command 'demp' \(did you mean demo\?\); see 'rx-verbs --help'$/);
    expectUsageError(await cli('--jsn'), /^rx-verbs: unknown option '--jsn' \(options go after the command\)/);
  });

  it('no command at all: the usage on stderr, exit 2', async () => {
    const r = await cli();
    expect(r.code).toBe(2);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(/^Usage: rx-verbs <command>/);
  });

  it("an unknown option gets our one-line message (the nearest option suggested), not parseArgs' text", async () => {
    const r = await cli('devices', '--jsn');
    expectUsageError(r, /^rx-verbs devices: unknown option '--jsn' \(did you mean --json\?\); see 'rx-verbs devices --help'$/);
    expect(r.stderr).not.toMatch(/as in|positional argument/);
  });

  it('a stray argument is a usage error (demo 100), not silently ignored', async () => {
    expectUsageError(await cli('demo', '100'), /^rx-verbs demo: unexpected argument '100' \(this command takes options only\)/);
    expectUsageError(await cli('devices', 'soft0'), /^rx-verbs devices: unexpected argument 'soft0'/);
  });

  it.each([[[]], [['-q']], [['--json']]])("demo %j: stdout starts with the result, not a blank line", async (extra) => {
    const r = await cli('demo', '-n', '200', ...extra);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(extra.includes('--json') ? /^\{\n/ : /^\+-/);
  }, scaled(60_000));
});

describe('rx-verbs bench --help', () => {
  it('answers in an installed package (no bench/): exit 0, and says how to run the benchmarks from a clone', async () => {
    // The installed layout: the package's files without bench/. Links keep it cheap;
    // --preserve-symlinks keeps the CLI seeing this folder as its package.
    const pkg = fs.mkdtempSync(path.join(os.tmpdir(), 'rx-verbs-installed-'));
    try {
      for (const entry of ['dist', 'node_modules', 'package.json']) fs.symlinkSync(path.join(root, entry), path.join(pkg, entry));
      const main = path.join(pkg, 'dist', 'cli', 'main.js');
      const help = await node(['--preserve-symlinks', '--preserve-symlinks-main', main, 'bench', '--help']);
      expect(help.stderr).toBe('');
      expect(help.code).toBe(0);
      expect(help.stdout).toMatch(/^Usage: rx-verbs bench/);
      expect(help.stdout).toMatch(/clone of the rx-verbs\s+repository/);
      expect(help.stdout).toContain('npm run bench -- --help');
      // A run that cannot happen here fails (1): it is not a mistake in the command line.
      const run = await node(['--preserve-symlinks', '--preserve-symlinks-main', main, 'bench', '--quick']);
      expect(run.code).toBe(1);
      expect(run.stderr).toMatch(/not part of the installed package/);
    } finally {
      fs.rmSync(pkg, { recursive: true, force: true });
    }
  });

  it('answers in a clone with the suites\' options, without building the native baselines first', async () => {
    const r = await node([MAIN, 'bench', '--help'], scaled(120_000));
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/--quick/);
    expect(r.stdout).toMatch(/--report/);
  }, scaled(150_000));
});
