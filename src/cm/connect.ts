import { asyncScheduler, Observable, SchedulerLike, throwError } from 'rxjs';
import { CM_PRIVATE_DATA_MAX } from '../core/cm';
import type { CmEvent, CmIdPort, CmPort, ConnectionLayer, ConnectionResources } from '../core/cm';
import { ConnectTimeoutError } from '../core/cm-errors';
import { DEFAULT_RETRY_COUNT, DEFAULT_RNR_RETRY_COUNT } from '../core/constants';
import { attempt, Connection } from './connection';
import { setupFailure } from './failures';
import type { VerbsResourceOptions, VerbsResources } from './native-port';
import { after, ConnectionOptions, copyObject, portFor, schedulerOf } from './options';
import { cmChannelFor, SharedCmChannel } from './router';
import { checkHost, checkLayer, checkMs, checkPort, checkPrivateData } from './validate';
import { checkFunction, optInt } from '../core/validate';

/**
 * What address and route resolution each get from the CM, whatever
 * `timeoutMs` is: a shorter `timeoutMs` ends the attempt first (ours), a
 * longer one sees the CM's address or route error after this long.
 */
const RESOLVE_MS = 2000;

/**
 * Connects to a listener (`rdma_cm` active side) as a cold Observable:
 * each subscription makes one attempt — resolve the address and the route,
 * make the PD, CQs (on a completion channel) and QP on the CM's device,
 * connect, move the QP to RTS, establish — then emits the
 * {@link Connection} and completes. Unsubscribing before that cancels the
 * attempt and releases everything it made, so `retry`, `timeout` and
 * `switchMap` compose reconnect and failover logic.
 *
 * ```
 * connect$({ host, port }):  ----(c|)       established
 *                            ----#          ConnectionRejectedError, UnreachableError,
 *                                           AddressResolutionError, ConnectTimeoutError, ...
 * ```
 *
 * ## Example
 * ```ts
 * const conn = await firstValueFrom(
 *   connect$({ host: '192.0.2.1', port: 7471 }).pipe(retry({ count: 5, delay: (_e, n) => timer(100 * 2 ** n) })),
 * );
 * ```
 * @param options `host` and `port` of the listener; `privateData` (at most
 *   56 bytes); `timeoutMs` (default 10000); `retryCount` (default 6) and
 *   `rnrRetryCount` (default 7); `provider` or `cm`; the verbs
 *   options (`pd`, `sendCq`, `recvCq`, `sharedCq`, `channel`, `cqe`, `cap`).
 * Bad options (TypeError / RangeError) error the Observable when it is
 * subscribed, before anything is sent; it never throws.
 * @see {@link connect}
 */
export function connect$<R extends ConnectionResources, O extends object>(
  options: Omit<ConnectionOptions, 'cm' | 'prepare' | keyof VerbsResourceOptions> & O & { cm: CmPort<R, O>; prepare?: (resources: R) => void },
): Observable<Connection<R>>;
export function connect$(options: ConnectionOptions): Observable<Connection<VerbsResources>>;
export function connect$<R extends ConnectionResources>(options: ConnectionOptions): Observable<Connection<R>> {
  let plan: AttemptPlan<R>;
  try {
    plan = planAttempt<R>(options);
  } catch (err) {
    // Bad options: every subscription errors with the TypeError / RangeError
    // at once, before anything is sent (Observable APIs never throw: docs/ARCHITECTURE.md, Errors and bad input).
    return throwError(() => err);
  }
  return new Observable<Connection<R>>((subscriber) => {
    const attempt = new ConnectAttempt<R>(
      plan,
      (connection) => {
        subscriber.next(connection);
        subscriber.complete();
      },
      (error) => subscriber.error(error),
    );
    attempt.start();
    return () => attempt.cancel();
  });
}

/** What one attempt needs, checked once per call (every option read once). */
interface AttemptPlan<R extends ConnectionResources> {
  readonly opts: ConnectionOptions;
  readonly cm: CmPort<R, object>;
  readonly host: string;
  readonly peer: { host: string; port: number };
  readonly source: { host: string; port: number } | undefined;
  readonly privateData: Uint8Array;
  readonly timeoutMs: number;
  readonly retryCount: number;
  readonly rnrRetryCount: number;
  readonly scheduler: SchedulerLike | undefined;
  readonly prepare: ((resources: R) => void) | undefined;
  readonly layer: ConnectionLayer<R> | undefined;
}

function planAttempt<R extends ConnectionResources>(options: ConnectionOptions): AttemptPlan<R> {
  const opts = copyObject(options, 'options');
  const host = checkHost(opts.host);
  const port = checkPort(opts.port, false);
  const layer = checkLayer<R>(opts.layer);
  return {
    opts,
    host,
    peer: { host, port },
    privateData: checkPrivateData(opts.privateData, 'connect', layer),
    timeoutMs: checkMs(opts.timeoutMs, 'timeoutMs', 10_000),
    retryCount: optInt(opts.retryCount, 'retryCount', 0, 7, DEFAULT_RETRY_COUNT),
    rnrRetryCount: optInt(opts.rnrRetryCount, 'rnrRetryCount', 0, 7, DEFAULT_RNR_RETRY_COUNT),
    // A CM port other than the native one (the testing kit's) runs in RxJS
    // time, virtual inside TestScheduler.run: so does its timeout.
    scheduler: schedulerOf(opts.scheduler) ?? (opts.cm === undefined ? undefined : asyncScheduler),
    prepare: checkFunction(opts.prepare, 'prepare') as ((r: R) => void) | undefined,
    layer,
    cm: portFor<R, object>(opts, host),
    source: opts.localHost === undefined ? undefined : { host: checkHost(opts.localHost, 'localHost'), port: 0 },
  };
}

/**
 * One connection attempt as a plain state machine driven by the id's CM
 * events: no Observable or Promise machinery per step, because set-up time
 * is a measured figure and every step of it runs once per connection.
 * Settles exactly once: `done` with the established connection, or `failed`
 * with everything released; `cancel()` before that releases everything
 * and settles nothing.
 */
class ConnectAttempt<R extends ConnectionResources> {
  private shared: SharedCmChannel | undefined;
  private id: CmIdPort | undefined;
  private resources: R | undefined;
  private settled = false;
  private layerPrepared = false;
  private timer: { unsubscribe(): void } | undefined;

  constructor(
    private readonly plan: AttemptPlan<R>,
    private readonly done: (connection: Connection<R>) => void,
    private readonly failed: (error: unknown) => void,
  ) {}

  start(): void {
    const { plan } = this;
    try {
      this.shared = cmChannelFor(plan.cm, plan.host);
      const id = (this.id = this.shared.channel.createId());
      this.shared.on(id, (e) => this.onEvent(e));
      id.resolveAddr(plan.peer, RESOLVE_MS, plan.source, RESOLVE_MS);
    } catch (err) {
      this.fail(err);
      return;
    }
    // Armed once the request is under way (its answer comes on a later
    // turn of the loop at the earliest), so the kernel starts sooner.
    if (!this.settled) this.timer = after(plan.scheduler, plan.timeoutMs, () => this.fail(new ConnectTimeoutError(plan.timeoutMs, plan.peer)));
  }

  cancel(): void {
    if (this.settled) return;
    this.settled = true;
    this.cleanup();
  }

  private cleanup(): void {
    const { plan, id, shared, resources } = this;
    this.timer?.unsubscribe();
    if (this.layerPrepared) attempt(() => plan.layer!.abandon());
    if (resources) attempt(() => plan.cm.releaseResources(resources));
    if (id) {
      shared?.off(id);
      attempt(() => id.close());
    }
    if (shared) attempt(() => shared.release());
  }

  private fail(error: unknown): void {
    if (this.settled) return;
    this.settled = true;
    this.cleanup();
    this.failed(error);
  }

  private established(e: CmEvent): void {
    const id = this.id!;
    let privateData = e.privateData;
    if (this.plan.layer) {
      try {
        privateData = this.plan.layer.established(e.privateData);
      } catch (err) {
        // The peer answered, but not in a way the layer can work with: hang up.
        attempt(() => id.disconnect());
        this.fail(err);
        return;
      }
    }
    this.settled = true;
    this.timer?.unsubscribe();
    this.done(
      new Connection<R>({
        port: this.plan.cm,
        id,
        resources: this.resources!,
        channels: [this.shared!],
        privateData,
        peerAddress: id.peerAddress ?? this.plan.peer,
        localAddress: id.localAddress,
      }),
    );
  }

  private onEvent(e: CmEvent): void {
    if (this.settled) return;
    const { plan } = this;
    const id = this.id!;
    try {
      switch (e.type) {
        case 'ADDR_RESOLVED':
          // Only from a CM that does not resolve the route itself, or when
          // it could not ask for it (the error says why).
          if (e.error) throw e.error;
          id.resolveRoute(RESOLVE_MS);
          return;
        case 'ROUTE_RESOLVED': {
          const resources = (this.resources = plan.cm.createResources(id, plan.opts));
          plan.cm.modifyQp(id, resources, 'INIT');
          if (plan.layer) {
            this.layerPrepared = true;
            plan.layer.prepare(resources);
          }
          plan.prepare?.(resources);
          const privateData = plan.layer ? plan.layer.privateData(plan.privateData, CM_PRIVATE_DATA_MAX.connect) : plan.privateData;
          const param = { qpNum: resources.qpNum, privateData, retryCount: plan.retryCount, rnrRetryCount: plan.rnrRetryCount };
          // A port that answers the response itself saves a trip through JS on the critical path.
          if (plan.cm.connectAndEstablish) plan.cm.connectAndEstablish(id, resources, param);
          else id.connect(param);
          return;
        }
        case 'CONNECT_RESPONSE': {
          if (e.error) throw e.error;
          if (e.established) {
            this.established(e);
            return;
          }
          // INIT again: before the request went out the CM knew no
          // responder resources, so the first INIT granted no remote
          // access (rdma_init_qp_attr); now it does (rping -q does the same).
          const resources = this.resources!;
          plan.cm.modifyQp(id, resources, 'INIT');
          plan.cm.modifyQp(id, resources, 'RTR');
          plan.cm.modifyQp(id, resources, 'RTS', { rnrRetryCount: plan.rnrRetryCount });
          id.establish();
          this.established(e);
          return;
        }
        case 'ESTABLISHED':
          // A CM that establishes on its own (the QP already moved) ends set-up here.
          if (this.resources?.qp) this.established(e);
          return;
        default: {
          const error = setupFailure(e, plan.peer);
          if (error) this.fail((e.type === 'REJECTED' && plan.layer?.rejected?.(error)) || error);
        }
      }
    } catch (err) {
      this.fail(err);
    }
  }
}

/**
 * Connects to a listener: {@link connect$} as a Promise.
 *
 * ## Example
 * ```ts
 * const conn = await connect({ host: '127.0.0.1', port: 7471, privateData: 'hello' });
 * conn.qp.postSend(...);
 * conn.close();
 * ```
 * @returns the established connection; rejects with a typed error
 *   (`ConnectionRejectedError`, `UnreachableError`, `AddressResolutionError`,
 *   `RouteResolutionError`, `ConnectError`, `ConnectTimeoutError`,
 *   `DeviceRemovedError`) with everything released; rejects with
 *   TypeError / RangeError for bad options (never throws).
 */
export function connect<R extends ConnectionResources, O extends object>(
  options: Omit<ConnectionOptions, 'cm' | 'prepare' | keyof VerbsResourceOptions> & O & { cm: CmPort<R, O>; prepare?: (resources: R) => void },
): Promise<Connection<R>>;
export function connect(options: ConnectionOptions): Promise<Connection<VerbsResources>>;
export function connect(options: ConnectionOptions): Promise<Connection<ConnectionResources>> {
  // Bad options reject (a Promise API never throws: docs/ARCHITECTURE.md, Errors and bad input), before anything is sent.
  return new Promise((resolve, reject) => new ConnectAttempt(planAttempt<ConnectionResources>(options), resolve, reject).start());
}
