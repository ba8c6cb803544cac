import { binding, type NativeCmChannel } from '../native/binding';
import { CmUnavailableError } from '../core/cm-errors';
import { describe } from '../core/validate';
import type { CmConnParam, CmIdPort, CmOwnQpAttrs, CmPort, CmQpState, ConnectionResources } from '../core/cm';
import type { Context } from '../verbs/context';
import type { Pd } from '../verbs/pd';
import { Cq } from '../verbs/cq';
import { CompletionChannel } from '../verbs/channel';
import type { Qp, QpCapOptions } from '../verbs/qp';
import { CmChannel } from './cm-channel';
import { CmId } from './cm-id';
import { leaseIfShared, releaseCmContext } from './shared-context';
import { Srq } from '../verbs/srq';

/** Which native CM serves an address: librdmacm, or the in-process soft CM of soft devices. */
export type CmProvider = 'rdmacm' | 'soft';

/**
 * The verbs objects of a connection on the native CM. Those the caller
 * brought (`pd`, `sendCq`, `recvCq`, `channel`) are borrowed: closing the
 * connection never closes them.
 */
export interface VerbsResources extends ConnectionResources {
  /** The device context (the CM's own for librdmacm); the PD's when one was brought. */
  readonly context: Context;
  readonly pd: Pd;
  /** The completion channel of the CQs (usable with `events$` and the operators). */
  readonly channel: CompletionChannel | undefined;
  readonly sendCq: Cq;
  readonly recvCq: Cq;
  readonly qp: Qp;
  /** The shared receive queue its QP takes receives from (borrowed), if one was given. */
  readonly srq: Srq | undefined;
}

/** Options of a connection's verbs resources (on `connect` and `accept`). */
export interface VerbsResourceOptions {
  /** A PD to use (borrowed); it must be on the connection's device. Default: a new one. */
  pd?: Pd;
  /** A send CQ to use (borrowed). Default: a new one on `channel`. */
  sendCq?: Cq;
  /** A receive CQ to use (borrowed; may be the send CQ). Default: a new one on `channel` (the send CQ with `sharedCq`). */
  recvCq?: Cq;
  /**
   * Make one CQ for both queues instead of two (default false), as C
   * programs often do: half the CQs to create, arm and destroy per
   * connection, but `recvCq.completions$` then carries the send
   * completions too. Ignored when `sendCq` or `recvCq` is given.
   */
  sharedCq?: boolean;
  /** The completion channel for the CQs made here (borrowed). Default: a new one. */
  channel?: CompletionChannel;
  /** Depth of each CQ made here (default 256). */
  cqe?: number;
  /** QP capacities (default: 64 WRs each way, 1 SGE, no inline). */
  cap?: QpCapOptions;
  /**
   * A shared receive queue the QP takes its receives from (borrowed), as
   * servers with many connections do: post receives to it, not to the QP.
   * It must be on the connection's PD (`pd`, default: the SRQ's own), and
   * on rdma_cm on the CM's context (make it on `openCmContext()`'s).
   */
  srq?: Srq;
}

const QP_STATES: Record<CmQpState, number> = { INIT: 1, RTR: 2, RTS: 3, ERR: 6 };

interface Owned {
  context: boolean;
  pd: boolean;
  channel: boolean;
  sendCq: boolean;
  recvCq: boolean;
}

class NativeResources implements VerbsResources {
  constructor(
    readonly context: Context,
    readonly pd: Pd,
    readonly channel: CompletionChannel | undefined,
    readonly sendCq: Cq,
    readonly recvCq: Cq,
    readonly qp: Qp,
    readonly srq: Srq | undefined,
    readonly owned: Owned,
  ) {}
  /** Set once `releaseResources()` ran: it ends the context's lease once only. */
  released = false;
  get qpNum(): number {
    return this.qp.qpNum;
  }
  get closed(): boolean {
    return this.qp.closed;
  }
}

/**
 * Whether a connection can be made or taken through rdma_cm (librdmacm)
 * here, and if not, why: `reason` names what is missing, librdmacm itself
 * (or the addon was built without its headers) or the kernel's RDMA CM
 * (`/dev/infiniband/rdma_cm`: no `rdma_ucm` module, no RDMA device). Asked
 * anew on each call, the way librdmacm fails (an event channel is opened
 * and closed), so loading the module later is seen. Where it says
 * `available: false`, `listen()` throws and `connect()` rejects with
 * {@link CmUnavailableError} carrying the same reason; addresses of soft
 * devices use the soft CM whatever it says.
 */
export function rdmacmStatus(): { available: boolean; reason?: string } {
  return binding().rdmacmStatus();
}

/** The addresses the soft CM answers on, per soft device (`{ soft0: ['127.0.0.1', '::1'] }`). */
export function softCmAddresses(): Record<string, string[]> {
  return binding().softCmAddresses();
}

/**
 * The CM that serves `host` unless told: the soft CM for addresses a soft
 * device answers on, librdmacm for every other.
 */
export function cmProviderFor(host: string, provider?: CmProvider): CmProvider {
  if (provider !== undefined) {
    if (provider !== 'soft' && provider !== 'rdmacm') throw new TypeError(`provider must be 'soft' or 'rdmacm', got ${String(provider)}`);
    return provider;
  }
  // Asked on every connect and listen: one native lookup, no table built.
  return binding().softCmServes(host) ? 'soft' : 'rdmacm';
}

/**
 * A native CM event channel of `provider`.
 * @throws CmUnavailableError (code `ENODEV`) where rdma_cm cannot be used,
 *   naming what is missing as {@link rdmacmStatus} does; otherwise the
 *   errno Error of the failed `rdma_create_event_channel`.
 */
export function createCmChannel(provider: CmProvider): CmChannel {
  let native: NativeCmChannel;
  try {
    native = binding().createCmChannel(provider);
  } catch (err) {
    // Asked only when opening failed: a channel that opens costs no probe.
    const status = provider === 'rdmacm' ? rdmacmStatus() : undefined;
    if (status?.available === false) throw new CmUnavailableError(status.reason ?? 'librdmacm cannot be used', err);
    throw err;
  }
  return new CmChannel(native);
}

function asCmId(id: CmIdPort): CmId {
  if (!(id instanceof CmId)) throw new TypeError('the native CM drives only its own ids');
  return id;
}

/**
 * The native CM as the port `listen()` / `connect()` drive: channels of one
 * provider, and connection resources made with the verbs classes on the
 * id's device.
 */
export class NativeCmPort implements CmPort<VerbsResources, VerbsResourceOptions> {
  constructor(readonly provider: CmProvider) {}

  createChannel(): CmChannel {
    return createCmChannel(this.provider);
  }

  createResources(id: CmIdPort, options: VerbsResourceOptions): VerbsResources {
    const cmId = asCmId(id);
    const { sendCq: givenSend, recvCq: givenRecv, channel: givenChannel, cqe = 256, cap, sharedCq = false, srq } = options;
    if (typeof sharedCq !== 'boolean') throw new TypeError(`sharedCq must be a boolean, got ${describe(sharedCq)}`);
    if (srq !== undefined && !(srq instanceof Srq)) throw new TypeError(`srq must be an Srq from pd.createSrq(), got ${describe(srq)}`);
    if (srq?.closed) throw Object.assign(new Error('srq is closed'), { code: 'EBADF' });
    if (srq && options.pd !== undefined && options.pd !== srq.pd) throw new TypeError('srq must be on the connection\'s pd (pd.createSrq())');
    const givenPd = options.pd ?? srq?.pd;
    // A connection leases the CM's shared context for its life, also when it
    // borrows a PD made on it: releasing that PD's lease then closes nothing under it.
    const leased = givenPd ? leaseIfShared(givenPd.context) : true;
    const owned: Owned = { context: leased, pd: !givenPd, channel: false, sendCq: !givenSend, recvCq: !givenRecv };
    const context = givenPd ? givenPd.context : cmId.openContext();
    const things: Array<{ close(): void }> = [];
    try {
      const made = <T extends { close(): void }>(thing: T): T => {
        things.push(thing);
        return thing;
      };
      const pd = givenPd ?? made(context.allocPd());
      let channel = givenChannel ?? givenSend?.channel ?? givenRecv?.channel;
      if ((!givenSend || !givenRecv) && !channel) {
        channel = made(context.createCompChannel());
        owned.channel = true;
      }
      const sendCq = givenSend ?? made(context.createCq({ cqe, channel }));
      const recvCq = givenRecv ?? (sharedCq && !givenSend ? sendCq : made(context.createCq({ cqe, channel })));
      const qp = pd.createQp({
        sendCq,
        recvCq,
        srq,
        cap: { maxSendWr: 64, maxRecvWr: srq ? 0 : 64, maxSendSge: 1, maxRecvSge: srq ? 0 : 1, ...cap },
      });
      return new NativeResources(context, pd, channel, sendCq, recvCq, qp, srq, owned);
    } catch (err) {
      // The context is shared: close only what was made here, newest first.
      for (const thing of things.reverse()) {
        try {
          thing.close();
        } catch {
          // Went with something closed before it.
        }
      }
      if (owned.context) releaseCmContext(context);
      throw err;
    }
  }

  modifyQp(id: CmIdPort, resources: VerbsResources, state: CmQpState, own?: CmOwnQpAttrs): void {
    asCmId(id).native.modifyQp(resources.qp.native, QP_STATES[state], own?.rnrRetryCount);
  }

  connectAndEstablish(id: CmIdPort, resources: VerbsResources, param: CmConnParam): void {
    asCmId(id).connect(param, resources.qp);
  }

  failResources(resources: VerbsResources, error: Error): void {
    for (const cq of new Set([resources.sendCq, resources.recvCq])) cq.fail(error);
    resources.channel?.fail(error);
    resources.context.failAsync(error);
  }

  watchResources(resources: VerbsResources, lost: () => Error | undefined): void {
    const r = resources as NativeResources;
    r.qp.onClosed = () => {
      if (r.released) return;
      const error = lost();
      if (!error) return;
      // The connection's own CQs end with it; borrowed ones serve others too.
      const owned = [r.owned.sendCq ? r.sendCq : undefined, r.owned.recvCq ? r.recvCq : undefined];
      for (const cq of new Set(owned)) if (cq && !cq.closed) cq.fail(error);
    };
  }

  releaseResources(resources: VerbsResources): void {
    const r = resources as NativeResources;
    if (r.released) return;
    r.released = true;
    r.qp.close();
    for (const cq of [r.owned.recvCq ? r.recvCq : undefined, r.owned.sendCq ? r.sendCq : undefined]) {
      if (!cq || cq.closed) continue;
      if (cq.unacked > 0) cq.ack(cq.unacked);
      cq.close();
    }
    if (r.owned.channel) r.channel?.close();
    if (r.owned.pd) r.pd.close();
    if (r.owned.context) releaseCmContext(r.context);
  }
}

/**
 * The Context of the device whose CM answers on `host`: the one connections
 * on that device use (for librdmacm, the CM's own `ibv_context`, shared).
 * Make PDs, SRQs, channels and CQs on it for connections to borrow
 * (`accept({ pd, srq, channel })`): on librdmacm a QP must be on the CM's
 * context. Each call is one lease: hand it back once with
 * {@link releaseCmContext} when done (its `close()` is refused). When the
 * last lease ends (connections hold one each), everything still made on
 * the context is closed in the safe order.
 *
 * ```ts
 * const ctx = openCmContext('127.0.0.1');
 * const pd = ctx.allocPd();
 * const srq = pd.createSrq({ maxWr: 1024 });
 * // ... accept({ srq }) on many requests ...
 * releaseCmContext(ctx); // the last lease: closes the SRQ and the PD
 * ```
 */
export function openCmContext(host: string, provider?: CmProvider): Context {
  const channel = createCmChannel(cmProviderFor(host, provider));
  try {
    const id = channel.createId();
    try {
      id.bind({ host, port: 0 });
      return id.openContext();
    } finally {
      id.close();
    }
  } finally {
    channel.close();
  }
}
export { releaseCmContext };
