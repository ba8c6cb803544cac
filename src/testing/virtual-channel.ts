import { HotSource, HotSourceOptions } from '../observables/hot-source';
import { RingQueue } from '../observables/ring-queue';
import { withAckMarks } from '../observables/with-ack-marks';
import type { CqEvent } from '../core/types';
import type { VirtualCq } from './virtual-cq';

/**
 * A completion channel (`ibv_comp_channel`) in virtual time, for marble
 * tests: CQs raise events on it (see {@link VirtualCq}); `events$` is a hot
 * source with the native channel's rules — it reads (delivers) events only
 * while there is demand; until then they stay pending in the channel,
 * counted, for a later subscriber or `events$.tryTake()`. Like the native
 * one, it marks the events it delivers as owed an ack (see `ackEvents()`).
 */
export class VirtualChannel {
  /** The channel's events, as the native `channel.events$`. */
  readonly events$: HotSource<CqEvent<VirtualCq>>;
  /** Events raised and not yet read: what the channel fd would still hold. */
  private readonly unread = new RingQueue<CqEvent<VirtualCq>>();
  private reading = false;
  private delivering = false;

  /** @param options the `events$` buffer (as a native hot source's). */
  constructor(options?: HotSourceOptions<CqEvent<VirtualCq>>) {
    this.events$ = new HotSource<CqEvent<VirtualCq>>(
      withAckMarks({
        start: () => {
          this.reading = true;
          this.deliver();
        },
        stop: () => {
          this.reading = false;
        },
        pull: () => this.read(),
      }),
      options,
    );
  }

  /** Events raised and not yet read from the channel. */
  get pendingEvents(): number {
    return this.unread.length;
  }

  /** Whether `events$` is reading (has demand and is not paused). */
  get isReading(): boolean {
    return this.reading;
  }

  /** Raises one event for `cq` (what a firing arm does). Called by {@link VirtualCq}. */
  raise(cq: VirtualCq): void {
    this.unread.push({ cq, context: cq.context });
    if (this.reading) this.deliver();
  }

  /** Completes `events$` (what closing the channel does). */
  close(): void {
    this.events$.complete();
  }

  /** Fails `events$` with `error` (e.g. a `DeviceFatalError`). */
  fail(error: unknown): void {
    this.events$.error(error);
  }

  /** Reads one event off the channel, as `ibv_get_cq_event` would. */
  private read(): CqEvent<VirtualCq> | undefined {
    const event = this.unread.shift();
    event?.cq.noteEventRead();
    return event;
  }

  /** Reads events while reading; in order even when raising re-enters. */
  private deliver(): void {
    if (this.delivering) return;
    this.delivering = true;
    try {
      while (this.reading && this.unread.length > 0) this.events$.push(this.read()!);
    } finally {
      this.delivering = false;
    }
  }
}

/** A new {@link VirtualChannel}. */
export function virtualChannel(options?: HotSourceOptions<CqEvent<VirtualCq>>): VirtualChannel {
  return new VirtualChannel(options);
}
