/**
 * The typed face of the native addon. The classes here are implemented in
 * C++ (src/native/*.cc); the friendly API in src/verbs wraps them. Nothing
 * outside src/verbs should import this module.
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

/** Receives channel wakeups: explicit events, and fast-path results as `[cq, batch bytes | Error, ...]`. */
export interface WakeupOwner {
  handleWakeup(events: NativeCq[] | null, fast: Array<NativeCq | Uint8Array | Error> | null): void;
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
  inject(kind: string, ...args: unknown[]): void;
  close(): void;
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
  /** 0 explicit, 1 fast path active, 2 fast path paused. */
  setFastPath(mode: 0 | 1 | 2, ackEvery?: number): Uint8Array | undefined;
  close(): void;
  /** Set by the TS wrapper so events map back to it. */
  owner?: unknown;
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
  owner?: unknown;
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
