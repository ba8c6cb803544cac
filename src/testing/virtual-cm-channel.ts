import { HotSource } from '../observables/hot-source';
import { RingQueue } from '../observables/ring-queue';
import type { CmChannelPort, CmEvent } from '../core/cm';
import type { VirtualCmId } from './virtual-cm-id';

/**
 * A CM event channel in virtual time, with the native channel's rules:
 * `events$` reads (delivers) only while something subscribes; until then
 * events stay pending in the channel. Made by {@link VirtualCm}.
 */
export class VirtualCmChannel implements CmChannelPort {
  readonly provider = 'virtual';
  /** The channel's events, as the native `cmChannel.events$`. */
  readonly events$: HotSource<CmEvent>;
  private readonly unread = new RingQueue<CmEvent>();
  private reading = false;
  private delivering = false;
  private isClosed = false;
  private refd = true;
  /** @internal Events raised here are dropped (a scripted peer's channel nobody reads). */
  discard = false;
  /** Ids whose events go here (closing fails with EBUSY while any is open). */
  readonly ids = new Set<VirtualCmId>();

  /** @internal */
  constructor(private readonly makeId: (channel: VirtualCmChannel) => VirtualCmId) {
    this.events$ = new HotSource<CmEvent>({
      start: () => {
        this.reading = true;
        this.deliver();
      },
      stop: () => {
        this.reading = false;
      },
      pull: () => this.unread.shift(),
    });
  }

  /** True once closed. */
  get closed(): boolean {
    return this.isClosed;
  }

  /** Whether the channel would keep a process alive while watched. */
  get hasRef(): boolean {
    return this.refd;
  }

  /** Events raised and not yet read. */
  get pendingEvents(): number {
    return this.unread.length;
  }

  /** `rdma_create_id` on this channel. */
  createId(): VirtualCmId {
    if (this.isClosed) throw Object.assign(new Error('createId on a closed CM channel'), { code: 'EBADF' });
    return this.makeId(this);
  }

  ref(): void {
    this.refd = true;
  }

  unref(): void {
    this.refd = false;
  }

  /** Fails with EBUSY while ids use it; completes `events$`. Idempotent. */
  close(): void {
    if (this.isClosed) return;
    const open = [...this.ids].filter((id) => !id.closed).length;
    if (open > 0) throw Object.assign(new Error(`cannot close a CM channel that ${open} id(s) still use`), { code: 'EBUSY' });
    this.isClosed = true;
    this.events$.complete();
  }

  /** @internal Queues an event (what the CM does). */
  raise(event: CmEvent): void {
    if (this.isClosed || this.discard) return;
    this.unread.push(event);
    if (this.reading) this.deliver();
  }

  private deliver(): void {
    if (this.delivering) return;
    this.delivering = true;
    try {
      while (this.reading && this.unread.length > 0) this.events$.push(this.unread.shift()!);
    } finally {
      this.delivering = false;
    }
  }
}
