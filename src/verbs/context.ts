import { ThreadBound } from '../core/thread-bound';
import type { NativeAsyncEvent, NativeContext, NativeDeviceAttr, NativePortAttr, NativeWcInit } from '../native/binding';
import type { HotSource, HotSourceOptions } from '../observables/hot-source';
import { ownedSource } from '../observables/owned-source';
import { CompletionChannel } from './channel';
import { ASYNC_EVENT_NAMES, AsyncEventType, PORT_STATE_NAMES, WC_OPCODES, WC_STATUS_NAMES, WcOpcode, WcStatus } from '../core/constants';
import { Cq, DeviceHealth } from './cq';
import { CqOverrunError, DeviceFatalError } from '../core/errors';
import { Children, Closable } from './lifecycle';
import { cqOwners, qpOwners, srqOwners } from './owners';
import { Pd } from './pd';
import type { Qp } from './qp';
import type { Srq } from './srq';
import { describe, optInt } from '../core/validate';

/** Options of {@link Context.createCq}. */
export interface CreateCqOptions {
  /** Minimum depth (the device may round up). */
  cqe: number;
  /** The channel its events go to; without one the CQ can only be polled. */
  channel?: CompletionChannel;
  /** Carried by every event of this CQ (`event.context`). */
  context?: unknown;
  /** Completion vector (interrupt steering on real devices). */
  compVector?: number;
}

/** An async event, acked for you. */
export interface AsyncEvent {
  type: AsyncEventType | 'UNKNOWN';
  /** For CQ events. */
  cq?: Cq;
  /** For QP events (`QP_LAST_WQE_REACHED` included). */
  qp?: Qp;
  /** For SRQ events (`SRQ_LIMIT_REACHED`, `SRQ_ERR`). */
  srq?: Srq;
  /** For port events. */
  port?: number;
}

/** A completion to inject (soft devices). */
export interface InjectedWc {
  wrId?: bigint | number;
  status?: WcStatus;
  opcode?: WcOpcode;
  byteLen?: number;
  qpNum?: number;
  imm?: number;
  /** The sender's QP number (0-0xffffff). */
  srcQp?: number;
  /** The sender's LID (0-0xffff); see `WorkCompletion.slid`. */
  slid?: number;
  /** Service level (0-15). */
  sl?: number;
  /** Destination LID path bits (0-127). */
  dlidPathBits?: number;
}

/** Fault injection on soft devices (tests of what users see when things break). */
export interface Faults {
  /** The CQ overflows now: `CQ_ERR`, its QPs flush. */
  overrun(cq: Cq): void;
  /** Adds a completion with this status (an event if armed). */
  errorCompletion(cq: Cq, wc: InjectedWc): void;
  /** Queues an event with no completion behind it. */
  emptyEvent(cq: Cq): void;
  /** Makes the channel fd readable with nothing queued. */
  spuriousWakeup(channel: CompletionChannel): void;
  /** On the next arm, this completion lands just before the arm takes effect. */
  completionBeforeArm(cq: Cq, wc: InjectedWc): void;
  /** Delays every WR by this many microseconds. */
  delayUs(us: number): void;
  /** Delivers every later event twice. */
  duplicateEvents(on: boolean): void;
  /** `DEVICE_FATAL`: every later verb fails with EIO. */
  deviceFatal(): void;
  /** Raises a port event. */
  portEvent(type: 'PORT_ACTIVE' | 'PORT_ERR'): void;
}

/**
 * An open device (`ibv_context`): the factory of PDs, channels and CQs, and
 * the source of async events. Closing it closes everything made from it, in
 * the safe order.
 */
export class Context extends ThreadBound {
  /** @internal */
  readonly native: NativeContext;
  /** The device name (`soft0`, `mlx5_0`, `rxe0`, ...). */
  readonly deviceName: string;
  /** `'soft'` or `'ibverbs'`. */
  readonly provider: string;
  private readonly children = new Children();
  private asyncSource: HotSource<AsyncEvent> | undefined;
  private droppedAsync = 0;
  private fatal: DeviceFatalError | undefined;
  /** What its CQs learn of the device when a verb on them fails. */
  private readonly health: DeviceHealth = {
    fatalError: () => {
      this.applyPendingAsync();
      return this.fatal;
    },
  };

  /** @internal */
  constructor(native: NativeContext) {
    super();
    this.native = native;
    this.deviceName = native.deviceName;
    this.provider = native.provider;
    // Always watched (without keeping the process alive): CQ_ERR and
    // DEVICE_FATAL must reach the hot sources even if nobody listens here.
    native.watchAsync(this);
  }

  /** True once closed. */
  get closed(): boolean {
    return this.native.closed;
  }

  /** `ibv_query_device`. */
  queryDevice(): NativeDeviceAttr {
    return this.native.queryDevice();
  }

  /** `ibv_query_port`, with the state also by name. */
  queryPort(port = 1): NativePortAttr & { stateName: string } {
    const attr = this.native.queryPort(port);
    return { ...attr, stateName: PORT_STATE_NAMES[attr.state] ?? 'UNKNOWN' };
  }

  /** `ibv_query_gid`: the GID as `xxxx:xxxx:...` (8 groups). */
  queryGid(port: number, index: number): string {
    return this.native.queryGid(port, index);
  }

  /** Allocates a protection domain (`ibv_alloc_pd`). */
  allocPd(): Pd {
    return this.children.add('PD', new Pd(this.native.allocPd(), this));
  }

  /** Creates a completion channel (`ibv_create_comp_channel`). */
  createCompChannel(): CompletionChannel {
    return this.children.add('completion channel', new CompletionChannel(this.native.createCompChannel(), this));
  }

  /** Creates a completion queue (`ibv_create_cq`). */
  createCq(options: CreateCqOptions): Cq {
    if (typeof options !== 'object' || options === null) {
      throw new TypeError(`options must be an object like { cqe, channel }, got ${describe(options)}`);
    }
    const { cqe, channel, context, compVector } = options;
    if (channel !== undefined && !(channel instanceof CompletionChannel)) {
      throw new TypeError('channel must be a CompletionChannel from context.createCompChannel()');
    }
    const vec = optInt(compVector, 'compVector', 0, 1024, 0);
    const native = this.native.createCq(cqe, channel ? channel.native : null, vec);
    return this.children.add('CQ', new Cq(native, this, channel, context, this.health));
  }

  /** The async events stream, with default options. */
  get asyncEvents$(): HotSource<AsyncEvent> {
    return this.asyncEvents();
  }

  /**
   * The hot stream of async events (`ibv_get_async_event`, acked for you).
   * Events nobody takes are buffered up to the high-water mark, then the
   * oldest are dropped (`droppedAsyncEvents` counts them). Errors with
   * {@link DeviceFatalError} after `DEVICE_FATAL`; completes when the
   * context closes (born ended so when first used after either).
   */
  asyncEvents(options?: HotSourceOptions<AsyncEvent>): HotSource<AsyncEvent> {
    if (!this.asyncSource) {
      this.asyncSource = ownedSource<AsyncEvent>(
        { closed: this.native.closed, failure: this.fatal },
        { start: () => undefined, stop: () => undefined, pull: () => this.readAsyncOne() },
        options ?? { overflow: 'dropOldest', onDropped: () => this.droppedAsync++ },
      );
    }
    return this.asyncSource;
  }

  /**
   * @internal The connection manager saw the device go (`DEVICE_REMOVAL`):
   * the async events stream ends with `error`, as it does after
   * `DEVICE_FATAL`. Needed where the device says nothing itself: rxe has
   * no disassociation and raises no DEVICE_FATAL when it is deleted.
   */
  failAsync(error: Error): void {
    this.asyncEvents().error(error);
  }

  /** Async events dropped because nobody took them. */
  get droppedAsyncEvents(): number {
    return this.droppedAsync;
  }

  /** Fault injection; soft devices only (others fail with EOPNOTSUPP). */
  get faults(): Faults {
    const wc = (w: InjectedWc): NativeWcInit => ({
      wrId: w.wrId,
      status: w.status === undefined ? undefined : statusValue(w.status),
      opcode: w.opcode === undefined ? undefined : opcodeValue(w.opcode),
      byteLen: w.byteLen,
      qpNum: w.qpNum,
      imm: w.imm,
      srcQp: w.srcQp,
      slid: w.slid,
      sl: w.sl,
      dlidPathBits: w.dlidPathBits,
    });
    const f = this.native.faults;
    return {
      overrun: (cq) => f.overrun(cq.native),
      errorCompletion: (cq, w) => f.errorCompletion(cq.native, wc(w)),
      emptyEvent: (cq) => f.emptyEvent(cq.native),
      spuriousWakeup: (ch) => f.spuriousWakeup(ch.native),
      completionBeforeArm: (cq, w) => f.completionBeforeArm(cq.native, wc(w)),
      delayUs: (us) => f.delayUs(us),
      duplicateEvents: (on) => f.duplicateEvents(on),
      deviceFatal: () => f.deviceFatal(),
      portEvent: (type) => f.portEvent(ASYNC_EVENT_NAMES.indexOf(type)),
    };
  }

  /**
   * Closes everything made from this context, its CQs' read events acked
   * first, kind by kind in the safe teardown order (`TEARDOWN_ORDER`), then
   * the device (`ibv_close_device`). Idempotent.
   * @throws an Error with code `EBUSY` for a connection manager's shared
   *   context (`conn.context`, `openCmContext()`): its connections share
   *   it, so none of them may close it (see `releaseCmContext()`).
   */
  close(): void {
    if (this.native.closed) return;
    const refusal = this.closeGuard?.();
    if (refusal) throw refusal;
    this.destroy();
  }

  /**
   * @internal Set by the owner of a shared context: the refusal `close()`
   * throws (its owner closes it with {@link Context.destroy}).
   */
  closeGuard: (() => Error) | undefined;

  /** @internal `close()` without the shared-context guard: for the context's owner. */
  destroy(): void {
    if (this.native.closed) return;
    this.children.closeAll();
    this.native.close();
    this.asyncSource?.complete();
  }

  /** @internal Closes everything made from this context (as `close()` does first), keeping the context open. */
  closeChildren(): void {
    this.children.closeAll();
  }

  /**
   * Reads and applies pending async events now, so a CQ that just saw a
   * verb fail learns whether the device died (DEVICE_FATAL) or only it
   * broke (CQ_ERR).
   */
  private applyPendingAsync(): void {
    if (!this.native.closed) this.handleAsync(this.native.readAsyncEvents());
  }

  /** @internal The error the device died with, if it did. */
  get fatalError(): DeviceFatalError | undefined {
    return this.fatal;
  }

  /** @internal A child closed itself: it leaves the teardown list. */
  forget(child: Closable): void {
    this.children.delete(child);
  }

  private readAsyncOne(): AsyncEvent | undefined {
    if (this.native.closed) return undefined;
    const events = this.native.readAsyncEvents().map((e) => this.dispatch(e));
    const first = events.shift();
    for (const e of events) this.asyncEvents().push(e);
    return first;
  }

  /** @internal Async events read (and acked) by the addon. */
  handleAsync(events: NativeAsyncEvent[]): void {
    const source = this.asyncEvents();
    for (const e of events) source.push(this.dispatch(e));
    if (this.fatal) source.error(this.fatal);
  }

  /** Applies an async event to the objects it concerns, then describes it. */
  private dispatch(e: NativeAsyncEvent): AsyncEvent {
    const type = ASYNC_EVENT_NAMES[e.type] ?? 'UNKNOWN';
    const cq = e.cq && cqOwners.get(e.cq);
    const qp = e.qp && qpOwners.get(e.qp);
    const srq = e.srq && srqOwners.get(e.srq);
    if (type === 'CQ_ERR' && cq) cq.fail(new CqOverrunError(`CQ overrun on ${this.deviceName} (depth ${cq.cqe})`, { cqe: cq.cqe }));
    if (type === 'DEVICE_FATAL' && !this.fatal) {
      this.fatal = new DeviceFatalError(`device ${this.deviceName} reported DEVICE_FATAL`, { device: this.deviceName });
      for (const child of this.children.list()) {
        if (child instanceof Cq) child.fail(this.fatal);
        if (child instanceof CompletionChannel) child.fail(this.fatal);
      }
    }
    return { type, cq, qp, srq, port: e.port };
  }
}

function statusValue(name: WcStatus): number {
  const v = WC_STATUS_NAMES.indexOf(name);
  if (v < 0) throw new RangeError(`unknown work completion status ${describe(name)}`);
  return v;
}

function opcodeValue(name: WcOpcode): number {
  const v = WC_OPCODES[name];
  if (v === undefined) throw new RangeError(`unknown work completion opcode ${describe(name)}`);
  return v;
}
