import { ThreadBound } from '../core/thread-bound';
import type { NativeCq, NativeChannel, NativeFastResult } from '../native/binding';
import type { HotSource, HotSourceOptions } from '../observables/hot-source';
import { ownedSource } from '../observables/owned-source';
import { withAckMarks } from '../observables/with-ack-marks';
import { cqOwners } from './owners';
import type { Context } from './context';
import type { Cq } from './cq';
import type { CqEvent } from '../core/types';

/**
 * A completion channel (`ibv_comp_channel`): the file descriptor CQ events
 * arrive on. Its watcher reads events until EAGAIN on each wakeup and makes
 * one call into JS; {@link CompletionChannel.events$} is the hot stream of
 * those events for the explicit path (ack, arm and poll with the operators).
 * CQs consumed through `cq.completions$` are serviced natively and never
 * appear on `events$`.
 */
export class CompletionChannel extends ThreadBound {
  /** @internal */
  readonly native: NativeChannel;
  /** The context it was created on. */
  readonly context: Context;
  private demand = 0;
  private source: HotSource<CqEvent<Cq>> | undefined;

  /** @internal */
  constructor(native: NativeChannel, context: Context) {
    super();
    this.native = native;
    this.context = context;
    native.setOwner(this);
  }

  /** The channel's file descriptor (-1 once closed). */
  get fd(): number {
    return this.native.fd;
  }

  /** True once closed. */
  get closed(): boolean {
    return this.native.closed;
  }

  /** Wakeups seen by the watcher, and how many of them found nothing. */
  get wakeups(): { total: number; spurious: number } {
    return this.native.wakeups;
  }

  /** Max events read per wakeup, so a storm cannot starve the event loop. */
  get budget(): number {
    return this.native.budget;
  }
  /** Sets the per-wakeup budget (an integer >= 1). */
  set budget(n: number) {
    this.native.budget = n;
  }

  /**
   * Non-blocking `ibv_get_cq_event`: the next event, or `undefined`. The
   * event must be acked (`event.cq.ack(1)` or the `ackEvents` operator).
   */
  tryGetEvent(): CqEvent<Cq> | undefined {
    const native = this.native.tryGetEvent();
    return native ? toEvent(native) : undefined;
  }

  /** The hot stream of CQ events, with default options. */
  get events$(): HotSource<CqEvent<Cq>> {
    return this.events();
  }

  /**
   * The hot, multicast stream of CQ events. It reads nothing while nothing
   * subscribes (events stay pending in the channel); `tryTake()` reads one.
   * Options apply on first use only. Completes when the channel closes
   * (born completed when first used after that).
   *
   * Every event must be acked once (`ackEvents()`, or `event.cq.ack(1)`).
   * Each event it delivers to push subscribers is marked as owed an ack, so
   * that the operators ack it exactly once in any order: `ackEvents()` takes
   * it over, and `rearm()` / `drainCq()` ack an event they fail on before
   * `ackEvents()` saw it. Events taken with `tryTake()` or `for await` are
   * the taker's to ack.
   */
  events(options?: HotSourceOptions<CqEvent<Cq>>): HotSource<CqEvent<Cq>> {
    if (this.source) return this.source;
    let retained = false;
    this.source = ownedSource<CqEvent<Cq>>(
      { closed: this.native.closed },
      withAckMarks({
        start: () => {
          if (this.native.closed) return;
          this.retain();
          retained = true;
        },
        stop: () => {
          if (!retained) return;
          retained = false;
          this.release();
        },
        pull: () => (this.native.closed ? undefined : this.tryGetEvent()),
      }),
      options,
    );
    return this.source;
  }

  /** Lets the watcher keep the process alive while it watches (the default). */
  ref(): this {
    this.native.ref();
    return this;
  }

  /** Lets the process exit even while the watcher is active. */
  unref(): this {
    this.native.unref();
    return this;
  }

  /** @internal The device died: `events$` errors (sticky). */
  fail(error: Error): void {
    this.events().error(error);
  }

  /** @internal Someone needs the fd watched (events$ or a fast-path CQ). */
  retain(): void {
    if (this.demand++ === 0 && !this.native.closed) this.native.watch(true);
  }

  /** @internal */
  release(): void {
    if (this.demand > 0 && --this.demand === 0 && !this.native.closed) this.native.watch(false);
  }

  /**
   * Destroys the channel (`ibv_destroy_comp_channel`). Fails with `EBUSY`
   * while CQs still use it. Completes `events$`. Idempotent.
   */
  close(): void {
    if (this.native.closed) return;
    this.native.close();
    this.source?.complete();
    this.context.forget(this);
  }

  /** @internal One call per watcher wakeup (from the addon; see WakeupOwner). */
  handleWakeup(
    events: NativeCq[] | null,
    fastCqs: NativeCq | NativeCq[] | null,
    fastResults: NativeFastResult | NativeFastResult[] | null,
    byteOffsets: number | number[] | null,
    counts: number | number[] | null,
  ): void {
    if (fastCqs && fastResults) {
      if (!Array.isArray(fastCqs)) {
        cqOwners.get(fastCqs)?.deliver(fastResults as NativeFastResult, byteOffsets as number, counts as number);
      } else {
        const results = fastResults as NativeFastResult[];
        const offsets = byteOffsets as number[];
        const ns = counts as number[];
        for (let i = 0; i < fastCqs.length; i++) cqOwners.get(fastCqs[i])?.deliver(results[i], offsets[i], ns[i]);
      }
    }
    if (events) {
      const source = this.events();
      for (const native of events) {
        const event = toEvent(native);
        if (event) source.push(event);
      }
    }
  }
}

/** The event of a native CQ; undefined for a CQ made outside this API. */
function toEvent(native: NativeCq): CqEvent<Cq> | undefined {
  const cq = cqOwners.get(native);
  return cq && { cq, context: cq.userContext };
}
