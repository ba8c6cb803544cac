import type { ConnectionResources, CmQpState } from '../core/cm';
import { VirtualChannel } from './virtual-channel';
import { VirtualCq } from './virtual-cq';

/** A queue pair in virtual time: only its number and state (the CM moves it). */
export class VirtualQp {
  /** `'RESET'` until the CM moves it. */
  state: 'RESET' | CmQpState = 'RESET';
  /** The SRQ it takes receives from, if it was made with one. */
  srq: VirtualSrq | undefined;
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
 * A shared receive queue in virtual time, for `accept({ srq })` /
 * `connect({ srq })` on the virtual CM: connections made with it share it
 * (`resources.srq`, `resources.qp.srq`), as on the native CMs. It counts the
 * receives posted to it; play their completions on the connections' CQs.
 */
export class VirtualSrq {
  /** Receives posted and not yet taken by {@link VirtualSrq.take}. */
  posted = 0;
  private isClosed = false;

  /** @param maxWr how many receives it holds (default 64). */
  constructor(readonly maxWr = 64) {}

  /** True once destroyed. */
  get closed(): boolean {
    return this.isClosed;
  }

  /** Posts `n` receives (1 by default). @throws RangeError past `maxWr`; an Error (EBADF) once closed. */
  postRecv(n = 1): void {
    if (this.isClosed) throw Object.assign(new Error('postRecv on a destroyed SRQ'), { code: 'EBADF' });
    if (this.posted + n > this.maxWr) throw new RangeError(`the SRQ holds ${this.maxWr} receives; ${this.posted} are posted`);
    this.posted += n;
  }

  /** A message consumed one posted receive: false when none was posted (the sender would see RNR). */
  take(): boolean {
    if (this.posted === 0) return false;
    this.posted--;
    return true;
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
  /** The shared receive queue its QP takes receives from (borrowed), if one was given. */
  readonly srq: VirtualSrq | undefined;
}

/** Options of a virtual connection's resources. */
export interface VirtualResourceOptions {
  /** CQ depth (default 64). */
  cqe?: number;
  /** A shared receive queue for the QP (borrowed: closing the connection leaves it open). */
  srq?: VirtualSrq;
}

/** @internal */
export function makeVirtualResources(qpNum: number, options: VirtualResourceOptions): VirtualResources {
  const channel = new VirtualChannel();
  const cqe = options.cqe ?? 64;
  const sendCq = new VirtualCq({ channel, cqe, name: `send${qpNum}` });
  const recvCq = new VirtualCq({ channel, cqe, name: `recv${qpNum}` });
  const srq = options.srq;
  if (srq !== undefined && !(srq instanceof VirtualSrq)) throw new TypeError('srq must be a VirtualSrq from rx-verbs/testing');
  if (srq?.closed) throw Object.assign(new Error('srq is closed'), { code: 'EBADF' });
  const qp = new VirtualQp(qpNum);
  qp.srq = srq;
  return {
    channel,
    sendCq,
    recvCq,
    qp,
    srq,
    qpNum,
    get closed() {
      return qp.closed;
    },
  };
}
