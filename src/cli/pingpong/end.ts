/**
 * One end of a ping-pong, run as rdma-core's three programs run theirs: one
 * buffer (filled with 0x7b) and MR, one CQ of rx-depth + one entry per QP,
 * the `wr_id` state machine of each QP, the receive refill, the report lines
 * and `-c`'s page check. What differs between RC, SRQ and UD (the QPs, where
 * receives go, how a send is addressed) is the mode's {@link Transport}
 * (rc.ts, srq.ts, ud.ts).
 */
import { openDevice, wcStatusName, type CompletionChannel, type Context, type Cq, type Mr, type Pd, type WcBatch } from '../../index';
import { fillPages, invalidPages } from './check';
import { Dest, gidBytes } from './wire';

/** `wr_id`s, as the rdma-core programs use them (also as bits of `pending`). */
export const RECV_WRID = 1;
export const SEND_WRID = 2;

const LINK_LAYER_ETHERNET = 2;

/** What an end is made with (the command's options). */
export interface EndOptions {
  device: string;
  ibPort: number;
  gidIndex: number | undefined;
  size: number;
  iters: number;
  rxDepth: number;
  mtu: number;
  sl: number;
  events: boolean;
  /** QPs per end (`-q`; the SRQ mode only, the others have one). */
  numQp: number;
  /** `-c`: the client marks its pages, the server checks them at the end. */
  chk: boolean;
}

/** The objects every mode builds its QPs on. */
export interface Shared {
  readonly ctx: Context;
  readonly pd: Pd;
  readonly cq: Cq;
  readonly mr: Mr;
  readonly options: EndOptions;
}

/** A mode's QPs and how it posts on them. */
export interface Transport {
  /** The QPs, in the order the connection exchange carries them. */
  readonly qps: readonly { readonly qpNum: number; readonly psn: number }[];
  /** Refill the receives when no more than this many are left posted. */
  readonly refillAt: number;
  /** Posts `n` receives of the whole buffer. */
  postRecvs(n: number): void;
  /** Posts one send of the payload on QP `q`. */
  postSend(q: number): void;
  /** Which QP a completion belongs to, from its QP number. */
  qpIndex(qpNum: number): number | undefined;
  /** Brings the QPs up towards the peer's (RTR, RTS). */
  connect(remotes: readonly Dest[]): void;
}

/** One of the three ping-pongs: how it builds its QPs and prints addresses. */
export interface Mode {
  /** The rdma-core program it answers to (in messages). */
  readonly program: string;
  /** Bytes in front of the payload in the buffer (UD's GRH). */
  readonly headroom: number;
  /** Addresses each side sends in the connection exchange. */
  readonly table: number;
  /** QPs per end. */
  qpCount(options: EndOptions): number;
  /** Refuses what the device cannot do, before anything is allocated on it. */
  check?(ctx: Context, options: EndOptions): void;
  /** Builds the QPs and brings them to INIT. */
  build(shared: Shared): Transport;
  /** An address line as the program prints it. */
  describe(which: 'local' | 'remote', d: Dest): string;
}

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
export class PingPongEnd {
  readonly ctx: Context;
  readonly channel: CompletionChannel | undefined;
  readonly cq: Cq;
  readonly mr: Mr;
  /** This end's addresses, one per QP. */
  readonly locals: Dest[];
  /** Sends and receives completed, over every QP. */
  scnt = 0;
  rcnt = 0;
  private readonly transport: Transport;
  /** Receives posted and not yet completed. */
  private routs = 0;
  /** Per QP: `RECV_WRID | SEND_WRID` bits still awaited before its next send. */
  private readonly pending: number[];
  private isClient = false;
  private startNs = 0n;
  private endNs = 0n;

  constructor(
    readonly options: EndOptions,
    readonly mode: Mode,
  ) {
    const ctx = openDevice(options.device);
    this.ctx = ctx;
    try {
      mode.check?.(ctx, options);
      this.channel = options.events ? ctx.createCompChannel() : undefined;
      const pd = ctx.allocPd();
      this.mr = pd.registerMemory(Buffer.alloc(options.size + mode.headroom, 0x7b), { access: ['LOCAL_WRITE'] });
      this.cq = ctx.createCq({ cqe: options.rxDepth + mode.qpCount(options), channel: this.channel });
      this.transport = mode.build({ ctx, pd, cq: this.cq, mr: this.mr, options });
      this.pending = this.transport.qps.map(() => 0);
      this.postRecvs(options.rxDepth);
      if (this.routs < options.rxDepth) throw new Error(`Couldn't post receive (${this.routs})`);
      this.locals = localAddresses(ctx, options, this.transport.qps);
    } catch (err) {
      ctx.close();
      throw err;
    }
  }

  /** Brings every QP up towards the peer's QP of the same index. */
  connect(remotes: readonly Dest[]): void {
    this.transport.connect(remotes);
  }

  /** Starts the clock; the client (with `-c`, its pages marked) also sends the first message on every QP. */
  start(isClient: boolean): void {
    this.isClient = isClient;
    if (isClient && this.options.chk) fillPages(this.mr.buffer, this.mode.headroom, this.options.size);
    this.pending.forEach((_p, q) => {
      this.pending[q] = RECV_WRID;
      if (isClient) {
        this.transport.postSend(q);
        this.pending[q] |= SEND_WRID;
      }
    });
    this.startNs = process.hrtime.bigint();
  }

  /** Every send and receive done (`iters` of each, over all QPs together). */
  get done(): boolean {
    return this.rcnt >= this.options.iters && this.scnt >= this.options.iters;
  }

  /** Handles a batch of completions (the programs' loop body). */
  handle(batch: WcBatch): void {
    const { iters, rxDepth } = this.options;
    for (let i = 0; i < batch.length; i++) {
      const wrId = batch.wrIdWords[2 * i];
      const status = batch.status[i];
      if (status !== 0) throw new Error(`Failed status ${wcStatusName(status)} (${status}) for wr_id ${wrId}`);
      const q = this.transport.qpIndex(batch.qpNum[i]);
      if (q === undefined) throw new Error(`Couldn't find QPN ${batch.qpNum[i].toString(16).padStart(6, '0')}`);
      if (wrId === SEND_WRID) {
        this.scnt++;
      } else if (wrId === RECV_WRID) {
        if (--this.routs <= this.transport.refillAt) {
          this.postRecvs(rxDepth - this.routs);
          if (this.routs < rxDepth) throw new Error(`Couldn't post receive (${this.routs})`);
        }
        this.rcnt++;
      } else {
        throw new Error(`Completion for unknown wr_id ${wrId}`);
      }
      this.pending[q] &= ~wrId;
      if (this.scnt < iters && this.pending[q] === 0) {
        this.transport.postSend(q);
        this.pending[q] = RECV_WRID | SEND_WRID;
      }
    }
    if (this.done && this.endNs === 0n) this.endNs = process.hrtime.bigint();
  }

  /** The report lines, then (server with `-c`) one line per page that came back wrong. */
  report(): string[] {
    const lines = reportLines(this.options, Number((this.endNs || process.hrtime.bigint()) - this.startNs) / 1000);
    if (this.options.chk && !this.isClient) lines.push(...invalidPages(this.mr.buffer, this.mode.headroom, this.options.size));
    return lines;
  }

  /** Closes everything (the context closes its children in the safe order: QPs before their SRQ). */
  close(): void {
    this.ctx.close();
  }

  private postRecvs(n: number): void {
    if (n <= 0) return;
    this.transport.postRecvs(n);
    this.routs += n;
  }
}

/** Each QP's address: the port's LID, and the GID of `-g` (zeros without it). */
function localAddresses(ctx: Context, options: EndOptions, qps: Transport['qps']): Dest[] {
  const port = ctx.queryPort(options.ibPort);
  if (port.linkLayer !== LINK_LAYER_ETHERNET && port.lid === 0) throw new Error("Couldn't get local LID");
  const gid = gidBytes(options.gidIndex === undefined ? undefined : ctx.queryGid(options.ibPort, options.gidIndex));
  return qps.map((qp) => ({ lid: port.lid, qpn: qp.qpNum, psn: qp.psn, gid }));
}
