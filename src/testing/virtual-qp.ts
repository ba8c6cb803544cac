import type { SchedulerLike } from 'rxjs';
import type { CmQpState } from '../core/cm';
import { DEFAULT_RNR_RETRY_COUNT, WC_OPCODES, WC_STATUS_NAMES, WcStatus } from '../core/constants';
import { refuseClosed, verbsFailure, VerbsFailure } from '../core/refusals';
import { checkInt, checkU64 } from '../core/validate';
import type { VirtualCq } from './virtual-cq';
import { VirtualMr, VirtualPd } from './virtual-memory';
import type { VirtualSrq } from './virtual-srq';

/** A scatter/gather entry of a virtual work request: `length` bytes at `offset` of a {@link VirtualMr}. */
export interface VirtualSge {
  mr: VirtualMr;
  /** Byte offset in the region (default 0). */
  offset?: number;
  /** Bytes (default: the rest of the region). */
  length?: number;
}

/** A send work request on a virtual QP: a SEND, or an RDMA READ of the peer's memory. */
export interface VirtualSendWr {
  /** Returned in the completion: any 64-bit value. */
  wrId: bigint | number;
  /** Default `'SEND'`. */
  opcode?: 'SEND' | 'RDMA_READ';
  /** The bytes to send, or where the READ's bytes land. */
  sg: VirtualSge | readonly VirtualSge[];
  /** RDMA READ: the peer's memory (its region's address and rkey). */
  remote?: { addr: bigint | number; rkey: number };
  /** Produce a completion on success (default true; errors always complete). */
  signaled?: boolean;
}

/** A receive work request on a virtual QP. */
export interface VirtualRecvWr {
  wrId: bigint | number;
  sg: VirtualSge | readonly VirtualSge[];
}

/** A virtual QP's capacities, as the native `qp.cap`. */
export interface VirtualQpCap {
  readonly maxSendWr: number;
  readonly maxRecvWr: number;
  readonly maxSendSge: number;
  readonly maxRecvSge: number;
  readonly maxInlineData: number;
}

/** @internal What a virtual QP's data path runs on: its CM's clock and hop, its CQs and PD, and the QP at the other end. */
export interface VirtualLink {
  readonly scheduler: SchedulerLike;
  /** Frames one hop takes. */
  readonly latency: number;
  readonly sendCq: VirtualCq;
  readonly recvCq: VirtualCq;
  readonly pd: VirtualPd;
  /** The peer's QP, once paired by a connect request; `undefined` for none (or a scripted counterpart). */
  peer(): VirtualQp | undefined;
}

interface Sge {
  mr: VirtualMr;
  offset: number;
  length: number;
}

interface SendSlot {
  wrId: bigint;
  op: 'SEND' | 'RDMA_READ';
  sg: Sge[];
  length: number;
  remote: { addr: bigint; rkey: number } | undefined;
  signaled: boolean;
  /** The frame it (or its next retry) reaches the peer. */
  due: number;
  /** RNR retries left; set at the first "receiver not ready". */
  rnrLeft: number | undefined;
  /** Completed or flushed. */
  done: boolean;
}

interface RecvSlot {
  wrId: bigint;
  sg: Sge[];
  capacity: number;
}

const status = (name: WcStatus) => WC_STATUS_NAMES.indexOf(name);

/** Appends `badWr` (the index of the work request that was not posted) to an errno failure, as the addon does. */
function atWr(err: VerbsFailure, index: number): VerbsFailure {
  return Object.assign(err, { badWr: index });
}

/**
 * A queue pair in virtual time: the CM moves its state, and it moves real
 * bytes between the regions of the two ends of a connection, in frames:
 *
 * - `postSend` of a SEND reaches the peer one hop (the CM's `latency`)
 *   later: the bytes land in the peer's oldest posted receive and its
 *   receive completes there (`RECV`, `byteLen`, `srcQp`; a QP on a
 *   `VirtualSrq` takes one of its receives and moves no bytes); the SEND
 *   completes here one hop after that (the acknowledgement's way back). An
 *   RDMA READ takes the peer's bytes as they are when the request reaches
 *   it and lands them here, completing, one hop later. Work requests run
 *   in the order posted.
 * - No receive posted at the peer ("receiver not ready"): retried every
 *   round trip, `rnrRetryCount` times (7: for ever, until the peer posts
 *   one), then `RNR_RETRY_EXC_ERR` — with `rnrRetryCount: 0` at once, so a
 *   credit bug fails a marble test rather than slowing it.
 * - Protection as on a device: a region closed or of another PD
 *   (`LOC_PROT_ERR`), a READ whose rkey names no region of the peer's PD
 *   with `REMOTE_READ` or whose range passes its end (`REM_ACCESS_ERR`), a
 *   SEND larger than the receive (`REM_INV_REQ_ERR`, the receive
 *   `LOC_LEN_ERR`); a peer that is gone or not connected, or a scripted
 *   counterpart, which has no QP (`RETRY_EXC_ERR`). A failed work request
 *   moves the QP to the error state, and a responder that found the error
 *   goes there too.
 * - In the error state (a disconnect, a close, a failure) every posted
 *   work request completes with `WR_FLUSH_ERR`, in order; later posts are
 *   flushed at once; nothing lands in a region after its request was flushed.
 */
export class VirtualQp {
  /** Set at RTS: how often it resends an unacknowledged packet (as the CM derived it). */
  retryCount: number | undefined;
  /** Set at RTS: how often it resends after "receiver not ready" (as the CM derived it, or this side chose). */
  rnrRetryCount: number | undefined;
  /** Its capacities. */
  readonly cap: VirtualQpCap;
  private current: 'RESET' | CmQpState = 'RESET';
  private readonly sq: SendSlot[] = [];
  /** Index in `sq` of the first request that has not reached the peer. */
  private next = 0;
  private readonly rq: RecvSlot[] = [];
  /** Senders whose SEND waits for a receive here (RNR retry 7). */
  private readonly waiting = new Set<VirtualQp>();
  private parked = false;
  /** A request failed: nothing more runs; the QP enters the error state when its completion lands. */
  private halted = false;
  private isClosed = false;

  /**
   * @internal Made by the virtual CM with a connection's resources.
   * @param srq the shared receive queue it takes receives from, if any.
   */
  constructor(
    readonly qpNum: number,
    private readonly link: VirtualLink,
    cap: VirtualQpCap,
    readonly srq?: VirtualSrq,
  ) {
    this.cap = cap;
  }

  /** `'RESET'` until the CM moves it. */
  get state(): 'RESET' | CmQpState {
    return this.current;
  }

  /** True once destroyed. */
  get closed(): boolean {
    return this.isClosed;
  }

  /** Send work requests posted and not yet completed. */
  get sendsOutstanding(): number {
    return this.sq.length;
  }

  /** Receives posted and not yet taken by a message. */
  get receivesPosted(): number {
    return this.rq.length;
  }

  /** @internal The CM moves it; to `'ERR'` flushes what is posted. */
  modify(state: CmQpState): void {
    if (state === 'ERR') this.toError();
    else this.current = state;
  }

  /**
   * Posts send work requests (one or an array): SEND, or RDMA_READ with
   * `remote`. In the error state they complete with `WR_FLUSH_ERR` at once.
   * @throws TypeError / RangeError for a malformed request (nothing is
   *   posted); EBADF once closed; EINVAL (with `badWr`) unless in RTS;
   *   ENOMEM (with `badWr`) past `cap.maxSendWr` outstanding.
   */
  postSend(wr: VirtualSendWr | readonly VirtualSendWr[]): void {
    const verb = 'ibv_post_send';
    refuseClosed('queue pair', verb, this.isClosed);
    const list = Array.isArray(wr) ? (wr as readonly VirtualSendWr[]) : [wr as VirtualSendWr];
    const slots = list.map((w, i) => this.sendSlot(w, Array.isArray(wr) ? `wr[${i}]` : 'wr'));
    const hop = this.link.latency;
    for (let i = 0; i < slots.length; i++) {
      const s = slots[i];
      if (this.current === 'ERR') {
        this.sendCompletion(s, 'WR_FLUSH_ERR', 0);
        continue;
      }
      if (this.current !== 'RTS') throw atWr(verbsFailure('EINVAL', verb, 'the QP is not in RTS'), i);
      if (this.sq.length >= this.cap.maxSendWr) {
        throw atWr(verbsFailure('ENOMEM', verb, 'the send queue is full (maxSendWr WRs outstanding)'), i);
      }
      s.due = this.link.scheduler.now() + hop;
      this.sq.push(s);
      this.link.scheduler.schedule(() => this.run(), hop);
    }
  }

  /**
   * Posts receives (one or an array). In the error state they complete with
   * `WR_FLUSH_ERR` at once. A peer whose SEND waits for a receive retries
   * one hop later.
   * @throws TypeError / RangeError for a malformed request (nothing is
   *   posted); EBADF once closed; EINVAL on a QP with an SRQ, or (with
   *   `badWr`) in RESET; ENOMEM (with `badWr`) past `cap.maxRecvWr` posted.
   */
  postRecv(wr: VirtualRecvWr | readonly VirtualRecvWr[]): void {
    const verb = 'ibv_post_recv';
    refuseClosed('queue pair', verb, this.isClosed);
    if (this.srq) throw verbsFailure('EINVAL', verb, 'the QP receives from an SRQ: post receives to the SRQ');
    const list = Array.isArray(wr) ? (wr as readonly VirtualRecvWr[]) : [wr as VirtualRecvWr];
    const slots = list.map((w, i) => this.recvSlot(w, Array.isArray(wr) ? `wr[${i}]` : 'wr'));
    for (let i = 0; i < slots.length; i++) {
      if (this.current === 'ERR') {
        this.recvCompletion(slots[i], 'WR_FLUSH_ERR', 0, 0);
        continue;
      }
      if (this.current === 'RESET') throw atWr(verbsFailure('EINVAL', verb, 'the QP is in RESET (receives may be posted from INIT on)'), i);
      if (this.rq.length >= this.cap.maxRecvWr) {
        throw atWr(verbsFailure('ENOMEM', verb, 'the receive queue is full (maxRecvWr WRs outstanding)'), i);
      }
      this.rq.push(slots[i]);
      this.wakeSenders();
    }
  }

  /** Destroys it: what is posted is dropped without completions, as a destroyed QP's work requests are. Idempotent. */
  close(): void {
    this.isClosed = true;
    this.sq.length = 0;
    this.rq.length = 0;
    this.waiting.clear();
  }

  // ---- the requester ----------------------------------------------------------------

  /** Runs the requests that have reached the peer, in order, until one must wait. */
  private run(): void {
    const now = this.link.scheduler.now();
    while (!this.isClosed && !this.halted && !this.parked && this.current === 'RTS' && this.next < this.sq.length) {
      const s = this.sq[this.next];
      if (s.due > now || !this.execute(s)) return;
      this.next++;
    }
  }

  /** Carries out `s` at the peer; false when it must wait (receiver not ready). */
  private execute(s: SendSlot): boolean {
    if (!this.localOk(s.sg, s.op === 'RDMA_READ')) return this.failLater(s, 'LOC_PROT_ERR');
    const peer = this.link.peer();
    if (!peer || peer.isClosed || (peer.current !== 'RTR' && peer.current !== 'RTS')) return this.failLater(s, 'RETRY_EXC_ERR');
    if (s.op === 'RDMA_READ') {
      const bytes = peer.readFor(s.remote!, s.length);
      if (!bytes) return this.failLater(s, 'REM_ACCESS_ERR');
      this.completeLater(s, bytes);
      return true;
    }
    const answer = peer.receive(this, gather(s.sg, s.length));
    if (answer === 'RNR') return this.notReady(s, peer);
    if (answer !== 'SUCCESS') return this.failLater(s, answer);
    this.completeLater(s, undefined);
    return true;
  }

  /** The peer had no receive for `s`: retry or give up, as the RNR retry count says. */
  private notReady(s: SendSlot, peer: VirtualQp): boolean {
    const count = this.rnrRetryCount ?? DEFAULT_RNR_RETRY_COUNT;
    if (count === 7) {
      this.parked = true;
      peer.waiting.add(this);
      return false;
    }
    s.rnrLeft ??= count;
    if (s.rnrLeft === 0) return this.failLater(s, 'RNR_RETRY_EXC_ERR');
    s.rnrLeft--;
    const roundTrip = 2 * this.link.latency;
    s.due = this.link.scheduler.now() + roundTrip;
    this.link.scheduler.schedule(() => this.run(), roundTrip);
    return false;
  }

  /** A receive was posted at the peer: the parked SEND is retried, reaching it one hop later. */
  private wake(): void {
    if (!this.parked) return;
    this.parked = false;
    const hop = this.link.latency;
    const head = this.sq[this.next];
    if (head) head.due = this.link.scheduler.now() + hop;
    this.link.scheduler.schedule(() => this.run(), hop);
  }

  /** `s` succeeded at the peer: it completes (a READ's bytes landing) when the answer is back. */
  private completeLater(s: SendSlot, bytes: Buffer | undefined): void {
    this.link.scheduler.schedule(() => {
      if (this.isClosed || s.done) return; // flushed meanwhile: nothing lands
      if (bytes) {
        if (!this.localOk(s.sg, true)) {
          this.finish(s, 'LOC_PROT_ERR', 0);
          this.toError();
          return;
        }
        scatter(bytes, s.sg);
      }
      this.finish(s, 'SUCCESS', s.length);
    }, this.link.latency);
  }

  /** `s` failed: it completes so when the answer is back, and the QP enters the error state. */
  private failLater(s: SendSlot, why: WcStatus): boolean {
    this.halted = true;
    this.link.scheduler.schedule(() => {
      if (this.isClosed || s.done) return;
      this.finish(s, why, 0);
      this.toError();
    }, this.link.latency);
    return true;
  }

  private finish(s: SendSlot, why: WcStatus, byteLen: number): void {
    const at = this.sq.indexOf(s);
    if (at >= 0) {
      this.sq.splice(at, 1);
      if (at < this.next) this.next--;
    }
    if (why !== 'SUCCESS' || s.signaled) this.sendCompletion(s, why, byteLen);
  }

  private sendCompletion(s: SendSlot, why: WcStatus, byteLen: number): void {
    s.done = true;
    this.link.sendCq.addCompletions({ wrId: s.wrId, status: status(why), opcode: WC_OPCODES[s.op], byteLen, qpNum: this.qpNum });
  }

  // ---- the responder ----------------------------------------------------------------

  /** A SEND from `from` arrives with `bytes`: the oldest receive takes them. */
  private receive(from: VirtualQp, bytes: Buffer): WcStatus | 'RNR' {
    if (this.srq) return this.srq.take() ? 'SUCCESS' : 'RNR';
    const r = this.rq.shift();
    if (!r) return 'RNR';
    if (bytes.length > r.capacity) {
      this.recvCompletion(r, 'LOC_LEN_ERR', 0, from.qpNum);
      this.toError();
      return 'REM_INV_REQ_ERR';
    }
    if (!this.localOk(r.sg, true)) {
      this.recvCompletion(r, 'LOC_PROT_ERR', 0, from.qpNum);
      this.toError();
      return 'REM_OP_ERR';
    }
    scatter(bytes, r.sg);
    this.recvCompletion(r, 'SUCCESS', bytes.length, from.qpNum);
    return 'SUCCESS';
  }

  /** An RDMA READ of `length` bytes at `remote` arrives: what they hold now, or `undefined` (no access: this QP enters the error state). */
  private readFor(remote: { addr: bigint; rkey: number }, length: number): Buffer | undefined {
    if (length === 0) return Buffer.alloc(0);
    const mr = this.link.pd.remote(remote.rkey, remote.addr, length, 'REMOTE_READ');
    if (!mr) {
      this.toError();
      return undefined;
    }
    const at = Number(remote.addr - mr.addr);
    return Buffer.from(mr.buffer.subarray(at, at + length));
  }

  private recvCompletion(r: RecvSlot, why: WcStatus, byteLen: number, srcQp: number): void {
    this.link.recvCq.addCompletions({ wrId: r.wrId, status: status(why), opcode: WC_OPCODES.RECV, byteLen, qpNum: this.qpNum, srcQp });
  }

  private wakeSenders(): void {
    if (this.waiting.size === 0) return;
    const senders = [...this.waiting];
    this.waiting.clear();
    for (const q of senders) q.wake();
  }

  // ---- both -------------------------------------------------------------------------

  /** The error state: every posted request completes with `WR_FLUSH_ERR`, in order. */
  private toError(): void {
    if (this.current === 'ERR') return;
    this.current = 'ERR';
    this.parked = false;
    this.next = 0;
    for (const s of this.sq.splice(0)) if (!s.done) this.sendCompletion(s, 'WR_FLUSH_ERR', 0);
    for (const r of this.rq.splice(0)) this.recvCompletion(r, 'WR_FLUSH_ERR', 0, 0);
  }

  /** Whether every entry's region is open, of this QP's PD, and (for a write into it) allows LOCAL_WRITE. */
  private localOk(sg: Sge[], writes: boolean): boolean {
    return sg.every((e) => !e.mr.closed && e.mr.pd === this.link.pd && (!writes || e.mr.access.includes('LOCAL_WRITE')));
  }

  private sendSlot(wr: VirtualSendWr, at: string): SendSlot {
    if (typeof wr !== 'object' || wr === null) throw new TypeError(`${at} must be a work request object`);
    const op = wr.opcode ?? 'SEND';
    if (op !== 'SEND' && op !== 'RDMA_READ') throw new RangeError(`${at}.opcode: the virtual QP carries 'SEND' and 'RDMA_READ', got ${String(op)}`);
    const sg = entries(wr.sg, `${at}.sg`, this.cap.maxSendSge, 'ibv_post_send');
    let remote: SendSlot['remote'];
    if (op === 'RDMA_READ') {
      const r = wr.remote;
      if (typeof r !== 'object' || r === null) throw new TypeError(`${at}.remote ({ addr, rkey }) is required for RDMA_READ`);
      remote = { addr: u64(r.addr, `${at}.remote.addr`), rkey: u32(r.rkey, `${at}.remote.rkey`) };
    }
    if (wr.signaled !== undefined && typeof wr.signaled !== 'boolean') throw new TypeError(`${at}.signaled must be a boolean`);
    return {
      wrId: u64(wr.wrId, `${at}.wrId`),
      op,
      sg,
      length: sg.reduce((n, e) => n + e.length, 0),
      remote,
      signaled: wr.signaled ?? true,
      due: 0,
      rnrLeft: undefined,
      done: false,
    };
  }

  private recvSlot(wr: VirtualRecvWr, at: string): RecvSlot {
    if (typeof wr !== 'object' || wr === null) throw new TypeError(`${at} must be a work request object`);
    const sg = entries(wr.sg, `${at}.sg`, this.cap.maxRecvSge, 'ibv_post_recv');
    return { wrId: u64(wr.wrId, `${at}.wrId`), sg, capacity: sg.reduce((n, e) => n + e.length, 0) };
  }
}

/** A u64 field, checked as the native post checks it, as a bigint. */
function u64(value: unknown, what: string): bigint {
  return BigInt(checkU64(value, what));
}

/** A u32 field, checked as the native post checks it. */
function u32(value: unknown, what: string): number {
  return checkInt(value, what, 0, 0xffffffff);
}

/** The scatter/gather entries of a request, checked as the native post checks them. */
function entries(sg: unknown, what: string, max: number, verb: string): Sge[] {
  const list = Array.isArray(sg) ? (sg as unknown[]) : [sg];
  if (list.length > max) throw verbsFailure('EINVAL', verb, `${list.length} scatter/gather entries; the QP takes at most ${max}`);
  return list.map((entry, i) => {
    const at = Array.isArray(sg) ? `${what}[${i}]` : what;
    if (typeof entry !== 'object' || entry === null) throw new TypeError(`${at} must be { mr, offset, length }`);
    const { mr, offset = 0, length } = entry as VirtualSge;
    if (!(mr instanceof VirtualMr)) throw new TypeError(`${at}.mr must be a VirtualMr (resources.pd.allocMemory() or registerMemory())`);
    if (mr.closed) throw Object.assign(new Error(`${at}.mr is deregistered`), { code: 'EBADF' });
    const off = u32(offset, `${at}.offset`);
    const len = length === undefined ? mr.length - Math.min(off, mr.length) : u32(length, `${at}.length`);
    if (off + len > mr.length) throw new RangeError(`${at}: offset ${off} + length ${len} is past the end of the region (${mr.length} bytes)`);
    return { mr, offset: off, length: len };
  });
}

/** The bytes of `sg`, copied. */
function gather(sg: Sge[], length: number): Buffer {
  const out = Buffer.allocUnsafe(length);
  let at = 0;
  for (const e of sg) {
    e.mr.buffer.copy(out, at, e.offset, e.offset + e.length);
    at += e.length;
  }
  return out;
}

/** `bytes` into `sg`, in order. */
function scatter(bytes: Buffer, sg: Sge[]): void {
  let at = 0;
  for (const e of sg) {
    if (at >= bytes.length) return;
    const n = Math.min(e.length, bytes.length - at);
    bytes.copy(e.mr.buffer, e.offset, at, at + n);
    at += n;
  }
}
