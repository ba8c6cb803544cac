import { listDevices, openDevice, MTU_BYTES } from '../../verbs';
import { helpText, OptionSpec, parseArgs } from '../args';
import type { Command } from './index';

const SPECS: OptionSpec[] = [
  { name: 'device', short: 'd', type: 'string', help: 'show only this device' },
  { name: 'json', type: 'flag', help: 'print JSON' },
  { name: 'help', short: 'h', type: 'flag', help: 'show this help' },
];

const LINK_LAYERS = ['Unspecified', 'InfiniBand', 'Ethernet'];

/** `rx-verbs devices`: what ibv_devinfo shows, for soft and real devices. */
export const devices: Command = {
  summary: 'list RDMA devices, their ports and GID tables (like ibv_devinfo)',
  async run(argv) {
    const { options } = parseArgs(argv, SPECS);
    if (options.help) {
      process.stdout.write(helpText('rx-verbs devices [options]', this.summary, SPECS));
      return 0;
    }
    const wanted = options.device as string | undefined;
    const list = listDevices().filter((d) => !wanted || d.name === wanted);
    if (wanted && list.length === 0) throw new Error(`no device named '${wanted}'`);
    const report = list.map((d) => {
      const ctx = openDevice(d.name);
      try {
        const attr = ctx.queryDevice();
        const ports = [];
        for (let p = 1; p <= attr.physPortCnt; p++) {
          const port = ctx.queryPort(p);
          const gids: { index: number; gid: string }[] = [];
          for (let i = 0; i < port.gidTblLen; i++) {
            const gid = ctx.queryGid(p, i);
            if (!/^[0:]+$/.test(gid)) gids.push({ index: i, gid });
          }
          ports.push({
            port: p,
            state: port.stateName,
            activeMtu: MTU_BYTES[port.activeMtu] ?? 0,
            maxMtu: MTU_BYTES[port.maxMtu] ?? 0,
            lid: port.lid,
            linkLayer: LINK_LAYERS[port.linkLayer] ?? 'Unknown',
            gids,
          });
        }
        return { ...d, fwVer: attr.fwVer, maxQp: attr.maxQp, maxCqe: attr.maxCqe, maxQpWr: attr.maxQpWr, ports };
      } finally {
        ctx.close();
      }
    });
    if (options.json) {
      process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
      return 0;
    }
    for (const d of report) {
      process.stdout.write(
        `hca_id:\t${d.name}\n\tprovider:\t\t${d.provider}\n\ttransport:\t\t${d.transport}\n` +
          `\tfw_ver:\t\t\t${d.fwVer}\n\tnode_guid:\t\t${d.nodeGuid}\n` +
          `\tmax_qp:\t\t\t${d.maxQp}\n\tmax_qp_wr:\t\t${d.maxQpWr}\n\tmax_cqe:\t\t${d.maxCqe}\n`,
      );
      for (const p of d.ports) {
        process.stdout.write(
          `\t\tport:\t${p.port}\n\t\t\tstate:\t\t${p.state}\n\t\t\tmax_mtu:\t${p.maxMtu}\n` +
            `\t\t\tactive_mtu:\t${p.activeMtu}\n\t\t\tport_lid:\t${p.lid}\n\t\t\tlink_layer:\t${p.linkLayer}\n`,
        );
        for (const g of p.gids) process.stdout.write(`\t\t\tGID[${String(g.index).padStart(3)}]:\t${g.gid}\n`);
      }
      process.stdout.write('\n');
    }
    return 0;
  },
};
