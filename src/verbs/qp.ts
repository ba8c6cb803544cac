import { ThreadBound } from '../core/thread-bound';
import type { NativeAh, NativeQp, NativeQpCap } from '../native/binding';
import {
  DEFAULT_RETRY_COUNT,
  DEFAULT_RNR_RETRY_COUNT,
  MTU_BYTES,
  QP_STATE_NAMES,
  QpState,
  AccessFlag,
  accessFlagNames,
} from '../core/constants';
import { refuseClosed } from '../core/refusals';
import type { AhOptions } from './ah';
import type { Cq } from './cq';
import type { Pd } from './pd';
import type { Srq } from './srq';
import { accessBits, optInt, checkInt, checkObject, copyOptions } from '../core/validate';
import { RecvWr, SendWr, WrEncoder } from './work-request';
import { qpOwners } from './owners';
import { QP_ATTR_MASK, RC_TRANSITION_MASK } from './qp-attr-mask';
import { closeChildOf } from './lifecycle';
import { postReceives } from './receive-queue';

/** QP capacities asked for at creation. */
export type QpCapOptions = Partial<NativeQpCap>;

/** What a peer needs to connect to a QP (exchanged out of band). */
export interface Endpoint {
  qpNum: number;
  /** Port LID (InfiniBand); 0 on RoCE. */
  lid: number;
  /** Port GID (RoCE, or routed IB), or undefined. */
  gid?: string;
  /** Initial packet sequence number. */
  psn: number;
  /** Local port the QP uses. */
  port: number;
}

/** Options of {@link Qp.connect}. */
export interface ConnectOptions {
  /** Local port (default 1). */
  port?: number;
  /** Local GID index; set it on RoCE (default: none, LID routing). */
  gidIndex?: number;
  /** Path MTU in bytes: 256, 512, 1024 (default), 2048, 4096. */
  mtu?: number;
  /**
   * Remote access this QP grants (default LOCAL_WRITE, REMOTE_WRITE,
   * REMOTE_READ; add REMOTE_ATOMIC to answer atomics).
   */
  access?: readonly AccessFlag[];
  /**
   * RNR retries before failing a send; 7 means forever (default 7,
   * {@link DEFAULT_RNR_RETRY_COUNT}).
   */
  rnrRetry?: number;
  /**
   * Transport retries before a send fails with `RETRY_EXC_ERR`, 0-7
   * (default 6, {@link DEFAULT_RETRY_COUNT}, which says why not 7).
   */
  retryCnt?: number;
  /** Local ACK timeout exponent (default 14). */
  timeout?: number;
  /** Minimum RNR NAK timer code (default 12). */
  minRnrTimer?: number;
  /** Service level (default 0). */
  sl?: number;
  /**
   * RDMA READs and atomics this QP may have outstanding as requester
   * (`max_rd_atomic`, RTS; default 1). 0 means none: on rxe (and soft0) such
   * a WR then waits at the head of the send queue forever.
   */
  maxRdAtomic?: number;
  /**
   * RDMA READs and atomics this QP answers at once as responder
   * (`max_dest_rd_atomic`, RTR; default 1). 0 means none: an RDMA READ or
   * an atomic sent to it fails with `REM_INV_REQ_ERR` (rxe and soft0 alike).
   */
  maxDestRdAtomic?: number;
}

/**
 * What {@link Qp.query} reports (`ibv_query_qp`), as plain JSON-safe
 * values: names where rdma-core has names, the MTU in bytes.
 */
export interface QpAttributes {
  /** The current state (`'RESET'`, `'INIT'`, `'RTR'`, `'RTS'`, `'ERR'`, ...). */
  state: QpState;
  /** The path MTU in bytes (256 ... 4096; 0 when the device reports none). */
  pathMtu: number;
  /** The remote QP number (RC; 0 until RTR). */
  destQpNum: number;
  /** The PSN this side sends from (set at RTS). */
  sqPsn: number;
  /** The PSN this side expects first (set at RTR). */
  rqPsn: number;
  /** Transport retries before `RETRY_EXC_ERR` (`retry_cnt`, 0-7). */
  retryCount: number;
  /** Receiver-not-ready retries (`rnr_retry`, 0-7; 7 means for ever). */
  rnrRetry: number;
  /** The minimum RNR NAK timer code this side asks senders to wait (0-31). */
  minRnrTimer: number;
  /** The local ACK timeout exponent (4.096 us x 2^timeout; 0 means none). */
  timeout: number;
  /** RDMA READs and atomics outstanding as requester (`max_rd_atomic`). */
  maxRdAtomic: number;
  /** RDMA READs and atomics answered at once as responder (`max_dest_rd_atomic`). */
  maxDestRdAtomic: number;
  /** The remote access the QP grants. */
  accessFlags: AccessFlag[];
  /** The local port. */
  portNum: number;
  /** The P_Key index. */
  pkeyIndex: number;
  /** UD: the QP's qkey (0 on RC). */
  qkey: number;
  /** The capacities (the SRQ's sizes apply to a QP on an SRQ: its receive sizes are 0). */
  cap: NativeQpCap;
  /** RC: the primary path's address (`ah_attr`), in {@link AhOptions}' names; `gid` and the GRH fields only for a global (GID-routed) path. */
  ah: Required<Pick<AhOptions, 'port' | 'lid' | 'sl'>> & Omit<AhOptions, 'port' | 'lid' | 'sl'>;
}

const encoder = new WrEncoder();

const CONNECT_KEYS = ['port', 'gidIndex', 'mtu', 'access', 'rnrRetry', 'retryCnt', 'timeout', 'minRnrTimer', 'sl', 'maxRdAtomic', 'maxDestRdAtomic'] as const;
const ENDPOINT_KEYS = ['qpNum', 'lid', 'gid', 'psn', 'port'] as const;

/**
 * A reliable-connected queue pair (`ibv_qp`, RC). Connect it with
 * {@link Qp.connect} (INIT -> RTR -> RTS) using the peer's
 * {@link Qp.endpoint}, then post work requests; their completions arrive on
 * the send and receive CQs.
 */
export class Qp extends ThreadBound {
  /** @internal */
  readonly native: NativeQp;
  /** The PD it belongs to. */
  readonly pd: Pd;
  /** CQ for send completions. */
  readonly sendCq: Cq;
  /** CQ for receive completions. */
  readonly recvCq: Cq;
  /** The shared receive queue it receives from, if created on one. */
  readonly srq: Srq | undefined;
  /** The QP number. */
  readonly qpNum: number;
  /** The PSN this side starts sending with (random, as rc_pingpong does). */
  readonly psn: number = Math.floor(Math.random() * 0xffffff);

  /** @internal */
  constructor(native: NativeQp, pd: Pd, sendCq: Cq, recvCq: Cq, srq?: Srq) {
    super();
    this.native = native;
    this.pd = pd;
    this.sendCq = sendCq;
    this.recvCq = recvCq;
    this.srq = srq;
    this.qpNum = native.qpNum;
    qpOwners.set(native, this);
  }

  /** The current state (`'RESET'`, `'INIT'`, `'RTR'`, `'RTS'`, `'ERR'`, ...). */
  get state(): QpState {
    return QP_STATE_NAMES[this.native.state];
  }

  /** The capacities the device granted. */
  get cap(): NativeQpCap {
    return this.native.cap;
  }

  /**
   * Reads the QP's state and attributes from the device (`ibv_query_qp`):
   * what {@link Qp.connect} (or a CM connection) set, as the device holds
   * it now.
   * @example
   * ```ts
   * qp.connect(peer.endpoint(), { mtu: 4096 });
   * const { state, pathMtu, destQpNum, retryCount } = qp.query(); // 'RTS', 4096, peer.qpNum, 6
   * ```
   * @throws an Error with `code: 'EBADF'` once the QP is closed.
   */
  query(): QpAttributes {
    const a = this.native.query();
    const ah: QpAttributes['ah'] = { port: a.ah.portNum, lid: a.ah.dlid, sl: a.ah.sl };
    if (a.ah.dgid !== undefined) {
      ah.gid = a.ah.dgid;
      ah.gidIndex = a.ah.sgidIndex;
      ah.hopLimit = a.ah.hopLimit;
      ah.trafficClass = a.ah.trafficClass;
      ah.flowLabel = a.ah.flowLabel;
    }
    return {
      state: QP_STATE_NAMES[a.qpState],
      pathMtu: MTU_BYTES[a.pathMtu] ?? 0,
      destQpNum: a.destQpNum,
      sqPsn: a.sqPsn,
      rqPsn: a.rqPsn,
      retryCount: a.retryCnt,
      rnrRetry: a.rnrRetry,
      minRnrTimer: a.minRnrTimer,
      timeout: a.timeout,
      maxRdAtomic: a.maxRdAtomic,
      maxDestRdAtomic: a.maxDestRdAtomic,
      accessFlags: accessFlagNames(a.accessFlags),
      portNum: a.portNum,
      pkeyIndex: a.pkeyIndex,
      qkey: a.qkey,
      cap: a.cap,
      ah,
    };
  }

  /** True once closed. */
  get closed(): boolean {
    return this.native.closed;
  }

  /** This QP's side of the connection exchange. */
  endpoint(options?: { port?: number; gidIndex?: number }): Endpoint {
    const { port: rawPort, gidIndex } = copyOptions(options, ['port', 'gidIndex'], 'options');
    const port = optInt(rawPort, 'port', 1, 255, 1);
    const ctx = this.pd.context;
    const attr = ctx.queryPort(port);
    const gid = gidIndex === undefined ? undefined : ctx.queryGid(port, gidIndex);
    return { qpNum: this.qpNum, lid: attr.lid, gid, psn: this.psn, port };
  }

  /** RESET -> INIT. */
  toInit(options?: { port?: number; access?: readonly AccessFlag[] }): void {
    const { port, access } = copyOptions(options, ['port', 'access'], 'options');
    this.native.modify(
      {
        qpState: 1,
        pkeyIndex: 0,
        portNum: optInt(port, 'port', 1, 255, 1),
        accessFlags: accessBits(access ?? ['LOCAL_WRITE', 'REMOTE_WRITE', 'REMOTE_READ']),
      },
      RC_TRANSITION_MASK.INIT,
    );
  }

  /** INIT -> RTR, towards `remote`. */
  toRtr(remoteEndpoint: Endpoint, connectOptions?: ConnectOptions): void {
    checkObject(remoteEndpoint, 'remote endpoint');
    // Read once, into plain values, before anything native runs.
    const remote = copyOptions(remoteEndpoint, ENDPOINT_KEYS, 'remote endpoint');
    const options = copyOptions(connectOptions, CONNECT_KEYS, 'options');
    const port = optInt(options?.port, 'port', 1, 255, 1);
    const mtu = optInt(options?.mtu, 'mtu', 256, 4096, 1024);
    const mtuCode = MTU_BYTES.indexOf(mtu as (typeof MTU_BYTES)[number]);
    if (mtuCode < 1) throw new RangeError(`mtu must be 256, 512, 1024, 2048 or 4096, got ${mtu}`);
    const ah: NonNullable<Parameters<NativeQp['modify']>[0]['ah']> = {
      dlid: checkInt(remote.lid, 'remote.lid', 0, 0xffff),
      sl: optInt(options?.sl, 'sl', 0, 15, 0),
      portNum: port,
    };
    if (remote.gid !== undefined && options?.gidIndex !== undefined) {
      ah.dgid = remote.gid;
      ah.sgidIndex = checkInt(options.gidIndex, 'gidIndex', 0, 255);
      ah.hopLimit = 1;
    }
    this.native.modify(
      {
        qpState: 2,
        pathMtu: mtuCode,
        destQpNum: checkInt(remote.qpNum, 'remote.qpNum', 0, 0xffffff),
        rqPsn: checkInt(remote.psn, 'remote.psn', 0, 0xffffff),
        maxDestRdAtomic: optInt(options?.maxDestRdAtomic, 'maxDestRdAtomic', 0, 255, 1),
        minRnrTimer: optInt(options?.minRnrTimer, 'minRnrTimer', 0, 31, 12),
        ah,
      },
      RC_TRANSITION_MASK.RTR,
    );
  }

  /** RTR -> RTS. */
  toRts(connectOptions?: ConnectOptions): void {
    const options = copyOptions(connectOptions, CONNECT_KEYS, 'options');
    this.native.modify(
      {
        qpState: 3,
        timeout: optInt(options?.timeout, 'timeout', 0, 31, 14),
        retryCnt: optInt(options?.retryCnt, 'retryCnt', 0, 7, DEFAULT_RETRY_COUNT),
        rnrRetry: optInt(options?.rnrRetry, 'rnrRetry', 0, 7, DEFAULT_RNR_RETRY_COUNT),
        sqPsn: this.psn,
        maxRdAtomic: optInt(options?.maxRdAtomic, 'maxRdAtomic', 0, 255, 1),
      },
      RC_TRANSITION_MASK.RTS,
    );
  }

  /** INIT -> RTR -> RTS towards `remote` (from RESET). */
  connect(remoteEndpoint: Endpoint, connectOptions?: ConnectOptions): void {
    checkObject(remoteEndpoint, 'remote endpoint');
    const remote = copyOptions(remoteEndpoint, ENDPOINT_KEYS, 'remote endpoint');
    const options = copyOptions(connectOptions, CONNECT_KEYS, 'options');
    if (this.state === 'RESET') this.toInit({ port: options.port, access: options.access });
    this.toRtr(remote, options);
    this.toRts(options);
  }

  /** Moves the QP to the error state: outstanding WRs flush with `WR_FLUSH_ERR`. */
  toError(): void {
    this.native.modify({ qpState: 6 }, QP_ATTR_MASK.STATE);
  }

  /**
   * Posts one or more send work requests (`ibv_post_send`). All are checked
   * before any is posted; past the send queue's capacity it fails with
   * `ENOMEM` and `err.badWr` says which WR was not posted.
   * @throws an Error with `code: 'EBADF'` once the QP is closed, whatever
   *   its WRs name: the QP's own state is checked first, then each WR (a
   *   deregistered MR, a closed address handle: `EBADF` naming the field).
   */
  postSend(wr: SendWr | readonly SendWr[]): void {
    refuseClosed('queue pair', 'ibv_post_send', this.native.closed);
    const ahs: NativeAh[] | undefined = this.datagrams ? [] : undefined;
    const count = encoder.encodeSend(wr, ahs);
    if (count === 0) return;
    this.native.postSend(encoder.bytes, count, ahs);
  }

  /** @internal True for a UD QP: its sends name an address handle. */
  protected get datagrams(): boolean {
    return false;
  }

  /**
   * Posts one or more receive work requests (`ibv_post_recv`); checked as
   * {@link Qp.postSend} checks, the QP's own state first.
   */
  postRecv(wr: RecvWr | readonly RecvWr[]): void {
    postReceives(this.native, 'queue pair', 'ibv_post_recv', wr);
  }

  /** Destroys the QP (`ibv_destroy_qp`). Idempotent. */
  close(): void {
    if (!closeChildOf(this.pd, this, this.native)) return;
    const closed = this.onClosed;
    this.onClosed = undefined;
    closed?.();
  }

  /**
   * @internal Called once when the QP closes, whoever closes it (its PD or
   * context among them): a connection ends when its QP goes under it.
   */
  onClosed: (() => void) | undefined;
}
