import type { Command } from '../shared/command';
import { CM_OPTION, cmProvider } from '../shared/cm';
import { helpText, parseOptions } from '../shared/options';
import { UsageError } from '../shared/usage-error';
import { runNc } from './run';

const OPTIONS = {
  listen: { short: 'l', type: 'boolean', help: 'listen for one connection instead of connecting' },
  port: { short: 'p', type: 'number', help: 'with -l: the port to listen on (0: any free one, printed with -v)', with: ['listen'] },
  source: { short: 's', type: 'string', help: 'with -l: the address to listen on (default 0.0.0.0)', with: ['listen'] },
  verbose: { short: 'v', type: 'boolean', help: 'say on stderr what happens' },
  cm: CM_OPTION,
  help: { short: 'h', type: 'boolean', help: 'show this help' },
} as const;

const USAGE = 'rx-verbs nc [-v] HOST PORT | rx-verbs nc -l -p PORT [-s ADDR] [-v]';

/** `rx-verbs nc`: netcat over an RDMA byte stream. */
export const nc: Command = {
  summary: 'netcat over RDMA: stdin to the peer, the peer to stdout',
  async run(argv) {
    const { values, positionals } = parseOptions(argv, OPTIONS, { operands: ['HOST', 'PORT'] });
    if (values.help) {
      process.stdout.write(helpText(USAGE, `${this.summary}. The end of stdin ends this side's stream; the session ends once the peer's has ended too. Exit status 0 after a clean end, 1 when the connection failed or broke.`, OPTIONS));
      return 0;
    }
    const provider = cmProvider(values.cm);
    const io = { input: process.stdin, output: process.stdout, report: (line: string) => process.stderr.write(`rx-verbs nc: ${line}\n`) };
    if (values.listen) {
      if (positionals.length > 0) throw new UsageError('with -l, give the port with -p and the address with -s');
      if (values.port === undefined) throw new UsageError('-l needs -p PORT');
      return runNc({ mode: 'listen', host: values.source ?? '0.0.0.0', port: values.port, provider, verbose: values.verbose }, io);
    }
    if (positionals.length !== 2) throw new UsageError('connect with HOST PORT (or listen with -l -p PORT)');
    const port = Number(positionals[1]);
    if (!Number.isInteger(port) || port < 1 || port > 65535) throw new UsageError(`PORT must be 1..65535, got '${positionals[1]}'`);
    return runNc({ mode: 'connect', host: positionals[0], port, provider, verbose: values.verbose }, io);
  },
};
