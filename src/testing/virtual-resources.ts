import type { ConnectionResources, CmQpState } from '../core/cm';
import { VirtualChannel } from './virtual-channel';
import { VirtualCq } from './virtual-cq';

/** A queue pair in virtual time: only its number and state (the CM moves it). */
export class VirtualQp {
  /** `'RESET'` until the CM moves it. */
  state: 'RESET' | CmQpState = 'RESET';
  /** Set at RTS: how often it resends an unacknowledged packet (as the CM derived it). */
  retryCount: number | undefined;
  /** Set at RTS: how often it resends after "receiver not ready" (as the CM derived it, or this side chose). */
  rnrRetryCount: number | undefined;
  private isClosed = false;

  constructor(readonly qpNum: number) {}

  /** True once destroyed. */
  get closed(): boolean {
    return this.isClosed;
  }

  /** Destroys it. Idempotent. */
  close(): void {
    this.isClosed = true;
  }
}

/**
 * The verbs resources of a virtual connection: a {@link VirtualChannel},
 * send and receive {@link VirtualCq}s on it (add completions to them to
 * play traffic) and a {@link VirtualQp}.
 */
export interface VirtualResources extends ConnectionResources {
  readonly channel: VirtualChannel;
  readonly sendCq: VirtualCq;
  readonly recvCq: VirtualCq;
  readonly qp: VirtualQp;
}

/** Options of a virtual connection's resources. */
export interface VirtualResourceOptions {
  /** CQ depth (default 64). */
  cqe?: number;
}

/** @internal */
export function makeVirtualResources(qpNum: number, options: VirtualResourceOptions): VirtualResources {
  const channel = new VirtualChannel();
  const cqe = options.cqe ?? 64;
  const sendCq = new VirtualCq({ channel, cqe, name: `send${qpNum}` });
  const recvCq = new VirtualCq({ channel, cqe, name: `recv${qpNum}` });
  const qp = new VirtualQp(qpNum);
  return {
    channel,
    sendCq,
    recvCq,
    qp,
    qpNum,
    get closed() {
      return qp.closed;
    },
  };
}
