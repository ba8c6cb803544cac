/**
 * One end of `rx-verbs pingpong --ud`, written after rdma-core's
 * `ibv_ud_pingpong` so the two work together on the wire: one buffer of
 * size + 40 bytes (receives land with the GRH in front, sends go from byte
 * 40), a UD QP with qkey 0x11111111 that goes INIT -> RTR -> RTS on its own,
 * and an address handle to the peer (global, hop limit 64, when the peer's
 * GID has an interface id, as on RoCE).
 */
import { Ah, CompletionChannel, Context, Cq, Mr, UdQp, WcBatch, MTU_BYTES, openDevice, wcStatusName } from '../../index';
import { RECV_WRID, SEND_WRID, SideOptions } from './side';
import { Dest, gidBytes, gidString, hasInterfaceId, formatGid } from './wire';

/** ibv_ud_pingpong's qkey, on both ends. */
export const UD_QKEY = 0x11111111;
const GRH = 40;
const LINK_LAYER_ETHERNET = 2;

/** ibv_ud_pingpong's address lines (its local one has a colon before GID). */
export function describeUdDest(which: 'local' | 'remote', d: Dest): string {
  const hex = (n: number, w: number) => n.toString(16).padStart(w, '0');
  const label = which === 'local' ? '  local address: ' : '  remote address:';
  const sep = which === 'local' ? ':' : ',';
  return `${label} LID 0x${hex(d.lid, 4)}, QPN 0x${hex(d.qpn, 6)}, PSN 0x${hex(d.psn, 6)}${sep} GID ${formatGid(d.gid)}`;
}

/** A UD end: its verbs objects, counters and the reaction to each completion. */
export class UdSide {
  readonly ctx: Context;
  readonly channel: CompletionChannel | undefined;
  readonly cq: Cq;
  readonly mr: Mr;
  readonly qp: UdQp;
  readonly local: Dest;
  scnt = 0;
  rcnt = 0;
  private routs = 0;
  private pending = 0;
  private readonly inline: boolean;
  private ah: Ah | undefined;
  private remoteQpn = 0;
  private startNs = 0n;
  private endNs = 0n;

  constructor(readonly options: SideOptions) {
    const ctx = openDevice(options.device);
    this.ctx = ctx;
    try {
      const port = ctx.queryPort(options.ibPort);
      const mtu = MTU_BYTES[port.activeMtu] ?? 0;
      if (options.size > mtu) throw new Error(`Requested size larger than port MTU (${mtu})`);
      this.channel = options.events ? ctx.createCompChannel() : undefined;
      const pd = ctx.allocPd();
      this.mr = pd.registerMemory(Buffer.alloc(options.size + GRH, 0x7b), { access: ['LOCAL_WRITE'] });
      this.cq = ctx.createCq({ cqe: options.rxDepth + 1, channel: this.channel });
      this.qp = pd.createQp({
        type: 'UD',
        qkey: UD_QKEY,
        sendCq: this.cq,
        recvCq: this.cq,
        cap: { maxSendWr: 1, maxRecvWr: options.rxDepth, maxSendSge: 1, maxRecvSge: 1 },
      });
      this.inline = this.qp.cap.maxInlineData >= options.size;
      this.qp.toInit({ port: options.ibPort });
      this.postRecvs(options.rxDepth);
      if (this.routs < options.rxDepth) throw new Error(`Couldn't post receive (${this.routs})`);
      if (port.linkLayer !== LINK_LAYER_ETHERNET && port.lid === 0) throw new Error("Couldn't get local LID");
      const gid = options.gidIndex === undefined ? undefined : ctx.queryGid(options.ibPort, options.gidIndex);
      this.local = { lid: port.lid, qpn: this.qp.qpNum, psn: this.qp.psn, gid: gidBytes(gid) };
    } catch (err) {
      ctx.close();
      throw err;
    }
  }

  /** RTR -> RTS (no remote), then an address handle to `remote`. */
  connect(remote: Dest): void {
    this.qp.toRtr();
    this.qp.toRts();
    const global = hasInterfaceId(remote.gid);
    this.ah = this.qp.pd.createAh({
      port: this.options.ibPort,
      lid: remote.lid,
      sl: this.options.sl,
      ...(global ? { gid: gidString(remote.gid), gidIndex: this.options.gidIndex ?? 0, hopLimit: 64 } : {}),
    });
    this.remoteQpn = remote.qpn;
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

  get done(): boolean {
    return this.rcnt >= this.options.iters && this.scnt >= this.options.iters;
  }

  /** Handles a batch of completions (ud_pingpong's loop body). */
  handle(batch: WcBatch): void {
    for (let i = 0; i < batch.length; i++) {
      const wrId = batch.wrIdWords[2 * i];
      const status = batch.status[i];
      if (status !== 0) throw new Error(`Failed status ${wcStatusName(status)} (${status}) for wr_id ${wrId}`);
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

  /** The two report lines (ibv_ud_pingpong prints rc_pingpong's). */
  report(): string[] {
    const usec = Number((this.endNs || process.hrtime.bigint()) - this.startNs) / 1000;
    const { size, iters } = this.options;
    const bytes = size * iters * 2;
    const secs = (usec / 1e6).toFixed(2);
    return [
      `${bytes} bytes in ${secs} seconds = ${((bytes * 8) / usec).toFixed(2)} Mbit/sec`,
      `${iters} iters in ${secs} seconds = ${(usec / iters).toFixed(2)} usec/iter`,
    ];
  }

  close(): void {
    this.ctx.close();
  }

  private postRecvs(n: number): void {
    if (n <= 0) return;
    const wr = { wrId: RECV_WRID, sg: { mr: this.mr, offset: 0, length: this.options.size + GRH } };
    this.qp.postRecv(Array.from({ length: n }, () => wr));
    this.routs += n;
  }

  private postSend(): void {
    this.qp.postSend({
      wrId: SEND_WRID,
      sg: { mr: this.mr, offset: GRH, length: this.options.size },
      ah: this.ah,
      remoteQpn: this.remoteQpn,
      remoteQkey: UD_QKEY,
      inline: this.inline,
    });
  }
}
