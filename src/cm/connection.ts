import { AsyncSubject, Observable } from 'rxjs';
import { ThreadBound } from '../core/thread-bound';
import type { CmAddress, CmEvent, CmIdPort, CmPort, ConnectionResources } from '../core/cm';
import { DeviceRemovedError, ResourcesClosedError } from '../core/cm-errors';
import type { SharedCmChannel } from './router';
import type { VerbsResources } from './native-port';

/** How a connection ended, as `disconnected$` tells it. */
export interface Disconnect {
  /** `'peer'`: the peer disconnected (or its process died); `'local'`: this side closed. */
  readonly by: 'peer' | 'local';
}

/** @internal What a connection is made of; handed over by `connect()` or `accept()`. */
export interface ConnectionParts<R extends ConnectionResources> {
  port: CmPort<R, never>;
  id: CmIdPort;
  resources: R;
  /** The channels routing this id's events (the listener's one too, until closed). */
  channels: SharedCmChannel[];
  privateData: Uint8Array;
  peerAddress: CmAddress | null;
  localAddress: CmAddress | null;
}

type Field<R, K extends string> = R extends { readonly [key in K]: infer V } ? V : undefined;

/**
 * An established RC connection: its QP (in RTS when handed over), CQs on a
 * completion channel — usable with `completions$` and every operator
 * exactly like hand-made ones — the peer's address and private data, and
 * `disconnected$`.
 *
 * When the peer disconnects, the QP is moved to the error state so that
 * outstanding work requests flush (`WR_FLUSH_ERR`) and their wr_ids come
 * back through the CQs; `disconnected$` emits `{ by: 'peer' }` and
 * completes. Nothing is released until {@link Connection.close}, so those
 * completions can still be read. If the device goes away
 * (`DEVICE_REMOVAL`), `disconnected$` and the CQ streams fail with
 * {@link DeviceRemovedError}; if its QP is closed under it (its PD, or the
 * context of a PD it borrowed, closed by its user), the connection
 * disconnects and they fail with {@link ResourcesClosedError}.
 *
 * Its `context` is the connection manager's shared one, leased: its
 * `close()` is refused (see `releaseCmContext()`).
 *
 * @typeParam R the verbs resources: the native ones ({@link VerbsResources})
 *   or, under `rx-verbs/testing`, virtual ones.
 */
export class Connection<R extends ConnectionResources = VerbsResources> extends ThreadBound {
  /** The verbs resources of the connection. */
  readonly resources: R;
  /** What the peer sent with its connect request or its accept. */
  readonly privateData: Uint8Array;
  /** The peer's address. */
  readonly peerAddress: CmAddress | null;
  /** This side's address. */
  readonly localAddress: CmAddress | null;
  /** Emits once when the connection ends, then completes; late subscribers get it too. */
  readonly disconnected$: Observable<Disconnect>;
  private readonly parts: ConnectionParts<R>;
  private readonly ended = new AsyncSubject<Disconnect>();
  private isClosed = false;
  private isDisconnected = false;

  /** @internal */
  constructor(parts: ConnectionParts<R>) {
    super();
    this.parts = parts;
    this.resources = parts.resources;
    this.privateData = parts.privateData;
    this.peerAddress = parts.peerAddress;
    this.localAddress = parts.localAddress;
    this.disconnected$ = this.ended.asObservable();
    for (const shared of parts.channels) shared.on(parts.id, (e) => this.handleEvent(e));
    parts.port.watchResources?.(parts.resources, () => this.resourcesLost());
  }

  /** The queue pair, in RTS. */
  get qp(): R['qp'] {
    return this.resources.qp;
  }

  /** The send CQ. */
  get sendCq(): R['sendCq'] {
    return this.resources.sendCq;
  }

  /** The receive CQ (the send CQ when they are shared). */
  get recvCq(): R['recvCq'] {
    return this.resources.recvCq;
  }

  /** The device context (native resources). */
  get context(): Field<R, 'context'> {
    return (this.resources as unknown as { context: Field<R, 'context'> }).context;
  }

  /** The protection domain (native resources). */
  get pd(): Field<R, 'pd'> {
    return (this.resources as unknown as { pd: Field<R, 'pd'> }).pd;
  }

  /** The completion channel of the CQs. */
  get channel(): Field<R, 'channel'> {
    return (this.resources as unknown as { channel: Field<R, 'channel'> }).channel;
  }

  /** True once closed. */
  get closed(): boolean {
    return this.isClosed;
  }

  /** True once the connection ended (either side), closed or not. */
  get disconnected(): boolean {
    return this.isDisconnected;
  }

  /** Lets the process exit while only this connection's CM channel is watched. */
  unref(): this {
    for (const shared of this.parts.channels) shared.unref(this.parts.id);
    return this;
  }

  /** Keeps the process alive while the connection is open (the default). */
  ref(): this {
    for (const shared of this.parts.channels) shared.ref(this.parts.id);
    return this;
  }

  /**
   * Disconnects (`rdma_disconnect`), moves the QP to the error state, then
   * releases what the connection made in the safe order (QP, CQs, channel,
   * PD, context; never what was borrowed) and its CM id. Never blocks.
   * Idempotent.
   */
  close(): void {
    if (this.isClosed) return;
    this.isClosed = true;
    const { id, port, resources, channels } = this.parts;
    if (!this.isDisconnected) {
      attempt(() => id.disconnect());
      attempt(() => port.modifyQp(id, resources, 'ERR'));
    }
    this.end({ by: 'local' });
    let failure: unknown;
    try {
      port.releaseResources(resources);
    } catch (err) {
      failure = err;
    }
    attempt(() => id.close());
    for (const shared of channels) {
      shared.off(id);
      attempt(() => shared.release());
    }
    if (failure !== undefined) throw failure;
  }

  /** @internal */
  handleEvent(e: CmEvent): void {
    switch (e.type) {
      case 'DISCONNECTED':
      case 'TIMEWAIT_EXIT':
        if (this.isDisconnected || this.isClosed) return;
        // Flush what is outstanding so the application gets its wr_ids back;
        // librdmacm expects the passive disconnect to be answered too.
        attempt(() => this.parts.port.modifyQp(this.parts.id, this.resources, 'ERR'));
        attempt(() => this.parts.id.disconnect());
        this.end({ by: 'peer' });
        return;
      case 'DEVICE_REMOVAL': {
        if (this.isClosed) return;
        const error = new DeviceRemovedError(this.peerAddress ?? undefined);
        this.isDisconnected = true;
        attempt(() => this.parts.port.failResources(this.resources, error));
        this.ended.error(error);
        return;
      }
      default:
        return; // ESTABLISHED after establish(), and the like
    }
  }

  /**
   * Its QP was closed under it (its PD, or the context of a PD it
   * borrowed): disconnect so the peer hears of it, fail the streams typed.
   * The rest is released by `close()`, as after any end.
   */
  private resourcesLost(): Error | undefined {
    if (this.isClosed || this.isDisconnected) return undefined;
    const error = new ResourcesClosedError(this.peerAddress ?? undefined);
    this.isDisconnected = true;
    attempt(() => this.parts.id.disconnect());
    this.ended.error(error);
    return error;
  }

  private end(how: Disconnect): void {
    if (this.isDisconnected) return;
    this.isDisconnected = true;
    this.ended.next(how);
    this.ended.complete();
  }
}

/** Runs a teardown step whose failure must not stop the ones after it. */
export function attempt(step: () => void): void {
  try {
    step();
  } catch {
    // The object is already gone or in the state we wanted.
  }
}
