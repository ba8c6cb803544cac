import { asyncScheduler, firstValueFrom, Observable } from 'rxjs';
import type { CmEvent, CmIdPort, CmPort, ConnectionResources } from '../core/cm';
import { ConnectTimeoutError } from '../core/cm-errors';
import { attempt, Connection } from './connection';
import { setupFailure } from './failures';
import type { VerbsResourceOptions, VerbsResources } from './native-port';
import { after, ConnectionOptions, copyObject, portFor, schedulerOf } from './options';
import { cmChannelFor, SharedCmChannel } from './router';
import { checkFunction, checkHost, checkInt, checkMs, checkPort, checkPrivateData } from './validate';

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
 * @throws TypeError / RangeError (synchronously) for bad options, before anything is sent.
 * @see {@link connect}
 */
export function connect$<R extends ConnectionResources, O extends object>(
  options: Omit<ConnectionOptions, 'cm' | 'prepare' | keyof VerbsResourceOptions> & O & { cm: CmPort<R, O>; prepare?: (resources: R) => void },
): Observable<Connection<R>>;
export function connect$(options: ConnectionOptions): Observable<Connection<VerbsResources>>;
export function connect$<R extends ConnectionResources>(options: ConnectionOptions): Observable<Connection<R>> {
  const opts = copyObject(options, 'options');
  const host = checkHost(opts.host);
  const port = checkPort(opts.port, false);
  const privateData = checkPrivateData(opts.privateData, 'connect');
  const timeoutMs = checkMs(opts.timeoutMs, 'timeoutMs', 10_000);
  const retryCount = checkInt(opts.retryCount, 'retryCount', 0, 7, 6);
  const rnrRetryCount = checkInt(opts.rnrRetryCount, 'rnrRetryCount', 0, 7, 7);
  // A CM port other than the native one (the testing kit's) runs in RxJS
  // time, virtual inside TestScheduler.run: so does its timeout.
  const scheduler = schedulerOf(opts.scheduler) ?? (opts.cm === undefined ? undefined : asyncScheduler);
  const prepare = checkFunction(opts.prepare, 'prepare') as ((r: R) => void) | undefined;
  const cm = portFor<R, object>(opts, host);
  const peer = { host, port };
  const source = opts.localHost === undefined ? undefined : { host: checkHost(opts.localHost, 'localHost'), port: 0 };

  return new Observable<Connection<R>>((subscriber) => {
    let shared: SharedCmChannel | undefined;
    let id: CmIdPort | undefined;
    let resources: R | undefined;
    let settled = false;

    const cleanup = () => {
      timer.unsubscribe();
      if (resources) attempt(() => cm.releaseResources(resources!));
      if (id) {
        shared?.off(id);
        attempt(() => id!.close());
      }
      if (shared) attempt(() => shared!.release());
    };
    const fail = (error: unknown) => {
      if (settled) return;
      settled = true;
      cleanup();
      subscriber.error(error);
    };
    const established = (e: CmEvent) => {
      settled = true;
      timer.unsubscribe();
      const connection = new Connection<R>({
        port: cm,
        id: id!,
        resources: resources!,
        channels: [shared!],
        privateData: e.privateData,
        peerAddress: id!.peerAddress ?? peer,
        localAddress: id!.localAddress,
      });
      subscriber.next(connection);
      subscriber.complete();
    };
    const onEvent = (e: CmEvent) => {
      if (settled) return;
      try {
        switch (e.type) {
          case 'ADDR_RESOLVED':
            id!.resolveRoute(RESOLVE_MS);
            return;
          case 'ROUTE_RESOLVED':
            resources = cm.createResources(id!, opts);
            cm.modifyQp(id!, resources, 'INIT');
            prepare?.(resources);
            id!.connect({ qpNum: resources.qpNum, privateData, retryCount, rnrRetryCount });
            return;
          case 'CONNECT_RESPONSE':
            // INIT again: before the request went out the CM knew no
            // responder resources, so the first INIT granted no remote
            // access (rdma_init_qp_attr); now it does (rping -q does the same).
            cm.modifyQp(id!, resources!, 'INIT');
            cm.modifyQp(id!, resources!, 'RTR');
            cm.modifyQp(id!, resources!, 'RTS');
            id!.establish();
            established(e);
            return;
          case 'ESTABLISHED':
            // A CM that establishes on its own (the QP already moved) ends set-up here.
            if (resources?.qp) established(e);
            return;
          default: {
            const error = setupFailure(e, peer);
            if (error) fail(error);
          }
        }
      } catch (err) {
        fail(err);
      }
    };

    const timer = after(scheduler, timeoutMs, () => fail(new ConnectTimeoutError(timeoutMs, peer)));
    try {
      shared = cmChannelFor(cm, host);
      id = shared.channel.createId();
      shared.on(id, onEvent);
      id.resolveAddr(peer, RESOLVE_MS, source);
    } catch (err) {
      fail(err);
    }
    return () => {
      if (!settled) {
        settled = true;
        cleanup();
      }
    };
  });
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
 *   `DeviceRemovedError`) with everything released.
 * @throws TypeError / RangeError (synchronously) for bad options.
 */
export function connect<R extends ConnectionResources, O extends object>(
  options: Omit<ConnectionOptions, 'cm' | 'prepare' | keyof VerbsResourceOptions> & O & { cm: CmPort<R, O>; prepare?: (resources: R) => void },
): Promise<Connection<R>>;
export function connect(options: ConnectionOptions): Promise<Connection<VerbsResources>>;
export function connect(options: ConnectionOptions): Promise<Connection<ConnectionResources>> {
  return firstValueFrom(connect$(options) as Observable<Connection<ConnectionResources>>);
}
