import { defaultDeviceName } from '../../index';
import type { Command } from '../shared/command';
import { helpText, parseOptions } from '../shared/options';
import { formatTable } from '../shared/table';
import { UsageError } from '../shared/usage-error';
import { runDemo } from './run';
import { summaryRows } from './summary';

const OPTIONS = {
  device: { short: 'd', type: 'string', help: 'device (default: RX_VERBS_DEVICE, a real device, else soft0)' },
  messages: { short: 'n', type: 'number', help: 'messages to move', default: 20000 },
  'max-size': { type: 'number', help: 'largest message in bytes', default: 65536 },
  depth: { type: 'number', help: 'messages in flight (CQ depth)', default: 128 },
  'gid-index': { short: 'g', type: 'number', help: 'local GID index (RoCE devices)' },
  quiet: { short: 'q', type: 'boolean', help: 'no live progress' },
  json: { type: 'boolean', help: 'print the summary as JSON' },
  help: { short: 'h', type: 'boolean', help: 'show this help' },
} as const;

/**
 * `rx-verbs demo` (what `npm start` runs): streams messages between two
 * connected RC QPs — SENDs and RDMA WRITEs with immediate data, random sizes
 * — through a real pipeline (channel -> ackEvents -> rearm -> drainCq ->
 * steer -> batchCompletions), gated by credits, verifying every byte.
 */
export const demo: Command = {
  summary: 'stream data between two RC QPs through an rx-verbs pipeline and verify it',
  async run(argv) {
    const { values } = parseOptions(argv, OPTIONS);
    if (values.help) {
      process.stdout.write(helpText('rx-verbs demo [options]', this.summary, OPTIONS));
      return 0;
    }
    const messages = positiveInt(values.messages, 'messages');
    const summary = await runDemo({
      device: values.device ?? defaultDeviceName(),
      messages,
      maxSize: positiveInt(values['max-size'], 'max-size'),
      depth: positiveInt(values.depth, 'depth'),
      gidIndex: values['gid-index'],
      progress: !values.quiet && !values.json,
    });
    if (values.json) process.stdout.write(`${JSON.stringify(summary, null, 2)}\n`);
    // The progress line is on stderr and ends itself: the result starts at the first line.
    else process.stdout.write(`${formatTable(summaryRows(summary))}\n`);
    return summary.corrupt === 0 && summary.errors === 0 && summary.verified === messages ? 0 : 1;
  },
};

function positiveInt(v: number, name: string): number {
  if (!Number.isInteger(v) || v < 1) throw new UsageError(`--${name} must be a positive integer`);
  return v;
}

