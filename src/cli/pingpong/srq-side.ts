/**
 * One end of `rx-verbs pingpong --srq`, written after rdma-core's
 * `ibv_srq_pingpong` so the two behave the same on the wire: one buffer and
 * MR, one CQ of rx-depth + num-qp entries, one shared receive queue of
 * rx-depth receives, and num-qp RC QPs on it (one send slot each). Every QP
 * ping-pongs on its own; the counters and the receive refill are shared, as
 * the receives are.
 */
import { CompletionChannel, Context, Cq, Mr, Qp, Srq, WcBatch, openDevice, wcStatusName } from '../../index';
import { RECV_WRID, SEND_WRID, SideOptions, reportLines } from './side';
import { Dest, gidBytes, gidString, hasInterfaceId } from './wire';

/** What an SRQ side is made with. */
export interface SrqSideOptions extends SideOptions {
  /** QPs on the shared receive queue (`-q`). */
  numQp: number;
}

const LINK_LAYER_ETHERNET = 2;

/** One end: its verbs objects, counters and the reaction to each completion. */
export class SrqSide {
  readonly ctx: Context;
  readonly channel: CompletionChannel | undefined;
  readonly cq: Cq;
  readonly mr: Mr;
  readonly srq: Srq;
  readonly qps: Qp[] = [];
  readonly locals: Dest[] = [];
  /** Sends and receives completed, over every QP. */
  scnt = 0;
  rcnt = 0;
  /** Receives posted to the SRQ and not yet completed. */
  private routs = 0;
  /** Per QP: `RECV_WRID | SEND_WRID` bits still awaited before its next send. */
  private readonly pending: number[];
  private readonly byQpNum = new Map<number, number>();
  private inline = true;
  private startNs = 0n;
  private endNs = 0n;

  constructor(readonly options: SrqSideOptions) {
    const ctx = openDevice(options.device);
    this.ctx = ctx;
    try {
      this.channel = options.events ? ctx.createCompChannel() : undefined;
      const pd = ctx.allocPd();
      this.mr = pd.registerMemory(Buffer.alloc(options.size, 0x7b), { access: ['LOCAL_WRITE'] });
      this.cq = ctx.createCq({ cqe: options.rxDepth + options.numQp, channel: this.channel });
      this.srq = pd.createSrq({ maxWr: options.rxDepth, maxSge: 1 });
      for (let i = 0; i < options.numQp; i++) {
        const qp = pd.createQp({ sendCq: this.cq, recvCq: this.cq, srq: this.srq, cap: { maxSendWr: 1, maxSendSge: 1 } });
        this.inline &&= qp.cap.maxInlineData >= options.size;
        this.qps.push(qp);
        this.byQpNum.set(qp.qpNum, i);
      }
      this.pending = this.qps.map(() => 0);
      for (const qp of this.qps) qp.toInit({ port: options.ibPort, access: [] });
      this.postRecvs(options.rxDepth);
      if (this.routs < options.rxDepth) throw new Error(`Couldn't post receive (${this.routs})`);

      const port = ctx.queryPort(options.ibPort);
      if (port.linkLayer !== LINK_LAYER_ETHERNET && port.lid === 0) throw new Error("Couldn't get local LID");
      const gid = gidBytes(options.gidIndex === undefined ? undefined : ctx.queryGid(options.ibPort, options.gidIndex));
      for (const qp of this.qps) this.locals.push({ lid: port.lid, qpn: qp.qpNum, psn: qp.psn, gid });
    } catch (err) {
      ctx.close();
      throw err;
    }
  }

  /**
   * Each QP INIT -> RTR -> RTS towards the remote QP of the same index,
   * through the GRH when the first remote GID has an interface id (as
   * srq_pingpong decides it, once for all).
   */
  connect(remotes: readonly Dest[]): void {
    const global = hasInterfaceId(remotes[0].gid);
    const conn = {
      port: this.options.ibPort,
      mtu: this.options.mtu,
      sl: this.options.sl,
      gidIndex: global ? (this.options.gidIndex ?? 0) : undefined,
      timeout: 14,
      retryCnt: 7,
      rnrRetry: 7,
      minRnrTimer: 12,
    };
    this.qps.forEach((qp, i) => {
      const remote = remotes[i];
      const endpoint = { qpNum: remote.qpn, lid: remote.lid, psn: remote.psn, port: this.options.ibPort, gid: global ? gidString(remotes[0].gid) : undefined };
      qp.toRtr(endpoint, conn);
      qp.toRts(conn);
    });
  }

  /** Starts the clock; the client also sends the first message on every QP. */
  start(isClient: boolean): void {
    this.qps.forEach((_qp, i) => {
      this.pending[i] = RECV_WRID;
      if (isClient) {
        this.postSend(i);
        this.pending[i] |= SEND_WRID;
      }
    });
    this.startNs = process.hrtime.bigint();
  }

  /** As srq_pingpong: `iters` sends and receives in all, over every QP. */
  get done(): boolean {
    return this.rcnt >= this.options.iters && this.scnt >= this.options.iters;
  }

  /** Handles a batch of completions (srq_pingpong's loop body). */
  handle(batch: WcBatch): void {
    const { iters, rxDepth, numQp } = this.options;
    for (let i = 0; i < batch.length; i++) {
      const wrId = batch.wrIdWords[2 * i];
      const status = batch.status[i];
      if (status !== 0) throw new Error(`Failed status ${wcStatusName(status)} (${status}) for wr_id ${wrId}`);
      const q = this.byQpNum.get(batch.qpNum[i]);
      if (q === undefined) throw new Error(`Couldn't find QPN ${batch.qpNum[i].toString(16).padStart(6, '0')}`);
      if (wrId === SEND_WRID) {
        this.scnt++;
      } else if (wrId === RECV_WRID) {
        if (--this.routs <= numQp) {
          this.postRecvs(rxDepth - this.routs);
          if (this.routs < rxDepth) throw new Error(`Couldn't post receive (${this.routs})`);
        }
        this.rcnt++;
      } else {
        throw new Error(`Completion for unknown wr_id ${wrId}`);
      }
      this.pending[q] &= ~wrId;
      if (this.scnt < iters && this.pending[q] === 0) {
        this.postSend(q);
        this.pending[q] = RECV_WRID | SEND_WRID;
      }
    }
    if (this.done && this.endNs === 0n) this.endNs = process.hrtime.bigint();
  }

  /** srq_pingpong's two report lines (rc_pingpong's). */
  report(): string[] {
    return reportLines(this.options, Number((this.endNs || process.hrtime.bigint()) - this.startNs) / 1000);
  }

  /** Closes everything: the context closes the QPs before their SRQ. */
  close(): void {
    this.ctx.close();
  }

  private postRecvs(n: number): void {
    if (n <= 0) return;
    const wr = { wrId: RECV_WRID, sg: { mr: this.mr } };
    this.srq.postRecv(Array.from({ length: n }, () => wr));
    this.routs += n;
  }

  private postSend(q: number): void {
    this.qps[q].postSend({ wrId: SEND_WRID, opcode: 'SEND', sg: { mr: this.mr }, signaled: true, inline: this.inline });
  }
}
