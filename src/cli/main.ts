#!/usr/bin/env node
/**
 * The `rx-verbs` command: devices, demo, pingpong, rping, rdma-server, rdma-client, bench.
 *
 * Exit status, as Node's and POSIX tools have it: 0 done, 1 failed, 2 a
 * mistake in the command line (a usage error: one line on stderr naming
 * the help to read). Help and the version go to stdout and exit 0.
 * @packageDocumentation
 */
import * as fs from 'fs';
import * as path from 'path';
import { COMMANDS } from './commands';
import { closest } from './shared/suggest';
import { UsageError } from './shared/usage-error';

const USAGE = `Usage: rx-verbs <command> [options]
       rx-verbs help <command>
       rx-verbs --version

Commands:
${Object.entries(COMMANDS)
  .map(([name, c]) => `  ${name.padEnd(12)} ${c.summary}`)
  .join('\n')}

Run 'rx-verbs help <command>' (or 'rx-verbs <command> --help') for a command's options.
`;

/** A usage error of `command` (undefined: of `rx-verbs` itself), worded for stderr. */
class CommandLineError extends Error {
  constructor(readonly command: string | undefined, cause: UsageError) {
    super(cause.message);
  }
}

/** The package's version, from the package.json beside dist/ (or src/). */
function version(): string {
  const file = path.join(__dirname, '..', '..', 'package.json');
  return (JSON.parse(fs.readFileSync(file, 'utf8')) as { version: string }).version;
}

function command(name: string) {
  const found = Object.hasOwn(COMMANDS, name) ? COMMANDS[name] : undefined;
  if (found) return found;
  const near = closest(name, Object.keys(COMMANDS));
  throw new UsageError(`unknown command '${name}'${near ? ` (did you mean ${near}?)` : ''}`);
}

async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined) {
    process.stderr.write(USAGE);
    return 2;
  }
  if (name === '--help' || name === '-h' || (name === 'help' && rest.length === 0)) {
    process.stdout.write(USAGE);
    return 0;
  }
  if (name === '--version' || name === '-v') {
    process.stdout.write(`${version()}\n`);
    return 0;
  }
  if (name === 'help') {
    if (rest.length > 1) throw new UsageError(`help takes one command, got '${rest.join(' ')}'`);
    const [topic] = rest as [string];
    return runCommand(topic, ['--help']);
  }
  if (name.startsWith('-')) throw new UsageError(`unknown option '${name}' (options go after the command)`);
  return runCommand(name, rest);
}

async function runCommand(name: string, argv: string[]): Promise<number> {
  const found = command(name);
  try {
    return await found.run(argv);
  } catch (err) {
    throw err instanceof UsageError ? new CommandLineError(name, err) : err;
  }
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    if (err instanceof UsageError || err instanceof CommandLineError) {
      const where = err instanceof CommandLineError ? `rx-verbs ${err.command}` : 'rx-verbs';
      process.stderr.write(`${where}: ${err.message}; see '${where} --help'\n`);
      process.exitCode = 2;
      return;
    }
    const e = err as Error;
    process.stderr.write(`rx-verbs: ${e.message}\n`);
    if (process.env.RX_VERBS_DEBUG) process.stderr.write(`${e.stack}\n`);
    process.exitCode = 1;
  },
);
