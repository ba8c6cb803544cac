import { ThreadBound } from '../core/thread-bound';
import type { NativePd } from '../native/binding';
import type { AccessFlag } from '../core/constants';
import type { WorkCompletion } from '../core/wc-batch';
import type { Context } from './context';
import { Cq } from './cq';
import { Children, Closable } from './lifecycle';
import { Mr } from './mr';
import { Qp, QpCapOptions } from './qp';
import { CreateSrqOptions, Srq } from './srq';
import { UdQp } from './ud-qp';
import { Ah, AhOptions, addressFromWc, createAh } from './ah';
import { accessBits, checkInt, copyOptions, describe, optBool, optInt } from '../core/validate';

/** Options of {@link Pd.createQp}. */
export interface CreateQpOptions {
  /** `'RC'` (reliable connected, the default) or `'UD'` (unreliable datagram; needs `qkey`). */
  type?: 'RC' | 'UD';
  /** UD: the QP's qkey (32 bits); datagrams must carry it to be accepted. */
  qkey?: number;
  sendCq: Cq;
  recvCq: Cq;
  cap?: QpCapOptions;
  /** Every send produces a completion, whatever its `signaled` says. */
  sqSigAll?: boolean;
  /**
   * Receive from this shared receive queue (of the same PD): the QP has no
   * receive queue of its own (`cap.maxRecvWr`/`maxRecvSge` are ignored and
   * `qp.postRecv` fails with `EINVAL`); completions still go to `recvCq`.
   * RC and UD QPs alike (a UD receive takes its GRH room from the SRQ's buffers).
   */
  srq?: Srq;
}

const CREATE_QP_KEYS = ['type', 'sendCq', 'recvCq', 'cap', 'sqSigAll', 'srq', 'qkey'] as const;
const CREATE_SRQ_KEYS = ['maxWr', 'maxSge', 'limit'] as const;
const QP_CAP_KEYS = ['maxSendWr', 'maxRecvWr', 'maxSendSge', 'maxRecvSge', 'maxInlineData'] as const;

/**
 * A protection domain (`ibv_pd`): memory registered in it is reachable only
 * by QPs of the same PD.
 */
export class Pd extends ThreadBound {
  /** @internal */
  readonly native: NativePd;
  /** The context it was allocated on. */
  readonly context: Context;
  /** @internal Its MRs, QPs, SRQs and address handles. */
  readonly children = new Children();

  /** @internal */
  constructor(native: NativePd, context: Context) {
    super();
    this.native = native;
    this.context = context;
  }

  /** True once closed. */
  get closed(): boolean {
    return this.native.closed;
  }

  /**
   * Registers memory (`ibv_reg_mr`). The region holds the memory until it is
   * closed, whatever happens to `buffer`'s JS objects (it keeps V8's backing
   * store, so the memory is never freed or reused under the device).
   *
   * Registering a user buffer is for buffers that stay put. A resizable
   * `ArrayBuffer` or growable `SharedArrayBuffer` (or a view on one) is
   * refused with a `TypeError`: a resize can decommit or move its pages.
   * If the `ArrayBuffer` is detached while registered (transferred with
   * `postMessage`/`structuredClone`, `ArrayBuffer.prototype.transfer`), the
   * region is dead: posting a work request whose scatter/gather list names
   * it fails with `EFAULT` (`err.badWr`), and a work request that reaches it
   * by rkey completes with a protection error (`REM_ACCESS_ERR`, or
   * `LOC_PROT_ERR` for a local entry) on `soft` devices. What this cannot
   * guard is listed in the README ("Registered memory"): on real hardware a
   * detached region is still registered with the NIC, and a peer's RDMA
   * WRITE still lands in it (in memory this region keeps, never in anyone
   * else's). Prefer {@link Pd.allocMemory} for memory that JS code may pass
   * around.
   * @param buffer the memory: a Buffer, typed array, DataView or fixed-length ArrayBuffer.
   * @param options `access`: flag names, default `['LOCAL_WRITE']`; remote write needs local write.
   * @throws TypeError for a resizable, growable or detached buffer; RangeError for an empty one.
   */
  registerMemory(buffer: ArrayBufferView | ArrayBuffer, options?: { access?: readonly AccessFlag[] }): Mr {
    const { access: names } = copyOptions(options, ['access'], 'options');
    const access = accessBits(names ?? ['LOCAL_WRITE']);
    const native = this.native.registerMemory(buffer, access);
    const view = ArrayBuffer.isView(buffer)
      ? Buffer.from(buffer.buffer, buffer.byteOffset, buffer.byteLength)
      : Buffer.from(buffer as ArrayBuffer);
    return this.children.add('MR', new Mr(native, this, view));
  }

  /**
   * Allocates `size` zeroed bytes of page-aligned memory owned by the
   * library and registers them: the safe way to get memory for RDMA. The
   * memory lives until the region is closed *and* its JS handle is gone,
   * whatever JS does with the handle meanwhile: `mr.buffer` may be
   * transferred to a worker or collected and the region keeps working (a
   * transfer moves the view, not the memory; the device and the new owner
   * then share it). Memory is rounded up to whole pages (not shared with
   * any other allocation, so it is safe to fork and to register on any
   * NIC); `mr.length` is `size`.
   * @example
   * ```ts
   * const mr = pd.allocMemory(1 << 20, { access: ['LOCAL_WRITE', 'REMOTE_WRITE'] });
   * mr.buffer.write('hello');
   * ```
   * @param size bytes, an integer from 1 to 2^32.
   * @param options `access`: flag names, default `['LOCAL_WRITE']`.
   */
  allocMemory(size: number, options?: { access?: readonly AccessFlag[] }): Mr {
    if (typeof size !== 'number') throw new TypeError(`size must be a number of bytes, got ${describe(size)}`);
    const access = accessBits(options?.access ?? ['LOCAL_WRITE']);
    const { mr, buffer } = this.native.allocMemory(size, access);
    return this.children.add('MR', new Mr(mr, this, Buffer.from(buffer)));
  }

  /**
   * Creates a queue pair (`ibv_create_qp`): RC, or UD with
   * `{ type: 'UD', qkey }` (a {@link UdQp}).
   */
  createQp(options: CreateQpOptions & { type: 'UD' }): UdQp;
  createQp(options: CreateQpOptions): Qp;
  createQp(options: CreateQpOptions): Qp {
    if (typeof options !== 'object' || options === null) throw new TypeError(`options must be an object, got ${describe(options)}`);
    // Each field read once, into plain values, before anything native runs.
    const { type, sendCq, recvCq, cap, sqSigAll, srq, qkey } = copyOptions(options, CREATE_QP_KEYS, 'options');
    if (type !== undefined && type !== 'RC' && type !== 'UD') throw new RangeError(`type must be 'RC' or 'UD', got ${describe(type)}`);
    const ud = type === 'UD';
    if (ud && qkey === undefined) throw new TypeError('a UD QP needs a qkey');
    if (!ud && qkey !== undefined) throw new TypeError('qkey is for UD QPs only');
    const udQkey = ud ? checkInt(qkey, 'qkey', 0, 0xffffffff) : 0;
    if (!(sendCq instanceof Cq)) throw new TypeError('sendCq must be a Cq from context.createCq()');
    if (!(recvCq instanceof Cq)) throw new TypeError('recvCq must be a Cq from context.createCq()');
    const capCopy = copyOptions(cap, QP_CAP_KEYS, 'cap');
    const sigAll = optBool(sqSigAll, 'sqSigAll', false);
    if (srq !== undefined && !(srq instanceof Srq)) throw new TypeError('srq must be an Srq from pd.createSrq()');
    const native = this.native.createQp(sendCq.native, recvCq.native, capCopy, sigAll, srq?.native ?? null, ud ? 4 : 2);
    const qp = ud ? new UdQp(native, this, sendCq, recvCq, udQkey, srq) : new Qp(native, this, sendCq, recvCq, srq);
    return this.children.add('QP', qp);
  }

  /**
   * Creates a shared receive queue (`ibv_create_srq`) for QPs of this PD.
   * @example
   * ```ts
   * const srq = pd.createSrq({ maxWr: 1024, limit: 64 });
   * const qp = pd.createQp({ sendCq: cq, recvCq: cq, srq });
   * srq.postRecv({ wrId: 1n, sg: { mr, offset: 0, length: 4096 } });
   * ```
   * @param options `maxWr` (1 up to the device's `maxQpWr`), `maxSge` (default 1), `limit` (default 0,
   *   at most the granted `maxWr`).
   * @throws TypeError/RangeError for bad options; `EINVAL` beyond the device's limits or for a
   *   `limit` above the granted `maxWr` (the rule `srq.arm()` follows).
   */
  createSrq(options: CreateSrqOptions): Srq {
    if (typeof options !== 'object' || options === null) throw new TypeError(`options must be an object, got ${describe(options)}`);
    const { maxWr, maxSge, limit } = copyOptions(options, CREATE_SRQ_KEYS, 'options');
    const native = this.native.createSrq(
      checkInt(maxWr, 'maxWr', 1, 0xffffff),
      optInt(maxSge, 'maxSge', 0, 0xffff, 1),
      optInt(limit, 'limit', 0, 0xffffff, 0),
    );
    return this.children.add('SRQ', new Srq(native, this));
  }

  /**
   * Creates an address handle (`ibv_create_ah`): a destination for UD sends,
   * by LID or, with `gid` (required on RoCE), by GID with a GRH.
   * @example
   * ```ts
   * const ah = pd.createAh({ gid: peer.gid, gidIndex: 0 });
   * qp.postSend({ wrId: 1, sg: { mr, length: 64 }, ah, remoteQpn: peer.qpNum, remoteQkey: 0x11111111 });
   * ```
   */
  createAh(address: AhOptions): Ah {
    return this.children.add('AH', createAh(this, address));
  }

  /**
   * Creates the address handle that answers a received datagram
   * (rdma-core's `ibv_create_ah_from_wc`): from the completion, the
   * sender's LID and service level; when it has the `GRH` flag, the
   * sender's GID from the GRH (see {@link readGrh}), sent from the local
   * GID the datagram was addressed to. Send the answer to `wc.srcQp` with
   * the qkey the protocol uses.
   * @example
   * ```ts
   * const wc = batch.at(i)!; // a successful UD receive into `recv` at `offset`
   * const ah = pd.createAhFromWc(wc, recv.buffer.subarray(offset));
   * qp.postSend({ wrId: 1, sg: { mr: reply }, ah, remoteQpn: wc.srcQp, remoteQkey: QKEY });
   * ```
   * @param wc the receive's completion (`flags`, `slid` and `sl` are read).
   * @param grh the receive buffer from where the receive started: its first 40 bytes.
   * @param port the local port the datagram arrived on (default 1).
   * @throws RangeError when the completion has neither a GRH nor a source LID, or the
   *   GRH area holds no header; an Error with `code: 'EINVAL'` when the GID it was sent
   *   to is not in the port's table.
   */
  createAhFromWc(wc: Pick<WorkCompletion, 'flags' | 'slid' | 'sl'>, grh: ArrayBufferView | ArrayBufferLike, port = 1): Ah {
    return this.createAh(addressFromWc(this, wc, grh, port));
  }

  /**
   * Closes every object made from it — QPs, SRQs, address handles and MRs —
   * in the teardown order, then deallocates the PD (`ibv_dealloc_pd`).
   * Idempotent. (The verb itself refuses, `EBUSY`, while any of them lives:
   * that is why they go first.)
   */
  close(): void {
    if (this.native.closed) return;
    this.children.closeAll();
    this.native.close();
    this.context.forget(this);
  }

  /** @internal A child closed itself: it leaves the teardown list. */
  forget(child: Closable): void {
    this.children.delete(child);
  }
}
