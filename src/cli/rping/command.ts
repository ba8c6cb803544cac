import type { Command } from '../shared/command';
import { helpText, parseOptions } from '../shared/options';
import { OPTIONS, resolveOptions, SUMMARY, USAGE } from './options';
import { runClient, runLoopback, runServer } from './run';

/** `rx-verbs rping`: rdma-core's rping over rdma_cm, interoperable with it, on the rx-verbs pipeline. */
export const rping: Command = {
  summary: "RDMA READ/WRITE ping over rdma_cm, compatible with rdma-core's rping (-s, -c or --loopback)",
  async run(argv) {
    const parsed = parseOptions(argv, OPTIONS);
    if (parsed.values.help) {
      process.stdout.write(helpText(USAGE, SUMMARY, OPTIONS));
      return 0;
    }
    const opts = resolveOptions(parsed);
    const print = (line: string) => process.stdout.write(`${line}\n`);
    if (opts.role === 'loopback') await runLoopback(opts, print);
    else if (opts.role === 'client') await runClient(opts, print);
    else await runServer(opts, print);
    return 0;
  },
};
