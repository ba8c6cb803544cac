import type { Subscription } from 'rxjs';
import type { CmChannelPort, CmEvent, CmIdPort, CmPort } from '../core/cm';
import { NativeCmPort } from './native-port';
import { forgetCmContexts } from './shared-context';

/** Receives the events of one id. */
export type CmEventHandler = (event: CmEvent) => void;

/**
 * One consumer of a CM channel's events that hands each to the handler of
 * the id it concerns (a connection request to its listener's). One
 * subscription per channel, never one per id: a hot source replays what it
 * buffered to its first subscriber only, so per-id filters would drop each
 * other's events.
 *
 * Counted: each user (an id's owner) acquires and releases it. A channel
 * made for one caller closes with its last user; a kept one (the native
 * CMs' per-process channel, {@link cmChannelFor}) stays open and watched,
 * unref'd, for the next. The process is held open while some user that did
 * not unref its id is there.
 */
export class SharedCmChannel {
  private readonly handlers = new Map<CmIdPort, CmEventHandler>();
  /** Routed ids whose owners let the process exit. */
  private readonly unrefd = new Set<CmIdPort>();
  private subscription: Subscription | undefined;
  private users = 0;
  /** Whether the channel is ref'd now (a new one is; a kept one starts unref'd). */
  private refd: boolean;
  private failed = false;

  /** @param kept whether it outlives its users (the per-process channel of a native CM). */
  constructor(
    readonly channel: CmChannelPort,
    readonly kept = false,
  ) {
    this.refd = !kept;
  }

  /** How many users (ids) hold it now. */
  get userCount(): number {
    return this.users;
  }

  /** Whether it can take more users (not closed, its event stream not failed). */
  get usable(): boolean {
    return !this.failed && !this.channel.closed;
  }

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
    if (this.unrefd.delete(id)) this.settleRef();
  }

  /** One more user (an id) of the channel. */
  acquire(): this {
    this.users++;
    this.settleRef();
    return this;
  }

  /** One user fewer; the last one closes the channel unless it is kept. */
  release(): void {
    if (this.users === 0 || --this.users > 0) {
      this.settleRef();
      return;
    }
    if (this.kept && this.usable) {
      this.settleRef();
      return;
    }
    this.subscription?.unsubscribe();
    this.subscription = undefined;
    this.handlers.clear();
    this.unrefd.clear();
    this.channel.close();
  }

  /** Closes a kept channel nobody uses (shutting the CM down). */
  closeIdle(): void {
    this.subscription?.unsubscribe();
    this.subscription = undefined;
    this.handlers.clear();
    this.unrefd.clear();
    if (!this.channel.closed) this.channel.close();
  }

  /** The owner of `id` lets the process exit while the channel is watched for it. */
  unref(id: CmIdPort): void {
    if (!this.handlers.has(id)) return;
    this.unrefd.add(id);
    this.settleRef();
  }

  /** Whether the owner of `id` let the process exit. */
  unrefs(id: CmIdPort): boolean {
    return this.unrefd.has(id);
  }

  /** The owner of `id` keeps the process alive while it is watched (the default). */
  ref(id: CmIdPort): void {
    if (this.unrefd.delete(id)) this.settleRef();
  }

  /** Refs the channel while a user that did not unref is there, unrefs it otherwise. */
  private settleRef(): void {
    const want = this.users > this.unrefd.size;
    if (want === this.refd || this.channel.closed) return;
    this.refd = want;
    if (want) this.channel.ref();
    else this.channel.unref();
  }

  private route(e: CmEvent): void {
    // Which device went is not in the event: no kept context is trusted after it.
    if (e.type === 'DEVICE_REMOVAL') forgetCmContexts();
    const key = e.type === 'CONNECT_REQUEST' && e.listener ? e.listener : e.id;
    this.handlers.get(key)?.(e);
  }

  private routeFailure(err: unknown): void {
    this.subscription = undefined;
    this.failed = true;
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

/** The kept channel of each native CM provider. */
const kept = new Map<string, SharedCmChannel>();

/**
 * A channel for one more id of `port`, acquired: for a native CM the one
 * kept per provider (as a C program keeps one `rdma_event_channel` for all
 * its ids: no descriptor to open, watch and close per connection), made
 * anew once it failed; for any other port (the testing kit's virtual CM) a
 * channel of its own.
 */
export function cmChannelFor(port: Pick<CmPort, 'createChannel'>, host: string): SharedCmChannel {
  if (!(port instanceof NativeCmPort)) return new SharedCmChannel(port.createChannel(host)).acquire();
  let shared = kept.get(port.provider);
  if (!shared?.usable) {
    const channel = port.createChannel();
    // Idle, it must not hold the process open: users ref it.
    channel.unref();
    shared = new SharedCmChannel(channel, true);
    kept.set(port.provider, shared);
  }
  return shared.acquire();
}

/**
 * The kept channels' users, by provider (`['soft (2 ids)']`), for
 * `shutdownCm()`'s refusal; empty when none is in use.
 */
export function busyCmChannels(): string[] {
  const out: string[] = [];
  for (const [provider, shared] of kept) {
    const n = shared.userCount;
    if (n > 0 && shared.usable) out.push(`the ${provider} CM channel (${n} id${n === 1 ? '' : 's'})`);
  }
  return out;
}

/** Closes the kept channels (none in use: see {@link busyCmChannels}); later calls make new ones. */
export function closeKeptCmChannels(): void {
  for (const [provider, shared] of [...kept]) {
    kept.delete(provider);
    shared.closeIdle();
  }
}
