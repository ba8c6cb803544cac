import type { CmAddress, CmEvent, CmIdPort, CmPort, ConnectionResources } from '../core/cm';
import { ThreadBound } from '../core/thread-bound';
import { DeviceRemovedError, ListenerClosedError } from '../core/cm-errors';
import { HotSource } from '../observables/hot-source';
import { attempt } from './connection';
import type { VerbsResources } from './native-port';
import { copyObject, ListenOptions, portFor } from './options';
import { ConnectionRequest } from './request';
import { cmChannelFor, SharedCmChannel } from './router';
import { checkHost, checkPort } from './validate';
import { CmId } from './cm-id';
import { keepCmContext } from './shared-context';
import { optInt } from '../core/validate';

/**
 * A listening CM id (`rdma_listen`) and its hot stream of connection
 * requests. Requests that arrive while nothing subscribes are buffered for
 * a later subscriber or `requests$.tryTake()`, up to 1024: past that a
 * request is rejected at once rather than left to time out on the peer.
 *
 * ```
 * requests$:   --r----r--r----|       close(): unanswered requests rejected
 *              --r----#               DEVICE_REMOVAL: DeviceRemovedError
 * ```
 *
 * Closing the listener rejects the requests nobody answered and completes
 * `requests$`; connections it accepted live on (their ids moved to their
 * own channels, or the shared channel closes with the last of them).
 */
export class Listener<R extends ConnectionResources = VerbsResources> extends ThreadBound {
  /** The hot stream of connection requests: accept or reject each once. */
  readonly requests$: HotSource<ConnectionRequest<R>>;
  private readonly shared: SharedCmChannel;
  private readonly id: CmIdPort;
  private readonly pending = new Set<ConnectionRequest<R>>();
  private isClosed = false;

  /** @internal */
  constructor(port: CmPort<R, object>, host: string, portNum: number, backlog: number) {
    super();
    this.requests$ = new HotSource<ConnectionRequest<R>>(
      { start: () => undefined, stop: () => undefined, pull: () => undefined },
      { highWaterMark: 1024, overflow: 'dropNewest', onDropped: (r) => r.drop(new ListenerClosedError(r.peerAddress ?? undefined)) },
    );
    this.shared = cmChannelFor(port, host);
    try {
      this.id = this.shared.channel.createId();
    } catch (err) {
      this.shared.release();
      throw err;
    }
    try {
      this.id.bind({ host, port: portNum });
      this.id.listen(backlog);
    } catch (err) {
      attempt(() => this.id.close());
      this.shared.release();
      throw err;
    }
    this.shared.on(this.id, (e) => this.handleEvent(e, port, host));
    if (this.id instanceof CmId) keepCmContext(this.id.native);
  }

  /** The address it listens on (the port it got, when asked for 0). */
  get address(): CmAddress | null {
    return this.id.localAddress;
  }

  /** True once closed. */
  get closed(): boolean {
    return this.isClosed;
  }

  /** Lets the process exit while the listener waits for requests. */
  unref(): this {
    this.shared.unref(this.id);
    return this;
  }

  /** Keeps the process alive while listening (the default). */
  ref(): this {
    this.shared.ref(this.id);
    return this;
  }

  /**
   * Stops listening: rejects every request nobody answered (their `accept()`
   * then rejects with {@link ListenerClosedError}), completes `requests$`
   * and destroys the listening id. Accepted connections live on. Idempotent.
   */
  close(): void {
    if (this.isClosed) return;
    this.isClosed = true;
    this.shutdown(new ListenerClosedError());
    this.requests$.complete();
  }

  private shutdown(reason: Error): void {
    for (const request of [...this.pending]) request.drop(reason);
    this.pending.clear();
    this.shared.off(this.id);
    attempt(() => this.id.close());
    attempt(() => this.shared.release());
  }

  private handleEvent(e: CmEvent, port: CmPort<R, object>, host: string): void {
    if (this.isClosed) return;
    if (e.type === 'CONNECT_REQUEST') {
      const request = new ConnectionRequest<R>({
        port,
        id: e.id,
        event: e,
        listenerChannel: this.shared,
        host,
        settled: (r) => this.pending.delete(r),
      });
      this.pending.add(request);
      this.requests$.push(request);
      return;
    }
    if (e.type === 'DEVICE_REMOVAL') {
      this.isClosed = true;
      const error = new DeviceRemovedError();
      this.shutdown(error);
      this.requests$.error(error);
    }
  }
}

/**
 * Listens for connections (`rdma_bind_addr` + `rdma_listen`) on a numeric
 * address and port: the passive side of `rdma_cm`.
 *
 * ## Example
 * ```ts
 * const listener = listen({ host: '127.0.0.1', port: 7471 });
 * listener.requests$.subscribe(async (request) => {
 *   if (request.privateData.length === 0) return request.reject({ privateData: 'say hello' });
 *   const conn = await request.accept({ privateData: 'welcome' });
 *   conn.recvCq.completions$.subscribe(...);
 * });
 * ```
 * @param options `host` (numeric), `port` (0: any free one), `backlog`
 *   (default 128), `provider` or `cm`.
 * @throws TypeError / RangeError for bad options; `CmUnavailableError`
 *   (code `ENODEV`, naming what is missing) where rdma_cm cannot be used
 *   here (`rdmacmStatus()` says so beforehand); an Error with an errno
 *   `code` (`EADDRINUSE`, ...) when the CM refuses.
 */
export function listen<R extends ConnectionResources, O extends object>(options: Omit<ListenOptions, 'cm'> & { cm: CmPort<R, O> }): Listener<R>;
export function listen(options: ListenOptions): Listener<VerbsResources>;
export function listen<R extends ConnectionResources>(options: ListenOptions): Listener<R> {
  const opts = copyObject(options, 'options');
  const host = checkHost(opts.host);
  const port = checkPort(opts.port, true);
  const backlog = optInt(opts.backlog, 'backlog', 1, 65535, 128);
  return new Listener<R>(portFor<R, object>(opts, host), host, port, backlog);
}
