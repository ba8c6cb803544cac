import type { SchedulerLike } from 'rxjs';
import type { DEFAULT_RETRY_COUNT, DEFAULT_RNR_RETRY_COUNT } from '../core/constants';
import type { CmPort, ConnectionLayer, ConnectionResources } from '../core/cm';
import { describe } from '../core/validate';
import { cmProviderFor, CmProvider, NativeCmPort, VerbsResourceOptions, VerbsResources } from './native-port';

/** Options every connection call shares. */
export interface CmCommonOptions {
  /** Which native CM (default: the soft CM for addresses a soft device answers on, librdmacm otherwise). */
  provider?: CmProvider;
  /** A CM to use instead of the native one, e.g. the testing kit's virtual CM. */
  cm?: CmPort<ConnectionResources, never>;
}

/** Options of {@link connect} and {@link connect$}. */
export interface ConnectionOptions extends CmCommonOptions, VerbsResourceOptions {
  /** The peer's numeric IPv4 or IPv6 address. */
  host: string;
  /** The port it listens on. */
  port: number;
  /** The local numeric address to connect from (default: the one the route to `host` picks). */
  localHost?: string;
  /** Sent with the connect request: at most 56 bytes (a string is sent as UTF-8). */
  privateData?: Uint8Array | string;
  /**
   * Ours: the whole set-up must finish within this many ms (default 10000),
   * else {@link ConnectTimeoutError} with everything released. The kernel
   * alone would retry for about a minute.
   */
  timeoutMs?: number;
  /**
   * How often the QP resends a packet the peer did not acknowledge before
   * its work request fails with `RETRY_EXC_ERR` (0-7, default
   * {@link DEFAULT_RETRY_COUNT}, which says why not 7). Sent with the
   * request: the peer's QP gets the same count (the CM gives the passive
   * side the requester's).
   */
  retryCount?: number;
  /**
   * How often the QP resends after the peer answered "receiver not ready"
   * (0-7, default {@link DEFAULT_RNR_RETRY_COUNT}: for ever). This side's
   * QP gets it, and it is sent with the request, so the peer's QP gets it
   * too unless its `accept({ rnrRetryCount })` says otherwise. With 0 an
   * empty receive queue at the peer fails the SEND with `RNR_RETRY_EXC_ERR`
   * at once: what a protocol that keeps the peer stocked wants.
   */
  rnrRetryCount?: number;
  /**
   * The scheduler the timeout runs on. Default: `asyncScheduler` with a
   * `cm` port (so the testing kit's virtual CM times out in virtual time),
   * a plain timer with the native CM.
   */
  scheduler?: SchedulerLike;
  /**
   * A protocol that rides on the connection and takes part in its set-up
   * (the message layer's `messageLayer()`; see `connectMessages()`).
   */
  layer?: ConnectionLayer<VerbsResources>;
  /**
   * Called with the connection's resources once its QP takes receives (in
   * INIT), before the connect request goes out: post the first receives
   * here, so the peer's first SEND never finds the receive queue empty. A
   * throw fails the attempt.
   */
  prepare?: (resources: VerbsResources) => void;
}

/** Options of {@link listen}. */
export interface ListenOptions extends CmCommonOptions {
  /** The numeric address to listen on (`'0.0.0.0'` / `'::'`: every RDMA device's, librdmacm only). */
  host: string;
  /** The port; 0 picks a free one (see `listener.address`). */
  port: number;
  /** Requests the CM queues before the application answers (default 128). */
  backlog?: number;
}

/** Options of `request.accept()`. */
export interface AcceptOptions<R extends ConnectionResources = VerbsResources> extends Omit<VerbsResourceOptions, 'srq'> {
  /**
   * A shared receive queue the connection's QP takes its receives from
   * (borrowed): an `Srq` on the native CMs (see {@link VerbsResourceOptions.srq}),
   * a `VirtualSrq` on the testing kit's virtual CM.
   */
  srq?: Exclude<R['srq'], undefined>;
  /**
   * Called with the connection's resources once its QP is in RTS, before
   * the accept goes out: post the first receives here, so the peer's first
   * SEND never finds the receive queue empty. A throw fails the accept.
   */
  prepare?: (resources: R) => void;
  /** Sent with the accept: at most 196 bytes. */
  privateData?: Uint8Array | string;
  /** A protocol that rides on the connection (see {@link ConnectionOptions.layer}). */
  layer?: ConnectionLayer<R>;
  /**
   * This side's QP's RNR retry count (0-7), also sent with the accept.
   * Default: the one the request carried (the peer's `rnrRetryCount`), so
   * both QPs of a connection retry alike.
   */
  rnrRetryCount?: number;
  /**
   * Keep the new connection off any channel closing the listener would
   * close (default true). The native CMs already route the listener and
   * every connection of the process through one channel that outlives
   * them all, so nothing moves; a CM port whose listener has a channel of
   * its own (the testing kit's virtual CM) moves the id to a new one
   * (`rdma_migrate_id`). With false it stays on the listener's channel,
   * which then closes with the last of them.
   */
  ownChannel?: boolean;
}

/** The CM port a call uses: the one given, or the native CM that serves `host`. */
export function portFor<R extends ConnectionResources, O extends object>(options: CmCommonOptions, host: string): CmPort<R, O> {
  if (options.cm !== undefined) {
    const cm = options.cm as unknown as CmPort<R, O>;
    if (typeof cm !== 'object' || cm === null || typeof cm.createChannel !== 'function') {
      throw new TypeError(`cm must be a CM port (e.g. virtualCm() from rx-verbs/testing), got ${describe(cm)}`);
    }
    return cm;
  }
  return new NativeCmPort(cmProviderFor(host, options.provider)) as unknown as CmPort<R, O>;
}

/** The scheduler option, checked; undefined for the default. */
export function schedulerOf(value: unknown): SchedulerLike | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'object' || value === null || typeof (value as SchedulerLike).schedule !== 'function') {
    throw new TypeError(`scheduler must be an RxJS SchedulerLike, got ${describe(value)}`);
  }
  return value as SchedulerLike;
}

/**
 * Runs `work` after `ms` on `scheduler`, or, by default, on a plain timer:
 * what `asyncScheduler` would do, without the interval and action objects
 * it makes (a connection set-up arms and cancels one each time).
 */
export function after(scheduler: SchedulerLike | undefined, ms: number, work: () => void): { unsubscribe(): void } {
  if (scheduler) return scheduler.schedule(work, ms);
  const timer = setTimeout(work, ms);
  return { unsubscribe: () => clearTimeout(timer) };
}

/** The options object, shallow-copied so each field is read once. */
export function copyObject<T extends object>(value: T, what: string): T {
  if (typeof value !== 'object' || value === null) throw new TypeError(`${what} must be an object, got ${describe(value)}`);
  return { ...value };
}
