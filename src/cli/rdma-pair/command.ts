import type { Command } from '../shared/command';
import { helpText, parseOptions } from '../shared/options';
import { CLIENT_OPTIONS, resolveOptions, SERVER_OPTIONS, SUMMARY } from './options';
import { runPair, type Print } from './run';

/**
 * Runs one role, framed by the start and end lines rdma_server and
 * rdma_client print (`rdma_server: start`, `rdma_server: end 0`), so the
 * two tools' output compares line for line. A failure prints the end line
 * with -1, as theirs do, then the error.
 */
async function runRole(role: 'server' | 'client', argv: string[]): Promise<number> {
  const defs = role === 'server' ? SERVER_OPTIONS : CLIENT_OPTIONS;
  const parsed = parseOptions(argv, defs);
  if (parsed.values.help) {
    process.stdout.write(helpText(`rx-verbs rdma-${role} [-s address] [-p port] [options]`, SUMMARY[role], defs));
    return 0;
  }
  const opts = resolveOptions(role, parsed);
  const print: Print = (line) => process.stdout.write(`${line}\n`);
  await runPair(opts, print);
  return 0;
}

/** `rx-verbs rdma-server`: rdma-core's rdma_server, interoperable with rdma_client. */
export const rdmaServer: Command = {
  summary: "one 16-byte exchange over rdma_cm, server side, compatible with rdma-core's rdma_server",
  run: (argv) => runRole('server', argv),
};

/** `rx-verbs rdma-client`: rdma-core's rdma_client, interoperable with rdma_server. */
export const rdmaClient: Command = {
  summary: "one 16-byte exchange over rdma_cm, client side, compatible with rdma-core's rdma_client",
  run: (argv) => runRole('client', argv),
};
