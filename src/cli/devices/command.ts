import type { Command } from '../shared/command';
import { helpText, parseOptions } from '../shared/options';
import { devinfoText } from './devinfo-text';
import { inventory } from './inventory';

const OPTIONS = {
  device: { short: 'd', type: 'string', help: 'show only this device' },
  json: { type: 'boolean', help: 'print JSON' },
  help: { short: 'h', type: 'boolean', help: 'show this help' },
} as const;

/** `rx-verbs devices`: what ibv_devinfo shows, for soft and real devices. */
export const devices: Command = {
  summary: 'list RDMA devices, their ports and GID tables (like ibv_devinfo)',
  async run(argv) {
    const { values } = parseOptions(argv, OPTIONS);
    if (values.help) {
      process.stdout.write(helpText('rx-verbs devices [options]', this.summary, OPTIONS));
      return 0;
    }
    const report = inventory(values.device);
    if (values.json) process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
    else for (const d of report) process.stdout.write(devinfoText(d));
    return 0;
  },
};
