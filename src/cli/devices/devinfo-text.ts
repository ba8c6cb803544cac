import type { DeviceReport } from './inventory';

/** One device as `ibv_devinfo` prints it (tab-indented, one port block each). */
export function devinfoText(d: DeviceReport): string {
  let text =
    `hca_id:\t${d.name}\n\tprovider:\t\t${d.provider}\n\ttransport:\t\t${d.transport}\n` +
    `\tfw_ver:\t\t\t${d.fwVer}\n\tnode_guid:\t\t${d.nodeGuid}\n` +
    `\tmax_qp:\t\t\t${d.maxQp}\n\tmax_qp_wr:\t\t${d.maxQpWr}\n\tmax_cqe:\t\t${d.maxCqe}\n`;
  for (const p of d.ports) {
    text +=
      `\t\tport:\t${p.port}\n\t\t\tstate:\t\t${p.state}\n\t\t\tmax_mtu:\t${p.maxMtu}\n` +
      `\t\t\tactive_mtu:\t${p.activeMtu}\n\t\t\tport_lid:\t${p.lid}\n\t\t\tlink_layer:\t${p.linkLayer}\n`;
    for (const g of p.gids) text += `\t\t\tGID[${String(g.index).padStart(3)}]:\t${g.gid}\n`;
  }
  return `${text}\n`;
}
