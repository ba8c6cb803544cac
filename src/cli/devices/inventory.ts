/** What `rx-verbs devices` gathers about each device: the facts ibv_devinfo shows. */
import { listDevices, MTU_BYTES, openDevice, type DeviceInfo } from '../../index';

/** Names of `ibv_port_attr.link_layer`, by value. */
const LINK_LAYERS = ['Unspecified', 'InfiniBand', 'Ethernet'];

/** One port of a device, with its non-zero GIDs. */
export interface PortReport {
  /** Port number, from 1. */
  port: number;
  /** `ibv_port_state` name (`'ACTIVE'`, ...). */
  state: string;
  /** Active path MTU in bytes. */
  activeMtu: number;
  /** Largest path MTU in bytes. */
  maxMtu: number;
  /** The port's LID (0 on RoCE). */
  lid: number;
  /** `'InfiniBand'`, `'Ethernet'` or `'Unspecified'`. */
  linkLayer: string;
  /** The GID table's entries that are set. */
  gids: { index: number; gid: string }[];
}

/** One device: what `listDevices()` says of it, its limits and its ports. */
export interface DeviceReport extends DeviceInfo {
  /** Firmware version string. */
  fwVer: string;
  /** Most QPs the device supports. */
  maxQp: number;
  /** Largest CQ depth. */
  maxCqe: number;
  /** Largest queue depth of a QP. */
  maxQpWr: number;
  /** Ports 1..physPortCnt. */
  ports: PortReport[];
}

/**
 * Opens each device (only `wanted`, when given) and queries it.
 * @throws Error when `wanted` names no device.
 */
export function inventory(wanted?: string): DeviceReport[] {
  const list = listDevices().filter((d) => !wanted || d.name === wanted);
  if (wanted && list.length === 0) throw new Error(`no device named '${wanted}'`);
  return list.map((d) => {
    const ctx = openDevice(d.name);
    try {
      const attr = ctx.queryDevice();
      const ports: PortReport[] = [];
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
}
