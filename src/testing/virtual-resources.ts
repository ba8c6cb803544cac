import type { SchedulerLike } from 'rxjs';
import type { ConnectionResources } from '../core/cm';
import { checkInt } from '../core/validate';
import { VirtualChannel } from './virtual-channel';
import { VirtualCq } from './virtual-cq';
import { VirtualAddressSpace, VirtualPd } from './virtual-memory';
import { VirtualQp, VirtualQpCap } from './virtual-qp';
import { VirtualSrq } from './virtual-srq';

/**
 * The verbs resources of a virtual connection, shaped like the native ones:
 * a {@link VirtualChannel}, send and receive {@link VirtualCq}s on it, a
 * {@link VirtualPd} and a {@link VirtualQp} that moves bytes to and from the
 * QP at the other end in virtual time (or add completions to the CQs
 * yourself to play traffic).
 */
export interface VirtualResources extends ConnectionResources {
  readonly channel: VirtualChannel;
  readonly sendCq: VirtualCq;
  readonly recvCq: VirtualCq;
  readonly pd: VirtualPd;
  readonly qp: VirtualQp;
  /** The shared receive queue its QP takes receives from (borrowed), if one was given. */
  readonly srq: VirtualSrq | undefined;
}

/** Options of a virtual connection's resources. */
export interface VirtualResourceOptions {
  /** CQ depth (default 64). */
  cqe?: number;
  /** QP capacities (default: 64 work requests each way, 1 scatter/gather entry, no inline data). */
  cap?: Partial<VirtualQpCap>;
  /** A shared receive queue for the QP (borrowed: closing the connection leaves it open). */
  srq?: VirtualSrq;
}

/** @internal What the virtual CM gives a connection's data path. */
export interface VirtualFabricLink {
  readonly scheduler: SchedulerLike;
  readonly latency: number;
  readonly space: VirtualAddressSpace;
  /** The QP at the other end of `qp`'s connection, once there is one. */
  peerOf(qp: VirtualQp): VirtualQp | undefined;
}

const CAP_DEFAULTS: VirtualQpCap = { maxSendWr: 64, maxRecvWr: 64, maxSendSge: 1, maxRecvSge: 1, maxInlineData: 0 };

function capOf(cap: Partial<VirtualQpCap> | undefined): VirtualQpCap {
  if (cap === undefined) return CAP_DEFAULTS;
  if (typeof cap !== 'object' || cap === null) throw new TypeError('cap must be an object like { maxSendWr, maxRecvWr }');
  const out: Record<string, number> = { ...CAP_DEFAULTS };
  for (const [key, value] of Object.entries(cap)) {
    if (!(key in CAP_DEFAULTS)) throw new TypeError(`cap.${key} is not a QP capacity (expected one of ${Object.keys(CAP_DEFAULTS).join(', ')})`);
    if (value === undefined) continue;
    out[key] = checkInt(value, `cap.${key}`, key === 'maxInlineData' ? 0 : 1, 65536);
  }
  return out as unknown as VirtualQpCap;
}

/** @internal */
export function makeVirtualResources(qpNum: number, options: VirtualResourceOptions, fabric: VirtualFabricLink): VirtualResources {
  const cap = capOf(options.cap);
  const srq = options.srq;
  if (srq !== undefined && !(srq instanceof VirtualSrq)) throw new TypeError('srq must be a VirtualSrq from rx-verbs/testing');
  if (srq?.closed) throw Object.assign(new Error('srq is closed'), { code: 'EBADF' });
  const channel = new VirtualChannel();
  const cqe = options.cqe ?? 64;
  const sendCq = new VirtualCq({ channel, cqe, name: `send${qpNum}` });
  const recvCq = new VirtualCq({ channel, cqe, name: `recv${qpNum}` });
  const pd = new VirtualPd(fabric.space);
  const qp: VirtualQp = new VirtualQp(
    qpNum,
    { scheduler: fabric.scheduler, latency: fabric.latency, sendCq, recvCq, pd, peer: () => fabric.peerOf(qp) },
    cap,
    srq,
  );
  return {
    channel,
    sendCq,
    recvCq,
    pd,
    qp,
    srq,
    qpNum,
    get closed() {
      return qp.closed;
    },
  };
}
