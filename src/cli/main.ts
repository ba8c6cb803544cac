#!/usr/bin/env node
/**
 * The `rx-verbs` command: devices, demo, pingpong, rping, rdma-server, rdma-client, bench.
 * @packageDocumentation
 */
import { UsageError } from './shared/usage-error';
import { COMMANDS } from './commands';

const USAGE = `Usage: rx-verbs <command> [options]

Commands:
${Object.entries(COMMANDS)
  .map(([name, c]) => `  ${name.padEnd(12)} ${c.summary}`)
  .join('\n')}

Run 'rx-verbs <command> --help' for a command's options.
`;

async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (!name || name === '--help' || name === '-h' || name === 'help') {
    process.stdout.write(USAGE);
    return name ? 0 : 2;
  }
  const command = COMMANDS[name];
  if (!command) throw new UsageError(`unknown command '${name}' (try: ${Object.keys(COMMANDS).join(', ')})`);
  return command.run(rest);
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    const e = err as Error & { code?: string };
    process.stderr.write(`rx-verbs: ${e.message}\n`);
    if (process.env.RX_VERBS_DEBUG) process.stderr.write(`${e.stack}\n`);
    process.exitCode = e instanceof UsageError ? 2 : 1;
  },
);
