/**
 * The typed face of the native addon: every class and method the C++ side
 * (src/native, one ObjectWrap per verbs object) defines, declared here with
 * its real types. The friendly API in src/verbs wraps them; apart from it,
 * only the benchmarks and the addon's own tests reach this module.
 * @packageDocumentation
 */
import * as path from 'path';

/** A device as the providers list it. */
export interface NativeDeviceInfo {
  name: string;
  /** `'soft'` (embedded) or `'ibverbs'` (rdma-core). */
  provider: string;
  transport: string;
  nodeGuid: string;
}

/** `ibv_query_device` attributes. */
export interface NativeDeviceAttr {
  fwVer: string;
  nodeGuid: string;
  sysImageGuid: string;
  maxMrSize: bigint;
  vendorId: number;
  vendorPartId: number;
  hwVer: number;
  maxQp: number;
  maxQpWr: number;
  maxSge: number;
  maxCq: number;
  maxCqe: number;
  maxMr: number;
  maxPd: number;
  physPortCnt: number;
}

/** `ibv_query_port` attributes (numeric enums as rdma-core defines them). */
export interface NativePortAttr {
  state: number;
  maxMtu: number;
  activeMtu: number;
  gidTblLen: number;
  lid: number;
  smLid: number;
  lmc: number;
  linkLayer: number;
  activeWidth: number;
  activeSpeed: number;
  physState: number;
}

/** An async event as read (and already acked) from a context. */
export interface NativeAsyncEvent {
  type: number;
  cq?: NativeCq;
  qp?: NativeQp;
  port?: number;
}

/** A completion for fault injection. */
export interface NativeWcInit {
  wrId?: bigint | number;
  status?: number;
  opcode?: number;
  byteLen?: number;
  qpNum?: number;
  imm?: number;
  vendorErr?: number;
}

/** Per-CQ counters kept by the native side. */
export interface NativeCqStats {
  events: number;
  acked: number;
  ackCalls: number;
  arms: number;
  polls: number;
  completions: number;
}

/** `ibv_qp_attr` fields used by `modify`. */
export interface NativeQpAttr {
  qpState?: number;
  accessFlags?: number;
  pkeyIndex?: number;
  portNum?: number;
  pathMtu?: number;
  destQpNum?: number;
  rqPsn?: number;
  sqPsn?: number;
  maxRdAtomic?: number;
  maxDestRdAtomic?: number;
  minRnrTimer?: number;
  timeout?: number;
  retryCnt?: number;
  rnrRetry?: number;
  ah?: {
    dlid?: number;
    sl?: number;
    portNum?: number;
    dgid?: string;
    sgidIndex?: number;
    hopLimit?: number;
    trafficClass?: number;
    flowLabel?: number;
  };
}

/** QP capacities. */
export interface NativeQpCap {
  maxSendWr: number;
  maxRecvWr: number;
  maxSendSge: number;
  maxRecvSge: number;
  maxInlineData: number;
}

/**
 * Receives channel wakeups, one call per wakeup: the CQs of explicit events
 * (one entry per event), and the fast-path CQs serviced with their results
 * as parallel arrays (`fastResults[i]` is `fastCqs[i]`'s batch bytes, or the
 * Error that CQ failed with).
 */
export interface WakeupOwner {
  handleWakeup(
    events: NativeCq[] | null,
    fastCqs: NativeCq[] | null,
    fastResults: Array<Uint8Array | Error> | null,
  ): void;
}

/** Receives async events (already acked). */
export interface AsyncOwner {
  handleAsync(events: NativeAsyncEvent[]): void;
}

/** An open device (`ibv_context`). */
export declare class NativeContext {
  private constructor();
  readonly deviceName: string;
  readonly provider: string;
  readonly closed: boolean;
  queryDevice(): NativeDeviceAttr;
  queryPort(port: number): NativePortAttr;
  queryGid(port: number, index: number): string;
  allocPd(): NativePd;
  createCompChannel(): NativeChannel;
  createCq(cqe: number, channel: NativeChannel | null, compVector?: number): NativeCq;
  /** Held weakly: async events alone never keep a context alive. */
  watchAsync(owner: AsyncOwner | null): void;
  readAsyncEvents(): NativeAsyncEvent[];
  /** Fault injection (a new view of the same hooks on every read). */
  readonly faults: NativeFaults;
  close(): void;
}

/**
 * A soft device's fault injection hooks. On other devices every method fails
 * with `EOPNOTSUPP`; once the context is closed, with `EBADF`.
 */
export declare class NativeFaults {
  private constructor();
  /** Overruns the CQ now (CQ_ERR, QPs on it to ERR). */
  overrun(cq: NativeCq): void;
  /** Adds an error completion to the CQ. */
  errorCompletion(cq: NativeCq, wc: NativeWcInit): void;
  /** Raises an event on the CQ with nothing to poll. */
  emptyEvent(cq: NativeCq): void;
  /** Adds a completion in the window between the last poll and the next arm. */
  completionBeforeArm(cq: NativeCq, wc: NativeWcInit): void;
  /** Makes the channel fd readable with no event behind it. */
  spuriousWakeup(channel: NativeChannel): void;
  /** Delays every completion by this many microseconds. */
  delayUs(us: number): void;
  /** Raises every completion event twice while on. */
  duplicateEvents(on: boolean): void;
  /** Raises DEVICE_FATAL: the device is dead. */
  deviceFatal(): void;
  /** Raises a port async event (rdma-core's event type number). */
  portEvent(type: number): void;
}

/** A protection domain. */
export declare class NativePd {
  private constructor();
  readonly closed: boolean;
  registerMemory(buffer: ArrayBufferView | ArrayBuffer, access: number): NativeMr;
  /** Page-aligned memory the library owns, registered; `buffer` views it. */
  allocMemory(size: number, access: number): { mr: NativeMr; buffer: ArrayBuffer };
  createQp(sendCq: NativeCq, recvCq: NativeCq, cap?: Partial<NativeQpCap>, sqSigAll?: boolean): NativeQp;
  close(): void;
}

/** A registered memory region. */
export declare class NativeMr {
  private constructor();
  readonly lkey: number;
  readonly rkey: number;
  readonly addr: bigint;
  readonly length: number;
  readonly access: number;
  readonly closed: boolean;
  close(): void;
}

/** A completion channel and its watcher. */
export declare class NativeChannel {
  private constructor();
  readonly fd: number;
  readonly closed: boolean;
  readonly watching: boolean;
  readonly hasRef: boolean;
  budget: number;
  readonly wakeups: { total: number; spurious: number };
  tryGetEvent(): NativeCq | null;
  /** Held weakly, strongly while watching (a subscription owns the channel). */
  setOwner(owner: WakeupOwner): void;
  watch(on: boolean): void;
  ref(): this;
  unref(): this;
  close(): void;
}

/** A completion queue. */
export declare class NativeCq {
  private constructor();
  readonly cqe: number;
  readonly unacked: number;
  readonly stats: NativeCqStats;
  readonly closed: boolean;
  requestNotify(solicitedOnly?: boolean): void;
  /** The batch's bytes (a region of a shared slab), or null when the CQ is empty. */
  poll(max?: number): Uint8Array | null;
  ack(n: number): void;
  /**
   * Hands the CQ to the channel's watcher (ack in batches of `ackEvery`,
   * re-arm, poll until empty). Returns what was already queued.
   */
  startFastPath(ackEvery?: number): Uint8Array | undefined;
  /** Keeps the CQ on the fast path but neither arms nor polls it (backpressure). */
  pauseFastPath(): void;
  /** Back to the explicit path; the events the watcher counted are acked. */
  stopFastPath(): void;
  close(): void;
}

/** An RC queue pair. */
export declare class NativeQp {
  private constructor();
  readonly qpNum: number;
  readonly state: number;
  readonly cap: NativeQpCap;
  readonly closed: boolean;
  modify(attr: NativeQpAttr, mask: number): void;
  postSend(packed: ArrayBufferView | ArrayBuffer, count: number): void;
  postRecv(packed: ArrayBufferView | ArrayBuffer, count: number): void;
  close(): void;
}

/** The addon's module exports. */
export interface NativeBinding {
  listDevices(): NativeDeviceInfo[];
  openDevice(name: string): NativeContext;
  createSoftDevice(options: {
    name: string;
    ports?: number;
    maxCqe?: number;
    maxQpWr?: number;
    maxSge?: number;
    maxInline?: number;
  }): void;
  hasIbverbs(): boolean;
  liveObjects(): number;
  Context: typeof NativeContext;
  Pd: typeof NativePd;
  Mr: typeof NativeMr;
  CompletionChannel: typeof NativeChannel;
  Cq: typeof NativeCq;
  Qp: typeof NativeQp;
  Faults: typeof NativeFaults;
}

let cached: NativeBinding | undefined;

/**
 * Loads the addon once per environment (each worker thread gets its own
 * instance data). `RX_VERBS_ADDON` overrides the path (sanitizer builds).
 */
export function binding(): NativeBinding {
  if (cached) return cached;
  const root = path.resolve(__dirname, '..', '..');
  const candidates = [
    process.env.RX_VERBS_ADDON,
    path.join(root, 'build', 'Release', 'rx_verbs.node'),
    path.join(root, 'build', 'Debug', 'rx_verbs.node'),
  ].filter((p): p is string => !!p);
  let lastError: unknown;
  for (const file of candidates) {
    try {
      cached = require(file) as NativeBinding;
      return cached;
    } catch (err) {
      lastError = err;
      if ((err as NodeJS.ErrnoException).code !== 'MODULE_NOT_FOUND') break;
    }
  }
  const error = new Error(
    `rx-verbs: the native addon is not built (looked in ${candidates.join(', ')}); run \`npm install\` or \`npx node-gyp rebuild\``,
  );
  (error as Error & { cause?: unknown }).cause = lastError;
  throw error;
}
