import { binding, type NativeCmChannel } from '../native/binding';
import { CmUnavailableError } from '../core/cm-errors';
import { describe } from '../verbs/validate';
import type { CmConnParam, CmIdPort, CmPort, CmQpState, ConnectionResources } from '../core/cm';
import type { Context } from '../verbs/context';
import type { Pd } from '../verbs/pd';
import { Cq } from '../verbs/cq';
import { CompletionChannel } from '../verbs/channel';
import type { Qp, QpCapOptions } from '../verbs/qp';
import { CmChannel } from './cm-channel';
import { CmId } from './cm-id';
import { releaseCmContext } from './shared-context';

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
    readonly owned: Owned,
  ) {}
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
    const { pd: givenPd, sendCq: givenSend, recvCq: givenRecv, channel: givenChannel, cqe = 256, cap, sharedCq = false } = options;
    if (typeof sharedCq !== 'boolean') throw new TypeError(`sharedCq must be a boolean, got ${describe(sharedCq)}`);
    const owned: Owned = { context: !givenPd, pd: !givenPd, channel: false, sendCq: !givenSend, recvCq: !givenRecv };
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
        cap: { maxSendWr: 64, maxRecvWr: 64, maxSendSge: 1, maxRecvSge: 1, ...cap },
      });
      return new NativeResources(context, pd, channel, sendCq, recvCq, qp, owned);
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

  modifyQp(id: CmIdPort, resources: VerbsResources, state: CmQpState): void {
    asCmId(id).native.modifyQp(resources.qp.native, QP_STATES[state]);
  }

  connectAndEstablish(id: CmIdPort, resources: VerbsResources, param: CmConnParam): void {
    asCmId(id).connect(param, resources.qp);
  }

  failResources(resources: VerbsResources, error: Error): void {
    for (const cq of new Set([resources.sendCq, resources.recvCq])) cq.fail(error);
    resources.channel?.fail(error);
    resources.context.failAsync(error);
  }

  releaseResources(resources: VerbsResources): void {
    const r = resources as NativeResources;
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
 * Make PDs, channels and CQs on it for connections to borrow (`accept({ pd,
 * channel })`): on librdmacm a QP must be on the CM's context. The caller
 * is one user of it: hand it back with {@link releaseCmContext}, never
 * `close()`, when done.
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
