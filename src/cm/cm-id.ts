import type { NativeCmId } from '../native/binding';
import { ThreadBound } from '../core/thread-bound';
import type { CmAddress, CmConnParam, CmIdPort } from '../core/cm';
import type { Context } from '../verbs/context';
import type { Qp } from '../verbs/qp';
import { cmContextFor } from './shared-context';
import type { CmChannel } from './cm-channel';

/**
 * The wrapper of each native id, so events (which name native ids) reach
 * it. Weak: an entry goes with its native id.
 * @internal
 */
export const cmIdOwners = new WeakMap<NativeCmId, CmId>();

/**
 * An `rdma_cm_id` of the native CM (librdmacm or the soft CM). Never has a
 * QP attached: the connection's QP is made on {@link CmId.openContext}'s
 * device and moved with `native.modifyQp`.
 */
export class CmId extends ThreadBound implements CmIdPort<CmChannel> {
  /** @internal */
  readonly native: NativeCmId;
  private current: CmChannel;

  /** @internal */
  constructor(native: NativeCmId, channel: CmChannel) {
    super();
    this.native = native;
    this.current = channel;
    cmIdOwners.set(native, this);
  }

  /** The channel its events arrive on. */
  get channel(): CmChannel {
    return this.current;
  }

  /** True once closed. */
  get closed(): boolean {
    return this.native.closed;
  }

  /** The local address, once bound or resolved. */
  get localAddress(): CmAddress | null {
    return this.native.localAddress;
  }

  /** The peer's address, once resolved or connected. */
  get peerAddress(): CmAddress | null {
    return this.native.peerAddress;
  }

  /** `rdma_bind_addr`. */
  bind(addr: CmAddress): void {
    this.native.bind({ host: addr.host, port: addr.port });
  }

  /** `rdma_listen`. */
  listen(backlog: number): void {
    this.native.listen(backlog);
  }

  /** `rdma_resolve_addr`; with `routeTimeoutMs`, `rdma_resolve_route` right when the address is resolved. */
  resolveAddr(dst: CmAddress, timeoutMs: number, src?: CmAddress, routeTimeoutMs?: number): void {
    const from = src ? { host: src.host, port: src.port } : null;
    this.native.resolveAddr({ host: dst.host, port: dst.port }, timeoutMs, from, routeTimeoutMs);
  }

  /** `rdma_resolve_route`. */
  resolveRoute(timeoutMs: number): void {
    this.native.resolveRoute(timeoutMs);
  }

  /**
   * The context of the id's device (librdmacm: the CM's own `ibv_context`):
   * one Context per device, shared by every connection on it and kept open
   * between them (see `shared-context.ts`). Hand it back with
   * `releaseCmContext()`, never `close()`.
   */
  openContext(): Context {
    return cmContextFor(this.native);
  }

  /** `rdma_connect`; with `qp`, CONNECT_RESPONSE moves it to RTS and establishes before it is handed over. */
  connect(param: CmConnParam, qp?: Qp): void {
    if (qp) this.native.connect({ ...param }, qp.native);
    else this.native.connect({ ...param });
  }

  /** `rdma_accept`. */
  accept(param: CmConnParam): void {
    this.native.accept({ ...param });
  }

  /** `rdma_reject`. */
  reject(privateData?: Uint8Array): void {
    this.native.reject(privateData);
  }

  /** `rdma_establish`. */
  establish(): void {
    this.native.establish();
  }

  /** `rdma_disconnect`. */
  disconnect(): void {
    this.native.disconnect();
  }

  /**
   * `rdma_migrate_id`: later events go to `channel`, a channel of the same
   * provider (the caller's type says a CmChannel; a JavaScript caller may
   * pass anything, hence the provider check).
   */
  migrate(channel: CmChannel): void {
    if ((channel as Partial<CmChannel> | null | undefined)?.provider !== this.current.provider) {
      throw new TypeError(`an id can only migrate to a CM channel of its own provider (${this.current.provider})`);
    }
    this.native.migrate(channel.native);
    this.current = channel;
  }

  /** `rdma_destroy_id`; never blocks (events are acked when read). Idempotent. */
  close(): void {
    if (!this.native.closed) this.native.close();
  }
}
