import { ThreadBound } from '../core/thread-bound';
import type { NativeSrq, NativeSrqAttr } from '../native/binding';
import type { Pd } from './pd';
import { srqOwners } from './owners';
import { checkInt } from '../core/validate';
import { closeChildOf } from './lifecycle';
import { postReceives } from './receive-queue';
import type { RecvWr } from './work-request';

/** Options of {@link Pd.createSrq}. */
export interface CreateSrqOptions {
  /** Receives it can hold (the device may grant more: see {@link Srq.query}). */
  maxWr: number;
  /** Scatter/gather entries per receive (default 1). */
  maxSge?: number;
  /**
   * Arms the limit event at creation (see {@link Srq.arm}); default 0, not
   * armed. At most the granted `maxWr`: above it creation fails with
   * `EINVAL`, as `arm()` does.
   */
  limit?: number;
}

/** What {@link Srq.query} reports (`ibv_query_srq`). */
export type SrqAttr = NativeSrqAttr;

/**
 * A shared receive queue (`ibv_srq`): one pool of receives that every QP
 * created on it (`pd.createQp({ srq })`) draws from, one receive per
 * incoming message, in posting order, whichever QP the message arrives on.
 * A server with thousands of connections posts its receive buffers once,
 * here, instead of per QP. Completions still arrive on each QP's `recvCq`,
 * with the QP's number in `qpNum`.
 *
 * When the pool runs low the device can say so: {@link Srq.arm} sets a
 * limit, and `context.asyncEvents$` gets one `SRQ_LIMIT_REACHED` event
 * (with `srq`) once fewer receives than that remain. If it runs dry, a
 * sender gets receiver-not-ready (RNR) naks and retries as on any RC QP.
 *
 * UD QPs may be created on it too (`pd.createQp({ type: 'UD', qkey, srq })`):
 * a datagram then takes the next shared receive, which must hold the 40
 * bytes of GRH room in front of the message; with the pool empty the
 * datagram is dropped (UD has no RNR).
 *
 * Close it after the QPs that use it: while any remains, `close()` fails
 * with `EBUSY` (closing the PD closes them in the right order).
 */
export class Srq extends ThreadBound {
  /** @internal */
  readonly native: NativeSrq;
  /** The PD it belongs to. */
  readonly pd: Pd;

  /** @internal */
  constructor(native: NativeSrq, pd: Pd) {
    super();
    this.native = native;
    this.pd = pd;
    srqOwners.set(native, this);
  }

  /** True once closed. */
  get closed(): boolean {
    return this.native.closed;
  }

  /** The granted sizes and the armed limit (0 when not armed, as after the event). */
  query(): SrqAttr {
    return this.native.query();
  }

  /**
   * Arms the limit event (`ibv_modify_srq` with `IBV_SRQ_LIMIT`): once a
   * consumed receive leaves fewer than `limit` in the pool, one
   * `SRQ_LIMIT_REACHED` async event arrives and the limit disarms itself
   * (query says 0); arm again for the next one. 0 disarms.
   * @param limit 0 up to `query().maxWr`; above it `EINVAL`.
   */
  arm(limit: number): void {
    this.native.arm(checkInt(limit, 'limit', 0, 0xffffff));
  }

  /**
   * Posts receives (`ibv_post_srq_recv`), the same work requests and checks
   * as `Qp.postRecv`: past the pool's capacity `ENOMEM`, more entries
   * than `maxSge` `EINVAL` (`err.badWr` says which WR was not posted); a
   * closed SRQ is `EBADF` before anything its WRs name.
   */
  postRecv(wr: RecvWr | readonly RecvWr[]): void {
    postReceives(this.native, 'shared receive queue', 'ibv_post_srq_recv', wr);
  }

  /** Destroys the SRQ (`ibv_destroy_srq`); `EBUSY` while QPs use it. Idempotent. */
  close(): void {
    closeChildOf(this.pd, this, this.native);
  }
}
