/**
 * One end of a ping-pong: the verbs objects rc_pingpong makes (one buffer,
 * one MR, one CQ of rx-depth + 1 entries, one RC QP with one send slot and
 * rx-depth receive slots) and its state machine, written after rdma-core's
 * `ibv_rc_pingpong` so the two behave the same on the wire.
 */
import { CompletionChannel, Context, Cq, Mr, Qp, WcBatch, openDevice, wcStatusName } from '../../index';
import { Dest, gidBytes, hasInterfaceId, gidString } from './wire';

/** `wr_id`s, as rc_pingpong uses them (also as bits of `pending`). */
export const RECV_WRID = 1;
export const SEND_WRID = 2;

/** What a side is made with (the command's options). */
export interface SideOptions {
  device: string;
  ibPort: number;
  gidIndex: number | undefined;
  size: number;
  iters: number;
  rxDepth: number;
  mtu: number;
  sl: number;
  events: boolean;
}

const LINK_LAYER_ETHERNET = 2;

/** The two report lines rdma-core's pingpongs print, for `usec` microseconds of exchanges. */
export function reportLines({ size, iters }: { size: number; iters: number }, usec: number): string[] {
  const bytes = size * iters * 2;
  const secs = (usec / 1e6).toFixed(2);
  return [
    `${bytes} bytes in ${secs} seconds = ${((bytes * 8) / usec).toFixed(2)} Mbit/sec`,
    `${iters} iters in ${secs} seconds = ${(usec / iters).toFixed(2)} usec/iter`,
  ];
}

/** One end: its verbs objects, counters and the reaction to each completion. */
export class Side {
  readonly ctx: Context;
  readonly channel: CompletionChannel | undefined;
  readonly cq: Cq;
  readonly mr: Mr;
  readonly qp: Qp;
  readonly local: Dest;
  /** Sends and receives completed. */
  scnt = 0;
  rcnt = 0;
  /** Receives posted and not yet completed. */
  private routs = 0;
  /** `RECV_WRID | SEND_WRID` bits still awaited before the next send. */
  private pending = 0;
  private readonly inline: boolean;
  private startNs = 0n;
  private endNs = 0n;

  constructor(readonly options: SideOptions) {
    const ctx = openDevice(options.device);
    this.ctx = ctx;
    try {
      this.channel = options.events ? ctx.createCompChannel() : undefined;
      const pd = ctx.allocPd();
      this.mr = pd.registerMemory(Buffer.alloc(options.size, 0x7b), { access: ['LOCAL_WRITE'] });
      this.cq = ctx.createCq({ cqe: options.rxDepth + 1, channel: this.channel });
      this.qp = pd.createQp({
        sendCq: this.cq,
        recvCq: this.cq,
        cap: { maxSendWr: 1, maxRecvWr: options.rxDepth, maxSendSge: 1, maxRecvSge: 1 },
      });
      this.inline = this.qp.cap.maxInlineData >= options.size;
      this.qp.toInit({ port: options.ibPort, access: [] });
      this.postRecvs(options.rxDepth);
      if (this.routs < options.rxDepth) throw new Error(`couldn't post receive (${this.routs})`);

      const port = ctx.queryPort(options.ibPort);
      if (port.linkLayer !== LINK_LAYER_ETHERNET && port.lid === 0) throw new Error("couldn't get local LID");
      const gid = options.gidIndex === undefined ? undefined : ctx.queryGid(options.ibPort, options.gidIndex);
      this.local = { lid: port.lid, qpn: this.qp.qpNum, psn: this.qp.psn, gid: gidBytes(gid) };
    } catch (err) {
      ctx.close();
      throw err;
    }
  }

  /** INIT -> RTR -> RTS towards `remote` (with the GRH when the remote GID has an interface id). */
  connect(remote: Dest): void {
    const global = hasInterfaceId(remote.gid);
    const endpoint = {
      qpNum: remote.qpn,
      lid: remote.lid,
      psn: remote.psn,
      port: this.options.ibPort,
      gid: global ? gidString(remote.gid) : undefined,
    };
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
    this.qp.toRtr(endpoint, conn);
    this.qp.toRts(conn);
  }

  /** Starts the clock; the client also sends the first message. */
  start(isClient: boolean): void {
    this.pending = RECV_WRID;
    if (isClient) {
      this.postSend();
      this.pending |= SEND_WRID;
    }
    this.startNs = process.hrtime.bigint();
  }

  /** Every send and receive done. */
  get done(): boolean {
    return this.rcnt >= this.options.iters && this.scnt >= this.options.iters;
  }

  /** Handles a batch of completions (rc_pingpong's `parse_single_wc`). */
  handle(batch: WcBatch): void {
    for (let i = 0; i < batch.length; i++) {
      const wrId = batch.wrIdWords[2 * i];
      const status = batch.status[i];
      if (status !== 0) {
        throw new Error(`Failed status ${wcStatusName(status)} (${status}) for wr_id ${wrId}`);
      }
      if (wrId === SEND_WRID) {
        this.scnt++;
      } else if (wrId === RECV_WRID) {
        if (--this.routs <= 1) {
          this.postRecvs(this.options.rxDepth - this.routs);
          if (this.routs < this.options.rxDepth) throw new Error(`Couldn't post receive (${this.routs})`);
        }
        this.rcnt++;
      } else {
        throw new Error(`Completion for unknown wr_id ${wrId}`);
      }
      this.pending &= ~wrId;
      if (this.scnt < this.options.iters && this.pending === 0) {
        this.postSend();
        this.pending = RECV_WRID | SEND_WRID;
      }
    }
    if (this.done && this.endNs === 0n) this.endNs = process.hrtime.bigint();
  }

  /** rc_pingpong's two report lines. */
  report(): string[] {
    return reportLines(this.options, Number((this.endNs || process.hrtime.bigint()) - this.startNs) / 1000);
  }

  /** Closes everything (the context closes its children in the safe order). */
  close(): void {
    this.ctx.close();
  }

  private postRecvs(n: number): void {
    if (n <= 0) return;
    const wr = { wrId: RECV_WRID, sg: { mr: this.mr } };
    this.qp.postRecv(Array.from({ length: n }, () => wr));
    this.routs += n;
  }

  private postSend(): void {
    this.qp.postSend({ wrId: SEND_WRID, opcode: 'SEND', sg: { mr: this.mr }, signaled: true, inline: this.inline });
  }
}
