import type { CmEventOwner, NativeCmChannel, NativeCmEvent, NativeCmId } from '../native/binding';
import { ThreadBound } from '../core/thread-bound';
import type { HotSource, HotSourceOptions } from '../observables/hot-source';
import { ownedSource } from '../observables/owned-source';
import { CmChannelPort, CmEvent, cmEventName } from '../core/cm';
import { CmId, cmIdOwners } from './cm-id';

/**
 * A CM event channel (`rdma_event_channel`, or the soft CM's): the file
 * descriptor connection events arrive on, watched by the addon's one
 * poller. The addon copies and acks each event before JS sees it, so
 * nothing done here (or not done) can leave an event unacked.
 * {@link CmChannel.events$} is the raw hot stream; `listen()` and
 * `connect()` are built on it.
 */
export class CmChannel extends ThreadBound implements CmChannelPort, CmEventOwner {
  /** @internal */
  readonly native: NativeCmChannel;
  /** `'rdmacm'` or `'soft'`. */
  readonly provider: string;
  private source: HotSource<CmEvent<CmId>> | undefined;

  /** @internal */
  constructor(native: NativeCmChannel) {
    super();
    this.native = native;
    this.provider = native.provider;
    native.setOwner(this);
  }

  /** True once closed. */
  get closed(): boolean {
    return this.native.closed;
  }

  /** The channel's file descriptor (-1 once closed). */
  get fd(): number {
    return this.native.fd;
  }

  /** The hot stream of this channel's events, with default options. */
  get events$(): HotSource<CmEvent<CmId>> {
    return this.events();
  }

  /**
   * The hot, multicast stream of CM events of the ids made on (or migrated
   * to) this channel. It watches the fd only while something subscribes;
   * until then events stay pending in the channel. Options apply on first
   * use only. Completes when the channel closes (born completed when first
   * used after that).
   */
  events(options?: HotSourceOptions<CmEvent<CmId>>): HotSource<CmEvent<CmId>> {
    if (this.source) return this.source;
    this.source = ownedSource<CmEvent<CmId>>(
      { closed: this.native.closed },
      {
        start: () => {
          if (!this.native.closed) this.native.watch(true);
        },
        stop: () => {
          if (!this.native.closed) this.native.watch(false);
        },
        pull: () => this.readOne(),
      },
      options,
    );
    return this.source;
  }

  /** `rdma_create_id` on this channel (TCP port space). */
  createId(): CmId {
    return new CmId(this.native.createId(), this);
  }

  /** Lets the watcher keep the process alive while it watches (the default). */
  ref(): void {
    if (!this.native.closed) this.native.ref();
  }

  /** Lets the process exit even while the channel is watched. */
  unref(): void {
    if (!this.native.closed) this.native.unref();
  }

  /** Destroys the channel. Fails with `EBUSY` while ids still use it. Completes `events$`. Idempotent. */
  close(): void {
    if (this.native.closed) return;
    this.native.close();
    this.source?.complete();
  }

  /** @internal One call per wakeup (from the addon). */
  handleCmEvents(events: NativeCmEvent[]): void {
    const source = this.events();
    for (const e of events) source.push(this.toEvent(e));
  }

  private readOne(): CmEvent<CmId> | undefined {
    if (this.native.closed) return undefined;
    const [first, ...rest] = this.native.readEvents().map((e) => this.toEvent(e));
    for (const e of rest) this.events().push(e);
    return first;
  }

  private toEvent(e: NativeCmEvent): CmEvent<CmId> {
    return {
      type: cmEventName(e.type),
      status: e.status,
      id: this.wrap(e.id),
      listener: e.listener ? this.wrap(e.listener) : undefined,
      privateData: new Uint8Array(e.privateData),
      qpNum: e.qpNum,
      responderResources: e.responderResources,
      initiatorDepth: e.initiatorDepth,
      retryCount: e.retryCount,
      rnrRetryCount: e.rnrRetryCount,
      established: e.established,
      error: e.error,
    };
  }

  /** The wrapper of a native id; a new one for the id of a connection request. */
  private wrap(native: NativeCmId): CmId {
    return cmIdOwners.get(native) ?? new CmId(native, this);
  }
}
