import { ThreadBound } from '../core/thread-bound';
import type { NativeCq, NativeCqStats } from '../native/binding';
import type { HotSource } from '../observables/hot-source';
import type { CompletionsOptions } from '../observables/completions-options';
import { ownedSource } from '../observables/owned-source';
import type { CompletionChannel } from './channel';
import type { Context } from './context';
import { CqOverrunError } from '../core/errors';
import type { CqLike } from '../core/types';
import { WcBatch, WC_BYTES, wordsOf } from '../core/wc-batch';
import { cqOwners } from './owners';

export type { CompletionsOptions };

/**
 * @internal What a CQ asks of its device when an arm or a poll fails:
 * whether the device died. Answered after reading the async events still
 * pending, so a DEVICE_FATAL just raised counts (and a CQ_ERR reaches the
 * CQ before it words its own error).
 */
export interface DeviceHealth {
  /** The error the device died with, or undefined while it lives. */
  fatalError(): Error | undefined;
}

/**
 * A completion queue (`ibv_cq`). Consume it either explicitly (the channel's
 * `events$` with the operators: ack, arm, poll), or through
 * {@link Cq.completions$}, where the native watcher runs the correct loop —
 * event, batched ack, re-arm, poll until empty — and hands over ready
 * {@link WcBatch}es.
 */
export class Cq extends ThreadBound implements CqLike {
  /** @internal */
  readonly native: NativeCq;
  /** The context it was created on. */
  readonly context: Context;
  /** Its completion channel, if any. */
  readonly channel: CompletionChannel | undefined;
  /** The user context given at creation (carried by every event). */
  readonly userContext: unknown;
  private source: HotSource<WcBatch> | undefined;
  private pollMax = 256;
  private failure: Error | undefined;
  private readonly health: DeviceHealth;
  // The addon's current slab and its words view, shared by the batches
  // carved from it (see batchIn).
  private slab: ArrayBuffer | undefined;
  private slabWords: Uint32Array | undefined;

  /** @internal */
  constructor(native: NativeCq, context: Context, channel: CompletionChannel | undefined, userContext: unknown, health: DeviceHealth) {
    super();
    this.native = native;
    this.context = context;
    this.health = health;
    this.channel = channel;
    this.userContext = userContext;
    cqOwners.set(native, this);
  }

  /** The CQ's depth: how many completions it holds before it overruns. */
  get cqe(): number {
    return this.native.cqe;
  }

  /** Events read from the channel for this CQ and not yet acked. */
  get unacked(): number {
    return this.native.unacked;
  }

  /** Counters: events, acks, arms, polls, completions. */
  get stats(): NativeCqStats {
    return this.native.stats;
  }

  /** True once closed. */
  get closed(): boolean {
    return this.native.closed;
  }

  /**
   * Arms the CQ once (`ibv_req_notify_cq`). Completions already queued raise
   * nothing: poll after arming.
   */
  requestNotify(solicitedOnly = false): void {
    this.native.requestNotify(solicitedOnly);
  }

  /** Takes up to `max` completions (default 64) without blocking (`ibv_poll_cq`). */
  poll(max = 64): WcBatch {
    const buf = this.native.poll(max);
    return buf === null ? WcBatch.empty() : this.batchOf(buf);
  }

  /** Acknowledges `n` events read from the channel for this CQ (`ibv_ack_cq_events`). */
  ack(n: number): void {
    this.native.ack(n);
  }

  /**
   * The hot source of this CQ's completions, with default options.
   * @see {@link Cq.completions}
   */
  get completions$(): HotSource<WcBatch> {
    return this.completions();
  }

  /**
   * The hot source of this CQ's completions as {@link WcBatch}es, the loop
   * wired for you natively (event -> batched ack -> re-arm -> poll to
   * empty). It reads nothing while nothing subscribes; `tryTake()` polls the
   * CQ directly. Options apply on first use only. It completes when the CQ
   * closes and errors when the CQ fails (an overrun, a dead device); first
   * used after either, it is born ended the same way.
   * @throws TypeError when the CQ has no completion channel.
   */
  completions(options?: CompletionsOptions): HotSource<WcBatch> {
    if (this.source) return this.source;
    const channel = this.channel;
    if (!channel) throw new TypeError('completions$ needs a CQ created with a completion channel');
    const { ackEvery = 64, pollMax = 256, ...buffer } = options ?? {};
    this.pollMax = pollMax;
    let retained = false;
    const source: HotSource<WcBatch> = ownedSource<WcBatch>(
      // A CQ closed or failed before this first use: born ended as close() or fail() leaves it.
      { closed: this.native.closed, failure: this.failure },
      {
        start: () => {
          if (this.native.closed) return;
          channel.retain();
          retained = true;
          let first: Uint8Array | undefined;
          try {
            first = this.native.startFastPath(ackEvery);
          } catch (err) {
            // A CQ that cannot be armed (overrun, dead device) is not watched.
            retained = false;
            channel.release();
            throw this.failureFor(err as Error);
          }
          if (first) source.push(this.batchOf(first));
        },
        stop: () => {
          if (retained) {
            retained = false;
            channel.release();
          }
          if (!this.native.closed) this.native.pauseFastPath();
        },
        pull: () => this.pullBatch(0),
        pullSpinning: (spinUs) => this.pullBatch(spinUs),
      },
      buffer,
    );
    this.source = source;
    return source;
  }

  /**
   * completions$'s native read: one poll, or a busy-poll in the addon for up
   * to `spinUs` microseconds (`take({ spinUs })`).
   */
  private pullBatch(spinUs: number): WcBatch | undefined {
    if (this.native.closed) return undefined;
    let buf: Uint8Array | null;
    try {
      // The addon spins at most a second per call (its argument is a u32 of ns).
      let leftNs = Math.ceil(spinUs * 1000);
      do {
        const ns = Math.min(leftNs, 1e9);
        buf = this.native.poll(this.pollMax, ns > 0 ? ns : undefined);
        leftNs -= ns;
      } while (buf === null && leftNs > 0);
    } catch (err) {
      // A poll that fails (overrun, dead device) fails the source, typed and sticky.
      const failure = this.failureFor(err as Error);
      this.fail(failure);
      throw failure;
    }
    return buf === null ? undefined : this.batchOf(buf);
  }

  /**
   * @internal The watcher's fast-path delivery: `count` completions at
   * `byteOffset` of the slab, or (count 0) the Error the CQ failed with.
   */
  deliver(result: ArrayBuffer | Error, byteOffset: number, count: number): void {
    if (!this.source) return;
    if (count > 0) this.source.push(this.batchIn(result as ArrayBuffer, byteOffset, count));
    else this.source.error(this.failureFor(result as Error));
  }

  /** A batch the addon handed over as a view of its region of this CQ's slab (poll). */
  private batchOf(bytes: Uint8Array): WcBatch {
    return this.batchIn(bytes.buffer as ArrayBuffer, bytes.byteOffset, bytes.byteLength / WC_BYTES);
  }

  /**
   * The `count` completions the addon wrote at `byteOffset` of this CQ's
   * slab. Their field readers share one view of the slab, made when a new
   * slab appears (every few hundred batches), not one per batch.
   */
  private batchIn(slab: ArrayBuffer, byteOffset: number, count: number): WcBatch {
    if (slab !== this.slab || this.slabWords === undefined) {
      this.slab = slab;
      this.slabWords = wordsOf(slab);
    }
    return WcBatch.inSlab(slab, count, byteOffset, this.slabWords);
  }

  /**
   * @internal An async event said this CQ is broken or the device died. A
   * CQ already closed ended cleanly: what comes after does not change that.
   */
  fail(error: Error): void {
    if (this.native.closed) return;
    this.failure ??= error;
    this.source?.error(error);
  }

  /**
   * @internal Before its context's teardown: acks the events read on the
   * explicit path (tryGetEvent, or buffered by events$), which would make
   * the close refuse.
   */
  settle(): void {
    if (this.unacked > 0) this.ack(this.unacked);
  }

  /**
   * Destroys the CQ (`ibv_destroy_cq`), flushing the acks the fast path
   * batched. Fails with `EBUSY` while QPs use it or events read explicitly
   * are not acked (libibverbs would block forever). Completes `completions$`.
   * Idempotent.
   */
  close(): void {
    if (this.native.closed) return;
    this.native.close();
    this.source?.complete();
    this.context.forget(this);
  }

  /** The typed error for a failed arm or poll: the device died, or the CQ overran. */
  private failureFor(cause: Error): Error {
    return (
      this.health.fatalError() ??
      this.failure ??
      new CqOverrunError(`CQ failed: ${cause.message}`, { cqe: this.safeCqe(), cause })
    );
  }

  private safeCqe(): number | undefined {
    try {
      return this.native.cqe;
    } catch {
      return undefined;
    }
  }
}
