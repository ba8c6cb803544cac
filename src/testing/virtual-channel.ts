import { asapScheduler, SchedulerLike, Subscription } from 'rxjs';
import { HotSource, HotSourceOptions } from '../observables/hot-source';
import { RingQueue } from '../observables/ring-queue';
import { withAckMarks } from '../observables/with-ack-marks';
import type { CqEvent } from '../core/types';
import type { VirtualCq } from './virtual-cq';

/** Options of a {@link VirtualChannel}: the `events$` buffer, and where wake-ups run. */
export interface VirtualChannelOptions extends HotSourceOptions<CqEvent<VirtualCq>> {
  /**
   * Where the wake-up that services `completions$` CQs runs (default
   * `asapScheduler`: inside `TestScheduler.run`, later in the same frame).
   */
  scheduler?: SchedulerLike;
}

/**
 * A completion channel (`ibv_comp_channel`) in virtual time, for marble
 * tests: CQs raise events on it (see {@link VirtualCq}); `events$` is a hot
 * source with the native channel's rules — it reads (delivers) events only
 * while there is demand; until then they stay pending in the channel,
 * counted, for a later subscriber or `events$.tryTake()`. Like the native
 * one, it marks the events it delivers as owed an ack (see `ackEvents()`).
 *
 * The channel is read while `events$` has demand or a CQ on it is consumed
 * through `cq.completions$` (the fast path). As natively, the events of a
 * fast-path CQ never reach `events$`: each is counted and acked in batches
 * as it is read, and once per wake-up — after every completion of that
 * instant has landed — the CQ is re-armed and polled until empty into one
 * `WcBatch`. The wake-up runs on the channel's scheduler; inside
 * `TestScheduler.run` the default `asapScheduler` is virtual, so a batch
 * shows in the frame its completions arrived in.
 */
export class VirtualChannel {
  /** The channel's events, as the native `channel.events$`. */
  readonly events$: HotSource<CqEvent<VirtualCq>>;
  /** Events raised and not yet read: what the channel fd would still hold. */
  private readonly unread = new RingQueue<CqEvent<VirtualCq>>();
  private readonly scheduler: SchedulerLike;
  /** Who needs the channel read: `events$` and each fast-path CQ that is running. */
  private demand = 0;
  private delivering = false;
  /** Fast-path CQs whose events were read, waiting for the wake-up's service. */
  private readonly toService = new Set<VirtualCq>();
  private wakeup: Subscription | undefined;
  private wakeupDue = false;

  /** @param options the `events$` buffer (as a native hot source's) and the wake-up scheduler. */
  constructor(options: VirtualChannelOptions = {}) {
    const { scheduler = asapScheduler, ...buffer } = options;
    this.scheduler = scheduler;
    this.events$ = new HotSource<CqEvent<VirtualCq>>(
      withAckMarks({
        start: () => this.retain(),
        stop: () => this.release(),
        pull: () => this.pullExplicit(),
      }),
      buffer,
    );
  }

  /** Events raised and not yet read from the channel. */
  get pendingEvents(): number {
    return this.unread.length;
  }

  /** Whether the channel is read: `events$` has demand (and is not paused) or a fast-path CQ runs. */
  get isReading(): boolean {
    return this.demand > 0;
  }

  /** Raises one event for `cq` (what a firing arm does). Called by {@link VirtualCq}. */
  raise(cq: VirtualCq): void {
    this.unread.push({ cq, context: cq.context });
    this.deliver();
  }

  /** Completes `events$` (what closing the channel does). */
  close(): void {
    this.events$.complete();
  }

  /** Fails `events$` with `error` (e.g. a `DeviceFatalError`). */
  fail(error: unknown): void {
    this.events$.error(error);
  }

  /** @internal Someone needs the channel read (`events$`, or a fast-path CQ). */
  retain(): void {
    this.demand++;
    this.deliver();
  }

  /** @internal */
  release(): void {
    if (this.demand > 0) this.demand--;
  }

  /** Reads one event off the channel, as `ibv_get_cq_event` would. */
  private read(): CqEvent<VirtualCq> | undefined {
    const event = this.unread.shift();
    event?.cq.noteEventRead();
    return event;
  }

  /**
   * `events$.tryTake()`: the next event of an explicit CQ. Fast-path events
   * met on the way are consumed as a wake-up would, and their CQs serviced
   * now (as the native `tryGetEvent` does), so neither side loses one.
   */
  private pullExplicit(): CqEvent<VirtualCq> | undefined {
    let found: CqEvent<VirtualCq> | undefined;
    for (let e = this.read(); e; e = this.read()) {
      if (!this.consumedByFastPath(e)) {
        found = e;
        break;
      }
    }
    this.service();
    return found;
  }

  /** Reads events while the channel is read; in order even when raising re-enters. */
  private deliver(): void {
    if (this.delivering) return;
    this.delivering = true;
    try {
      while (this.demand > 0 && this.unread.length > 0) {
        const event = this.read()!;
        if (!this.consumedByFastPath(event)) this.events$.push(event);
      }
    } finally {
      this.delivering = false;
    }
  }

  /** A fast-path CQ's event: counted and acked by its CQ, serviced at the wake-up. */
  private consumedByFastPath(event: CqEvent<VirtualCq>): boolean {
    if (!event.cq.fastEventRead()) return false;
    this.toService.add(event.cq);
    if (!this.wakeupDue) {
      this.wakeupDue = true; // set first: a scheduler may run the action at once
      this.wakeup = this.scheduler.schedule(() => this.service());
    }
    return true;
  }

  /** The wake-up's end: each fast-path CQ whose events were read is re-armed and polled to empty, once. */
  private service(): void {
    this.wakeupDue = false;
    this.wakeup?.unsubscribe();
    this.wakeup = undefined;
    const cqs = [...this.toService];
    this.toService.clear();
    for (const cq of cqs) cq.serviceFastPath();
  }
}

/** A new {@link VirtualChannel}. */
export function virtualChannel(options?: VirtualChannelOptions): VirtualChannel {
  return new VirtualChannel(options);
}
