/**
 * The typed face of the native addon: every class and method the C++ side
 * (src/native, one ObjectWrap per verbs object) defines, declared here with
 * its real types. The friendly API in src/verbs wraps them; apart from it,
 * only the benchmarks and the addon's own tests reach this module.
 * @packageDocumentation
 */
import * as fs from 'fs';
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
  /**
   * How atomic the device's atomics are (`ibv_atomic_cap`): `'NONE'` (no
   * atomics), `'HCA'` (indivisible against other atomics of this device;
   * rxe and soft0), `'GLOB'` (against the CPU too).
   */
  atomicCap: 'NONE' | 'HCA' | 'GLOB' | 'UNKNOWN';
  /** Most RDMA READs and atomics a QP answers at once (`max_qp_rd_atom`, bound of `maxDestRdAtomic`). */
  maxQpRdAtom: number;
  /** Most RDMA READs and atomics a QP has outstanding (`max_qp_init_rd_atom`, bound of `maxRdAtomic`). */
  maxQpInitRdAtom: number;
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
  srq?: NativeSrq;
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
  srcQp?: number;
  slid?: number;
  sl?: number;
  dlidPathBits?: number;
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
  /** UD: the QP's qkey. */
  qkey?: number;
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

/** What `query` reads (`ibv_query_qp`), in `modify`'s numbers. */
export interface NativeQpQuery {
  qpState: number;
  /** `enum ibv_mtu` (1 = 256 ... 5 = 4096). */
  pathMtu: number;
  destQpNum: number;
  rqPsn: number;
  sqPsn: number;
  retryCnt: number;
  rnrRetry: number;
  minRnrTimer: number;
  timeout: number;
  maxRdAtomic: number;
  maxDestRdAtomic: number;
  accessFlags: number;
  portNum: number;
  pkeyIndex: number;
  qkey: number;
  cap: NativeQpCap;
  /** The primary path; the GRH fields only when it is global. */
  ah: { dlid: number; sl: number; portNum: number; dgid?: string; sgidIndex?: number; hopLimit?: number; trafficClass?: number; flowLabel?: number };
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
 * What servicing one fast-path CQ gave: the CQ's slab, holding its batch
 * (see the counts and offsets beside it), or the Error it failed with.
 */
export type NativeFastResult = ArrayBuffer | Error;

/**
 * Receives channel wakeups, one call per wakeup: the CQs of explicit events
 * (one entry per event), and the fast-path CQs serviced with their results:
 * `counts[i]` completions at byte `byteOffsets[i]` of the slab
 * `fastResults[i]`, or, with a count of 0, the Error it failed with.
 * Several serviced CQs come as parallel arrays; the common single one comes
 * as the CQ, its result and two numbers themselves, which spares the addon
 * four arrays per wakeup, and batches come as numbers, not typed arrays.
 */
export interface WakeupOwner {
  handleWakeup(
    events: NativeCq[] | null,
    fastCqs: NativeCq | NativeCq[] | null,
    fastResults: NativeFastResult | NativeFastResult[] | null,
    byteOffsets: number | number[] | null,
    counts: number | number[] | null,
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
  /** `type` is `ibv_qp_type`: 2 (RC, the default) or 4 (UD). */
  createQp(
    sendCq: NativeCq,
    recvCq: NativeCq,
    cap?: Partial<NativeQpCap>,
    sqSigAll?: boolean,
    srq?: NativeSrq | null,
    type?: number,
  ): NativeQp;
  /** `ibv_create_srq`; a non-zero `limit` arms the limit event at once. */
  createSrq(maxWr: number, maxSge: number, limit: number): NativeSrq;
  /** `ibv_create_ah`; a `dgid` makes the address global (a GRH). */
  createAh(address: NativeAddress): NativeAh;
  close(): void;
}

/** An address vector (`ibv_ah_attr`) as the addon reads it. */
export interface NativeAddress {
  portNum?: number;
  dlid?: number;
  sl?: number;
  dgid?: string;
  sgidIndex?: number;
  hopLimit?: number;
  trafficClass?: number;
  flowLabel?: number;
}

/** An address handle. */
export declare class NativeAh {
  private constructor();
  readonly closed: boolean;
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
  /**
   * The batch's bytes (a region of a shared slab), or null when the CQ is
   * empty. Polls once, or busy-polls for up to `spinNs` nanoseconds until a
   * completion is there.
   */
  poll(max?: number, spinNs?: number): Uint8Array | null;
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
  /** `ibv_query_qp`: the state, the attributes and the capacities. */
  query(): NativeQpQuery;
  /**
   * On a UD QP each WR's `rkey` field indexes `ahs` and its `remote_addr`
   * is `remoteQpn | remoteQkey << 32` (see src/native/ud_wrs.h).
   */
  postSend(packed: ArrayBufferView | ArrayBuffer, count: number, ahs?: readonly NativeAh[]): void;
  postRecv(packed: ArrayBufferView | ArrayBuffer, count: number): void;
  close(): void;
}

/** A CM address: a numeric IPv4 or IPv6 host (no name lookup) and a port. */
export interface NativeCmAddress {
  host: string;
  port: number;
}

/** `rdma_conn_param` as the CM calls take it (limits in docs/ARCHITECTURE.md, Connections). */
export interface NativeCmConnParam {
  privateData?: Uint8Array;
  responderResources?: number;
  initiatorDepth?: number;
  /** Default 6 (`DEFAULT_RETRY_COUNT`, which says why). */
  retryCount?: number;
  /** Default 7, for ever (`DEFAULT_RNR_RETRY_COUNT`). */
  rnrRetryCount?: number;
  /** The QP this side of the connection uses (created on `openContext()`'s device). */
  qpNum: number;
  srq?: boolean;
}

/**
 * One CM event, copied and already acked natively (librdmacm's event type
 * numbers). For `CONNECT_REQUEST` (4) `id` is the new connection's id, now
 * owned by JS, and `listener` the listening id.
 */
export interface NativeCmEvent {
  type: number;
  /** 0, a negative errno, or (REJECTED) the reject reason. */
  status: number;
  id: NativeCmId;
  listener?: NativeCmId;
  privateData: Buffer;
  responderResources: number;
  initiatorDepth: number;
  retryCount: number;
  rnrRetryCount: number;
  qpNum: number;
  srq: boolean;
  /** Set when the reader answered CONNECT_RESPONSE itself (`connect(param, qp)`). */
  established?: boolean;
  /** A step the reader took for this event failed (the errno Error it threw). */
  error?: Error;
}

/** Receives CM events, one call per wakeup (never an empty array). */
export interface CmEventOwner {
  handleCmEvents(events: NativeCmEvent[]): void;
}

/** A CM event channel (`rdma_event_channel`, or the soft CM's) and its poller. */
export declare class NativeCmChannel {
  private constructor();
  /** `'rdmacm'` or `'soft'`. */
  readonly provider: string;
  readonly fd: number;
  readonly closed: boolean;
  /** Held weakly, strongly while watching. */
  setOwner(owner: CmEventOwner): void;
  watch(on: boolean): void;
  ref(): this;
  unref(): this;
  /** Reads what is pending now, without blocking (empty when nothing is). */
  readEvents(): NativeCmEvent[];
  /** `rdma_create_id` on this channel; port space TCP (0x0106) by default. */
  createId(portSpace?: number): NativeCmId;
  /** EBUSY while ids still use it. */
  close(): void;
}

/** An `rdma_cm_id`. Never has a QP attached: see `modifyQp`. */
export declare class NativeCmId {
  private constructor();
  readonly closed: boolean;
  readonly channel: NativeCmChannel;
  /** null until bound / resolved. */
  readonly localAddress: NativeCmAddress | null;
  readonly peerAddress: NativeCmAddress | null;
  bind(addr: NativeCmAddress): void;
  listen(backlog: number): void;
  /**
   * With `routeTimeoutMs`, the channel's reader resolves the route itself
   * when ADDR_RESOLVED arrives (that event is not delivered; ROUTE_RESOLVED
   * or ROUTE_ERROR is, or ADDR_RESOLVED with `error` when the route could
   * not be asked for).
   */
  resolveAddr(dst: NativeCmAddress, timeoutMs: number, src?: NativeCmAddress | null, routeTimeoutMs?: number): void;
  resolveRoute(timeoutMs: number): void;
  /** A context on the id's device (librdmacm: the CM's own ibv_context). ENODEV before it has one. */
  openContext(): NativeContext;
  /** Whether QPs made on `context` can serve this id (librdmacm: it is the CM's own ibv_context). */
  servesContext(context: NativeContext): boolean;
  /** Moves `qp` to INIT (1), RTR (2), RTS (3) or ERR (6) with what the CM derives (`rdma_init_qp_attr`). */
  modifyQp(qp: NativeQp, state: number, rnrRetry?: number): void;
  /**
   * With `qp`, the channel's reader answers CONNECT_RESPONSE itself: `qp`
   * to INIT (again, now with remote access), RTR, RTS, then
   * `rdma_establish`; the event arrives with `established: true`, or with
   * `error` when a step failed.
   */
  connect(param: NativeCmConnParam, qp?: NativeQp): void;
  accept(param: NativeCmConnParam): void;
  reject(privateData?: Uint8Array): void;
  /**
   * Answers CONNECT_RESPONSE once the QP is in RTS (`rdma_establish`). The
   * connection is then up on this side: no ESTABLISHED event follows here
   * (only the passive side gets one), as rdma_cm does for ids without a QP.
   */
  establish(): void;
  disconnect(): void;
  /** Later events go to `channel` (`rdma_migrate_id`). */
  migrate(channel: NativeCmChannel): void;
  /** Never blocks: events are acked when read. */
  close(): void;
}

/** What `ibv_query_srq` reports. */
export interface NativeSrqAttr {
  maxWr: number;
  maxSge: number;
  /** The armed limit; 0 when not armed (or once the limit event fired). */
  limit: number;
}

/** A shared receive queue. */
export declare class NativeSrq {
  private constructor();
  readonly closed: boolean;
  query(): NativeSrqAttr;
  /** `ibv_modify_srq(IBV_SRQ_LIMIT)`. */
  arm(limit: number): void;
  postRecv(packed: ArrayBufferView | ArrayBuffer, count: number): void;
  close(): void;
}

/** Options of `createSoftDevice()`: what the addon takes to make another soft device. */
export interface SoftDeviceOptions {
  /** Unique name, e.g. `'soft1'`. */
  name: string;
  /** Ports (default 1). */
  ports?: number;
  /** Largest CQ depth (default 65536). */
  maxCqe?: number;
  /** Largest queue depth of a QP (default 16384). */
  maxQpWr?: number;
  /** Most scatter/gather entries per WR (default 16). */
  maxSge?: number;
  /** Most inline bytes per send (default 256). */
  maxInline?: number;
  /**
   * Numeric IPv4/IPv6 addresses the soft CM answers on for this device
   * (none by default), so `listen()` / `connect()` reach it by address.
   */
  addresses?: string[];
}

/** The addon's module exports. */
export interface NativeBinding {
  listDevices(): NativeDeviceInfo[];
  openDevice(name: string): NativeContext;
  createSoftDevice(options: SoftDeviceOptions): void;
  hasIbverbs(): boolean;
  liveObjects(): number;
  Context: typeof NativeContext;
  Pd: typeof NativePd;
  Mr: typeof NativeMr;
  CompletionChannel: typeof NativeChannel;
  Cq: typeof NativeCq;
  Qp: typeof NativeQp;
  Srq: typeof NativeSrq;
  Faults: typeof NativeFaults;
  /**
   * A CM event channel: `'rdmacm'` (librdmacm; an errno Error of
   * `rdma_create_event_channel` naming what is missing when the library
   * cannot load or the kernel has no RDMA CM) or `'soft'` (the in-process
   * CM of soft devices).
   */
  createCmChannel(provider: 'rdmacm' | 'soft'): NativeCmChannel;
  /**
   * Whether an rdmacm channel can be made here (librdmacm loads and the
   * kernel's RDMA CM opens one, which is closed again), and if not why
   * (names what is missing).
   */
  rdmacmStatus(): { available: boolean; reason?: string };
  /** The addresses the soft CM answers on, per soft device (`{ soft0: ['127.0.0.1', '::1'] }`). */
  softCmAddresses(): Record<string, string[]>;
  /** Whether a soft device answers on `host` (a numeric address, any spelling). */
  softCmServes(host: string): boolean;
  CmChannel: typeof NativeCmChannel;
  CmId: typeof NativeCmId;
  Ah: typeof NativeAh;
}

let cached: NativeBinding | undefined;

/** node-gyp-build's lookup: build/Release, build/Debug, then prebuilds/<platform>-<arch>/. */
interface NodeGypBuild {
  resolve(dir: string): string;
}

/**
 * Loads the addon once per environment (each worker thread gets its own
 * instance data). `RX_VERBS_ADDON` overrides the path (sanitizer builds);
 * otherwise a source build (node-gyp's, beside binding.gyp in
 * `src/native/build/Release`: a clone's, or an installed package's built by
 * `npm run build:native`) wins over the prebuilt binary the published
 * package carries for linux-x64 and linux-arm64.
 */
export function binding(): NativeBinding {
  if (cached) return cached;
  const root = path.resolve(__dirname, '..', '..');
  let file = process.env.RX_VERBS_ADDON;
  const built = path.join(root, 'src', 'native', 'build', 'Release', 'rx_verbs.node');
  if (!file && fs.existsSync(built)) file = built;
  if (!file) {
    try {
      file = (require('node-gyp-build') as NodeGypBuild).resolve(root);
    } catch (err) {
      const error = new Error(
        `rx-verbs: no native addon for ${process.platform}-${process.arch} (no prebuilt binary, no source build): ` +
          'in a clone run `npm run build`; in an installed package build it from source with ' +
          '`npm explore rx-verbs -- npm run build:native` (needs a C++ compiler, make and python3)',
      );
      (error as Error & { cause?: unknown }).cause = err;
      throw error;
    }
  }
  cached = require(file) as NativeBinding;
  return cached;
}
