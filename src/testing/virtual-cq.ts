import { asyncScheduler, Observable, ReplaySubject } from 'rxjs';
import type { RunHelpers } from 'rxjs/testing';
import { CqOverrunError } from '../core/errors';
import { refuseBusyCq, refuseOverAck } from '../core/refusals';
import type { CqLike } from '../core/types';
import { checkInt } from '../core/validate';
import { WcBatch, WorkCompletionInit } from '../core/wc-batch';
import { VirtualChannel } from './virtual-channel';
import type { HotSource } from '../observables/hot-source';
import type { CompletionsOptions } from '../observables/completions-options';
import { ownedSource } from '../observables/owned-source';
import { RingQueue } from '../observables/ring-queue';

/** One virtual work completion: `WcBatch.from` fields, plus whether it is solicited. */
export interface VirtualWc extends Partial<WorkCompletionInit> {
  /** Fires a solicited-only arm (error completions fire it too). */
  solicited?: boolean;
}

/** What a marble value may stand for: one completion, several at once, or a batch. */
export type VirtualCompletions = VirtualWc | ReadonlyArray<VirtualWc> | WcBatch;

/** Options of {@link virtualCq}. */
export interface VirtualCqOptions {
  /** The channel its events go to (default: a new one, `cq.channel`). */
  channel?: VirtualChannel;
  /** Depth (default 64): a completion arriving at a full CQ is an overrun. */
  cqe?: number;
  /** The user context its events carry. */
  context?: unknown;
  /** Its name in `assertInvariants()` messages (default: `context` if a string, else `cq1`, `cq2`, ...). */
  name?: string;
  /**
   * A hot marble of arriving completions, e.g. `'--a--(bc)--d'`, with
   * `values` saying what each letter is; a letter without a value is one
   * successful completion with the next wr_id (1, 2, ...). Termination
   * (`|`, `#`) is ignored: completions just stop.
   */
  completions?: string;
  /** The completions each letter of `completions` stands for. */
  values?: Record<string, VirtualCompletions>;
}

let cqCount = 0;

/** A queued completion and the order it arrived in (to tell which were queued before an arm). */
interface Queued {
  readonly wc: VirtualWc & { wrId: number | bigint };
  readonly seq: number;
}

/**
 * ` at frame N` inside `TestScheduler.run`; nothing outside it, where
 * `asyncScheduler.now()` is the wall clock and no frame at all.
 */
function atFrame(): string {
  const now = asyncScheduler.now();
  return Math.abs(now - Date.now()) < 60_000 ? '' : ` at frame ${now}`;
}

/**
 * A completion queue in virtual time, with the native semantics (docs/ARCHITECTURE.md, Providers):
 * - `requestNotify()` arms once: the next completion added after it (for
 *   `solicitedOnly`, the next solicited or error one) raises one event on
 *   the channel and disarms. Completions already queued raise nothing.
 * - `poll(max)` takes up to `max` completions as a `WcBatch`.
 * - `ack(n)` acks events read from the channel; acking more is a
 *   RangeError, with the native message.
 * - A completion arriving at a full CQ is an overrun: it is lost, and
 *   `poll`/`requestNotify` throw `CqOverrunError` from then on.
 * - `close()` fails while events are unacked (`EBUSY`, as natively); afterwards
 *   `requestNotify`/`poll`/`ack` throw (`EBADF`), and an event raised
 *   before the close that is read after it needs no ack (destroying a CQ
 *   discards its events).
 *
 * Like the native CQ it can be consumed two ways: explicitly (its channel's
 * `events$` with the operators), or through {@link VirtualCq.completions$},
 * the fast path, which runs the loop itself — event, batched ack, re-arm,
 * poll until empty — and hands over one `WcBatch` per wake-up. Code written
 * against `cq.completions$` runs unchanged on it.
 *
 * It records what the pipeline did: `arms$`/`acks$` for `expectArms` /
 * `expectAcks` (the fast path's arms and acks included), and rule
 * violations for `assertInvariants()`.
 */
export class VirtualCq implements CqLike {
  readonly cqe: number;
  readonly channel: VirtualChannel;
  readonly context: unknown;
  /** Its name in messages. */
  readonly name: string;
  private readonly queue = new RingQueue<Queued>();
  private armed: false | 'any' | 'solicited' = false;
  /** Completions ever queued, and how many of them had been queued at the last arm. */
  private queuedTotal = 0;
  private queuedAtArm = 0;
  private armedAt = '';
  private isClosed = false;
  private nextWrId = 1;
  private raised = 0;
  private read = 0;
  private acked = 0;
  private overrun = false;
  /** `completions$`: not used yet, running, or stopped (no demand, paused); once used, the CQ's events are its own. */
  private fastPath: 'off' | 'running' | 'stopped' = 'off';
  private ackEvery = 64;
  /** An event of the fast path was read and its wake-up's service is still to come. */
  private serviceDue = false;
  private pollMax = 256;
  private source: HotSource<WcBatch> | undefined;
  private failure: Error | undefined;
  private readonly violations: string[] = [];
  private readonly armLog = new ReplaySubject<'a' | 's'>();
  private readonly ackLog = new ReplaySubject<number>();

  /**
   * Every arm, as `'a'` (any completion) or `'s'` (solicited only), at the
   * frame it happened — replayed, so arms made while setting up a test show
   * at frame 0.
   */
  readonly arms$: Observable<'a' | 's'> = this.armLog.asObservable();
  /** Every `ack(n)` call, as `n`, at the frame it happened (replayed). */
  readonly acks$: Observable<number> = this.ackLog.asObservable();

  /**
   * @param options see {@link VirtualCqOptions}.
   * @param helpers `TestScheduler.run` helpers, needed for a `completions` marble.
   */
  constructor(options: VirtualCqOptions = {}, helpers?: Pick<RunHelpers, 'hot'>) {
    this.cqe = checkInt(options.cqe ?? 64, 'cqe', 1);
    this.channel = options.channel ?? new VirtualChannel();
    this.context = options.context;
    cqCount++;
    this.name = options.name ?? (typeof options.context === 'string' ? options.context : `cq${cqCount}`);
    if (options.completions !== undefined) {
      if (!helpers) throw new TypeError('a completions marble needs the TestScheduler.run helpers');
      helpers
        .hot<VirtualCompletions | string>(options.completions, options.values as Record<string, VirtualCompletions>)
        .subscribe({
          next: (value) => this.addCompletions(...this.expand(value)),
          error: () => undefined, // termination in the marble is ignored
        });
    }
  }

  /** Whether the CQ is armed. */
  get isArmed(): boolean {
    return this.armed !== false;
  }

  /** Completions queued, not yet polled. */
  get depth(): number {
    return this.queue.length;
  }

  /** Events this CQ raised on its channel. */
  get eventsRaised(): number {
    return this.raised;
  }

  /** Events read from the channel and not yet acked. */
  get unacked(): number {
    return this.read - this.acked;
  }

  /** Whether an overrun happened. */
  get isOverrun(): boolean {
    return this.overrun;
  }

  /** True once closed. */
  get closed(): boolean {
    return this.isClosed;
  }

  /**
   * The hot source of this CQ's completions, with default options.
   * @see {@link VirtualCq.completions}
   */
  get completions$(): HotSource<WcBatch> {
    return this.completions();
  }

  /**
   * The hot source of this CQ's completions as `WcBatch`es, with the native
   * `cq.completions()`'s rules, so a pipeline written against
   * `cq.completions$` is marble-tested unchanged:
   * - While something subscribes (or `take()` waits), the CQ is consumed
   *   for you: on its first use it is armed and polled until empty; then
   *   each of its events is read off the channel (it never reaches
   *   `channel.events$`), acked in batches of `ackEvery` (default 64; the
   *   rest when the CQ closes), and at the wake-up's end the CQ is re-armed
   *   and polled until empty into one batch — what arrived in one frame
   *   comes as one batch. The arms and acks show in `arms$` / `acks$`.
   * - While nothing subscribes it reads nothing and arms nothing;
   *   `tryTake()` polls the CQ directly (up to `pollMax`, default 256).
   * - Exactly once, buffering, overflow (`highWaterMark`, `overflow`, ...)
   *   and terminal states are the hot source's: `close()` completes it; an
   *   overrun (or {@link VirtualCq.fail}) errors it after what it had read.
   *   First used after either, it is born ended the same way.
   *
   * Options apply on first use only.
   *
   * ## Example
   * ```ts
   * testScheduler.run((helpers) => {
   *   const cq = virtualCq(helpers, { completions: '--a--(bc)' });
   *   const out$ = cq.completions({ ackEvery: 1 }).pipe(map(wrIdsOf));
   *   helpers.expectObservable(out$).toBe('--x--y', { x: [1], y: [2, 3] });
   *   expectArms(helpers, cq, 'a-a--a');
   *   expectAcks(helpers, cq, '--1--1');
   * });
   * ```
   * @throws RangeError for an `ackEvery` or `pollMax` that is not an
   *   integer >= 1, and as a hot source for bad buffer options.
   */
  completions(options?: CompletionsOptions): HotSource<WcBatch> {
    if (this.source) return this.source;
    const { ackEvery = 64, pollMax = 256, ...buffer } = options ?? {};
    checkInt(ackEvery, 'ackEvery', 1);
    checkInt(pollMax, 'pollMax', 1);
    let retained = false;
    const source: HotSource<WcBatch> = ownedSource<WcBatch>(
      { closed: this.isClosed, failure: this.failure },
      {
        start: () => {
          if (this.isClosed) return;
          this.channel.retain();
          retained = true;
          this.fastPath = 'running';
          let first: WcBatch;
          try {
            first = this.armAndDrain();
          } catch (err) {
            retained = false;
            this.fastPath = 'stopped';
            this.channel.release();
            throw err;
          }
          if (first.length > 0) source.push(first);
        },
        stop: () => {
          if (retained) {
            retained = false;
            this.channel.release();
          }
          if (this.fastPath === 'running') this.fastPath = 'stopped';
        },
        pull: () => this.pullBatch(),
      },
      buffer,
    );
    this.ackEvery = ackEvery;
    this.pollMax = pollMax;
    this.source = source;
    return source;
  }

  requestNotify(solicitedOnly = false): void {
    this.ensureOpen('requestNotify');
    if (this.overrun) throw new CqOverrunError('requestNotify on an overrun CQ', { cqe: this.cqe });
    this.armed = solicitedOnly ? 'solicited' : 'any';
    this.queuedAtArm = this.queuedTotal;
    this.armedAt = atFrame();
    this.armLog.next(solicitedOnly ? 's' : 'a');
  }

  poll(max = this.cqe): WcBatch {
    this.ensureOpen('poll');
    if (this.overrun) throw new CqOverrunError('poll on an overrun CQ', { cqe: this.cqe });
    checkInt(max, 'poll: max', 1);
    const taken = this.take(max);
    if (taken.length === 0 && !this.covered()) {
      this.violations.push(
        `drained${atFrame()} while not armed and with no event pending: ` +
          'a completion arriving now would raise no event (arm before the final poll)',
      );
    }
    return WcBatch.from(taken);
  }

  ack(n: number): void {
    this.ensureOpen('ack');
    checkInt(n, 'ack: n', 1);
    refuseOverAck(n, this.unacked);
    this.acked += n;
    this.ackLog.next(n);
  }

  /**
   * Destroys the CQ. Fails, as the native one does (`EBUSY`), while events
   * read from the channel are unacked. Idempotent.
   */
  close(): void {
    if (this.isClosed) return;
    // The fast path's batched acks are its own: flushed before destroy, as natively.
    if (this.fastPath !== 'off' && this.unacked > 0) this.ack(this.unacked);
    refuseBusyCq(0, this.unacked, 0);
    this.isClosed = true;
    this.armed = false;
    this.source?.complete();
  }

  /**
   * Fails the CQ as a `CQ_ERR` or a lost device does: `completions$` errors
   * with `error` after what it had read (sticky; born so when first used
   * later). An overrun does this by itself. Ignored once closed.
   */
  fail(error: Error): void {
    if (this.isClosed) return;
    this.failure ??= error;
    this.source?.error(error);
  }

  /** Adds completions as the device would: each may fire the arm. */
  addCompletions(...wcs: VirtualWc[]): void {
    for (const wc of wcs) {
      if (this.overrun || this.isClosed) return;
      if (this.queue.length >= this.cqe) {
        this.overrun = true;
        this.violations.push(`overrun${atFrame()}: a completion arrived at a full CQ (cqe ${this.cqe})`);
        this.fail(new CqOverrunError(`CQ '${this.name}' overran${atFrame()} (depth ${this.cqe})`, { cqe: this.cqe }));
        return;
      }
      const complete = { ...wc, wrId: wc.wrId ?? this.nextWrId++ };
      this.queue.push({ wc: complete, seq: ++this.queuedTotal });
      const fires = this.armed === 'any' || (this.armed === 'solicited' && (wc.solicited || (wc.status ?? 0) !== 0));
      if (fires) {
        this.armed = false;
        this.raise();
      }
    }
  }

  /** Raises an event with nothing behind it (a spurious / empty event: it must be handled and acked too). */
  spuriousEvent(): void {
    this.raise();
  }

  /**
   * Throws an Error, naming the CQ, listing every broken rule:
   * - events read from the channel and not acked (on the explicit path:
   *   `completions$` acks its own, the last of them when the CQ closes). An `ackEvents()`
   *   subscription that is still live holds up to `every - 1` events per CQ
   *   in its batch (it acks them when it ends): assert after unsubscribing
   *   or completing, or those show here too, as the message says;
   * - drains of an unarmed CQ with no event pending (it then waits forever);
   * - stranded completions, by wr_id: queued with no event on its way to
   *   fetch them — either queued before the last arm and not polled since
   *   (arming fires only for completions that arrive after it: poll until
   *   empty after arming), or queued while the CQ is not armed;
   * - overruns.
   * Call it after `TestScheduler.run()` returns (or after `helpers.flush()`).
   */
  assertInvariants(): void {
    const problems = [...this.violations];
    // The fast path's events are acked in batches by the CQ itself, the rest at close.
    if (this.unacked > 0 && this.fastPath === 'off') {
      problems.push(
        `${this.unacked} event(s) read from the channel were never acked ` +
          '(a live ackEvents() subscription holds its batch until it ends: assert after unsubscribing or completing)',
      );
    }
    const stranded = this.stranded();
    if (stranded) problems.push(stranded);
    if (problems.length > 0) throw new Error(`VirtualCq '${this.name}' invariants broken:\n- ${problems.join('\n- ')}`);
  }

  /** @internal The channel tells its CQ when one of its events was read. */
  noteEventRead(): void {
    if (!this.isClosed) this.read++; // a destroyed CQ's events need no ack
  }

  /**
   * @internal The channel read an event of this CQ: true if the fast path
   * owns it (it acks it in batches now and is serviced at the wake-up's
   * end), false if it goes to `events$`.
   */
  fastEventRead(): boolean {
    if (this.fastPath === 'off') return false;
    if (this.isClosed) return true; // a destroyed CQ's events vanish
    if (this.unacked >= this.ackEvery) this.ack(this.unacked);
    this.serviceDue = true;
    return true;
  }

  /** @internal The wake-up's end: re-arm and poll until empty into one batch (a running fast path only). */
  serviceFastPath(): void {
    this.serviceDue = false;
    if (this.fastPath !== 'running' || this.isClosed) return;
    let batch: WcBatch;
    try {
      batch = this.armAndDrain();
    } catch (err) {
      this.fastPath = 'stopped';
      this.fail(err as Error);
      return;
    }
    if (batch.length > 0) this.source?.push(batch);
  }

  /** Arms, then polls until empty: what landed before the arm is found, what lands after raises an event. */
  private armAndDrain(): WcBatch {
    this.requestNotify();
    return WcBatch.from(this.take(Infinity));
  }

  /** `completions$.tryTake()`: one poll of up to `pollMax`, without arming (a polling loop needs none). */
  private pullBatch(): WcBatch | undefined {
    if (this.isClosed) return undefined;
    if (this.overrun) throw this.failure ?? new CqOverrunError('poll on an overrun CQ', { cqe: this.cqe });
    const taken = this.take(this.pollMax);
    return taken.length > 0 ? WcBatch.from(taken) : undefined;
  }

  /** Takes up to `max` queued completions. */
  private take(max: number): VirtualWc[] {
    const taken: VirtualWc[] = [];
    while (taken.length < max && this.queue.length > 0) taken.push(this.queue.shift()!.wc);
    return taken;
  }

  /** Completions no event will come for, described; `undefined` if none. */
  private stranded(): string | undefined {
    if (this.isClosed || this.queue.length === 0 || this.eventOnItsWay()) return undefined;
    const queued = this.queue.toArray();
    const ids = (list: Queued[]) => list.map((q) => String(q.wc.wrId)).join(', ');
    const beforeArm = queued.filter((q) => q.seq <= this.queuedAtArm);
    if (this.armed !== false) {
      return (
        `${queued.length} completion(s) stranded on CQ '${this.name}' (wr_id ${ids(beforeArm)}): ` +
        `queued before the last arm${this.armedAt} and not polled since; the arm fires only for new completions, ` +
        'so no event will come for them (poll until empty after arming)'
      );
    }
    return (
      `${queued.length} completion(s) stranded on CQ '${this.name}' (wr_id ${ids(queued)}): ` +
      'queued while the CQ is not armed and no event is pending to fetch them (arm, then poll until empty)'
    );
  }

  private ensureOpen(verb: string): void {
    if (this.isClosed) {
      throw Object.assign(new Error(`${verb} on closed CQ '${this.name}'`), { code: 'EBADF' });
    }
  }

  /** Whether a completion arriving now would lead to a poll: armed, or an event is still on its way. */
  private covered(): boolean {
    return this.armed !== false || this.eventOnItsWay();
  }

  /** An event raised and not yet read, or read and still buffered by `events$`: someone will poll. */
  private eventOnItsWay(): boolean {
    return this.raised > this.read || this.channel.events$.pending > 0 || this.serviceDue;
  }

  private raise(): void {
    this.raised++;
    this.channel.raise(this);
  }

  private expand(value: VirtualCompletions | string | undefined): VirtualWc[] {
    if (value === undefined || typeof value === 'string') return [{}]; // a letter without a value
    if (value instanceof WcBatch) {
      const out: VirtualWc[] = [];
      for (let i = 0; i < value.length; i++) {
        out.push({
          wrId: value.wrId[i], status: value.status[i], opcode: value.opcode[i], byteLen: value.byteLen[i],
          imm: value.imm[i], qpNum: value.qpNum[i], srcQp: value.srcQp[i], flags: value.flags[i],
          vendorErr: value.vendorErr[i], slid: value.slid[i], sl: value.sl[i], dlidPathBits: value.dlidPathBits[i],
        });
      }
      return out;
    }
    return Array.isArray(value) ? [...(value as VirtualWc[])] : [value as VirtualWc];
  }
}

/**
 * A new {@link VirtualCq}; inside `TestScheduler.run`, pass the helpers to
 * drive it with a `completions` marble.
 *
 * ## Example
 * ```ts
 * testScheduler.run((helpers) => {
 *   const cq = virtualCq(helpers, { completions: '--a--b', values: { a: { wrId: 1 }, b: { wrId: 2 } } });
 *   cq.requestNotify();
 *   const out$ = cq.channel.events$.pipe(ackEvents({ every: 1 }), rearm(), drainCq());
 *   helpers.expectObservable(out$.pipe(map(wrIdsOf))).toBe('--x--y', { x: [1], y: [2] });
 *   expectArms(helpers, cq, 'a-a--a');
 * });
 * ```
 */
export function virtualCq(helpers: Pick<RunHelpers, 'hot'> | undefined, options: VirtualCqOptions = {}): VirtualCq {
  return new VirtualCq(options, helpers);
}
