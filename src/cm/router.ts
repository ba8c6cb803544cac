import type { Subscription } from 'rxjs';
import type { CmChannelPort, CmEvent, CmIdPort } from '../core/cm';

/** Receives the events of one id. */
export type CmEventHandler = (event: CmEvent) => void;

/**
 * One consumer of a CM channel's events that hands each to the handler of
 * the id it concerns (a connection request to its listener's). One
 * subscription per channel, never one per id: a hot source replays what it
 * buffered to its first subscriber only, so per-id filters would drop each
 * other's events. The channel is closed when its last user releases it.
 */
export class SharedCmChannel {
  private readonly handlers = new Map<CmIdPort, CmEventHandler>();
  private subscription: Subscription | undefined;
  private users = 0;
  private unrefd = false;

  constructor(readonly channel: CmChannelPort) {}

  /** Routes the events of `id` to `handler` (replacing any before). */
  on(id: CmIdPort, handler: CmEventHandler): void {
    this.handlers.set(id, handler);
    this.subscription ??= this.channel.events$.subscribe({
      next: (e) => this.route(e),
      // A channel that fails (its device went) fails every id on it.
      error: (err: unknown) => this.routeFailure(err),
    });
  }

  /** Stops routing the events of `id`. */
  off(id: CmIdPort): void {
    this.handlers.delete(id);
  }

  /** One more user (an id) of the channel. */
  acquire(): this {
    this.users++;
    return this;
  }

  /** One user fewer; the last one closes the channel. */
  release(): void {
    if (this.users > 0 && --this.users === 0) {
      this.subscription?.unsubscribe();
      this.subscription = undefined;
      this.handlers.clear();
      this.channel.close();
    }
  }

  /** Lets the process exit while this channel is watched. */
  unref(): void {
    this.unrefd = true;
    this.channel.unref();
  }

  /** Keeps the process alive while watched. */
  ref(): void {
    if (!this.unrefd) return;
    this.unrefd = false;
    this.channel.ref();
  }

  private route(e: CmEvent): void {
    const key = e.type === 'CONNECT_REQUEST' && e.listener ? e.listener : e.id;
    this.handlers.get(key)?.(e);
  }

  private routeFailure(err: unknown): void {
    this.subscription = undefined;
    for (const [id, handler] of [...this.handlers]) {
      handler({
        type: 'DEVICE_REMOVAL',
        status: 0,
        id,
        privateData: new Uint8Array(0),
        qpNum: 0,
        responderResources: 0,
        initiatorDepth: 0,
        cause: err,
      } as CmEvent);
    }
  }
}
