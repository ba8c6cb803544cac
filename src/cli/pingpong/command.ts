import { defaultDeviceName } from '../../index';
import type { Command } from '../shared/command';
import { helpText, parseOptions } from '../shared/options';
import { UsageError } from '../shared/usage-error';
import { OPERANDS, OPTIONS, resolveOptions, SUMMARY, USAGE } from './options';
import { runClient, runLoopback, runServer } from './run';

/** `rx-verbs pingpong`: rdma-core's ibv_rc_pingpong (or srq/ud), interoperable with it, on the rx-verbs pipeline. */
export const pingpong: Command = {
  summary: 'RC ping-pong, compatible with ibv_rc_pingpong, or with ibv_srq_pingpong (--srq) or ibv_ud_pingpong (--ud) (server, client or --loopback)',
  async run(argv) {
    const parsed = parseOptions(argv, OPTIONS, OPERANDS);
    if (parsed.values.help) {
      process.stdout.write(helpText(USAGE, SUMMARY, OPTIONS));
      return 0;
    }
    const opts = resolveOptions(parsed, defaultDeviceName);
    if (opts.tcpPort === 0 && opts.server !== undefined) throw new UsageError('the client needs the server\'s TCP port (-p)');
    const print = (line: string) => process.stdout.write(`${line}\n`);
    if (opts.loopback) await runLoopback(opts, print);
    else if (opts.server !== undefined) await runClient(opts, print);
    else await runServer(opts, print);
    return 0;
  },
};
