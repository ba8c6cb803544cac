/**
 * One rping connection, either end: the buffers rping registers and the
 * protocol of rdma-core's `rping` (see wire.ts), driven by the connection's
 * completions through the rx-verbs fast path (`cq.completions$`).
 *
 * The first receive is posted before the connection is up (`prepare` of
 * connect / accept), as rping does, so the peer's first SEND finds it. The
 * completion handler turns each completion into a step (a receive with its
 * advertisement, an RDMA READ or WRITE done) in a mailbox; the protocol is
 * a plain `async` loop awaiting those steps in order. The receive is
 * re-posted in the handler, before the step is queued, so it is there before
 * the peer can send again (the peer sends only after hearing from us).
 */
import { Subscription } from 'rxjs';
import { WorkCompletionError, wcStatusName, type Mr, type WcBatch } from '../../index';
import { Mailbox } from '../shared/mailbox';
import { feedCompletions, watchEnd, type Link, type LinkResources } from '../shared/link';
import { cString, cStringBytes, decodeInfo, encodeInfo, fillPing, INFO_BYTES, type RdmaInfo } from './wire';

/** Where lines go (stdout, or a test's collector). */
export type Print = (line: string) => void;

/** The peer (or the device) ended the connection while the protocol waited. */
export class PeerDisconnected extends Error {
  override readonly name = 'PeerDisconnected';
  constructor(readonly cause?: unknown) {
    super(cause instanceof Error ? `the connection ended: ${cause.message}` : 'the peer disconnected');
  }
}

/** The peer hung up, the connection's normal end; not the device going away. */
function isPlainDisconnect(err: unknown): boolean {
  return err instanceof PeerDisconnected && err.cause === undefined;
}

/** A step of the protocol, as completions report it. */
type Step = { kind: 'recv'; info: RdmaInfo } | { kind: 'read' } | { kind: 'write' };

/** What a session is made with. */
export interface SessionOptions {
  size: number;
  count: number;
  verbose: boolean;
  validate: boolean;
  debug: boolean;
  /** Test hook (server): spoil the copy of this ping before writing it back, so -V must catch it. */
  corruptPing?: number;
}

const WR_RECV = 1n;
const WR_SEND = 2n;
const WR_RDMA = 3n;
const OP_SEND = 0;
const OP_RDMA_WRITE = 1;
const OP_RDMA_READ = 2;
const OP_RECV = 128;
const FLUSH = 5; // IBV_WC_WR_FLUSH_ERR: what a QP in error returns; the end shows up as disconnected$

const REMOTE = ['LOCAL_WRITE', 'REMOTE_READ', 'REMOTE_WRITE'] as const;

/** One end of an rping connection. */
export class RpingSession {
  private readonly recvMr: Mr;
  private readonly sendMr: Mr;
  /** The server's copy of the ping; the client's sink. */
  private readonly rdmaMr: Mr;
  /** The client's source (unused on the server). */
  private readonly startMr: Mr | undefined;
  private readonly steps = new Mailbox<Step>();
  private feed: Subscription | undefined;
  private ended: Subscription | undefined;
  /** Pings completed. */
  pings = 0;

  /**
   * Registers the buffers on the connection's PD and posts the receive:
   * call it from `prepare`, before the peer can send.
   */
  constructor(
    private readonly link: LinkResources,
    private readonly role: 'server' | 'client',
    private readonly options: SessionOptions,
    private readonly print: Print,
  ) {
    const pd = link.pd;
    const mrs: Mr[] = [];
    try {
      this.recvMr = pd.allocMemory(INFO_BYTES, { access: ['LOCAL_WRITE'] });
      mrs.push(this.recvMr);
      this.sendMr = pd.allocMemory(INFO_BYTES, { access: [] });
      mrs.push(this.sendMr);
      this.rdmaMr = pd.allocMemory(options.size, { access: REMOTE });
      mrs.push(this.rdmaMr);
      this.startMr = role === 'client' ? pd.allocMemory(options.size, { access: REMOTE }) : undefined;
      if (this.startMr) mrs.push(this.startMr);
      this.postRecv();
    } catch (err) {
      for (const mr of mrs) mr.close();
      throw err;
    }
  }

  /** Starts taking completions and watching the end of `conn` (the connection the resources became). */
  start(conn: Link): void {
    this.feed = feedCompletions(this.link, (b) => this.onBatch(b), (err) => this.steps.end(err));
    this.ended = watchEnd(conn, (b) => this.onBatch(b), (err) => this.steps.end(new PeerDisconnected(err)));
  }

  /**
   * The server's loop, until the client disconnects (the normal end, as with
   * rping). Resolves with the pings served.
   */
  async serve(): Promise<number> {
    const rdma = this.rdmaMr;
    try {
      for (;;) {
        const source = await this.expectRecv('the client\'s source buffer');
        if (source.size > rdma.length) {
          throw new Error(`the client pings ${source.size} bytes, more than this server's -S ${rdma.length}`);
        }
        this.debug(`received rkey ${hex(source.rkey)} addr ${source.addr.toString(16)} len ${source.size} from peer`);
        this.link.qp.postSend({
          wrId: WR_RDMA,
          opcode: 'RDMA_READ',
          sg: { mr: rdma, length: source.size },
          remote: { addr: source.addr, rkey: source.rkey },
        });
        await this.expect('read');
        if (this.options.verbose) this.print(`server ping data: ${cString(rdma.buffer)}`);
        this.goAhead();
        const sink = await this.expectRecv('the client\'s sink buffer');
        const length = cStringBytes(rdma.buffer);
        if (length > sink.size) throw new Error(`the client's sink holds ${sink.size} bytes, the ping is ${length}`);
        if (this.pings === this.options.corruptPing) rdma.buffer[Math.max(0, length - 2)] ^= 0x20;
        this.link.qp.postSend({
          wrId: WR_RDMA,
          opcode: 'RDMA_WRITE',
          sg: { mr: rdma, length },
          remote: { addr: sink.addr, rkey: sink.rkey },
        });
        await this.expect('write');
        this.goAhead();
        this.pings++;
      }
    } catch (err) {
      if (isPlainDisconnect(err)) return this.pings;
      throw err;
    }
  }

  /**
   * The client's loop: `count` pings (0: until the server disconnects, which
   * then is the normal end, as with rping). Resolves with the pings done.
   */
  async ping(): Promise<number> {
    const { count, validate, verbose, size } = this.options;
    const start = this.startMr as Mr;
    const sink = this.rdmaMr;
    try {
      for (let ping = 0; count === 0 || ping < count; ping++) {
        fillPing(start.buffer, ping);
        this.advertise(start, size);
        await this.expectRecv('the go-ahead after the RDMA READ');
        this.advertise(sink, size);
        await this.expectRecv('the go-ahead after the RDMA WRITE');
        if (validate && !start.buffer.equals(sink.buffer)) throw new Error(`data mismatch in ping ${ping}`);
        if (verbose) this.print(`ping data: ${cString(sink.buffer)}`);
        this.pings++;
      }
      return this.pings;
    } catch (err) {
      if (isPlainDisconnect(err) && count === 0) return this.pings;
      if (err instanceof PeerDisconnected) {
        throw new Error(`the server disconnected after ${this.pings} of ${count} pings${err.cause ? ` (${err.message})` : ''}`);
      }
      throw err;
    }
  }

  /** Stops taking completions and frees the buffers (after the connection is closed). Idempotent. */
  close(): void {
    this.feed?.unsubscribe();
    this.ended?.unsubscribe();
    this.steps.end(new PeerDisconnected());
    for (const mr of [this.recvMr, this.sendMr, this.rdmaMr, this.startMr]) mr?.close();
  }

  private onBatch(batch: WcBatch): void {
    for (let i = 0; i < batch.length; i++) {
      const status = batch.status[i];
      if (status === FLUSH) continue;
      if (status !== 0) {
        this.steps.end(WorkCompletionError.fromBatch(batch, i));
        return;
      }
      switch (batch.opcode[i]) {
        case OP_SEND:
          break;
        case OP_RDMA_READ:
          this.debug('rdma read completion');
          this.steps.put({ kind: 'read' });
          break;
        case OP_RDMA_WRITE:
          this.debug('rdma write completion');
          this.steps.put({ kind: 'write' });
          break;
        case OP_RECV: {
          if (batch.byteLen[i] !== INFO_BYTES) {
            this.steps.end(new Error(`received bogus data, size ${batch.byteLen[i]}`));
            return;
          }
          const info = decodeInfo(this.recvMr.buffer);
          try {
            this.postRecv();
          } catch (err) {
            this.steps.end(err);
            return;
          }
          this.steps.put({ kind: 'recv', info });
          break;
        }
        default:
          this.steps.end(new Error(`unexpected completion: opcode ${batch.opcode[i]}, status ${wcStatusName(status)}`));
          return;
      }
    }
  }

  private async expectRecv(what: string): Promise<RdmaInfo> {
    const step = await this.steps.take();
    if (step.kind !== 'recv') throw new Error(`protocol error: waiting for ${what}, got an RDMA ${step.kind} completion`);
    return step.info;
  }

  private async expect(kind: 'read' | 'write'): Promise<void> {
    const step = await this.steps.take();
    if (step.kind !== kind) throw new Error(`protocol error: waiting for the RDMA ${kind} to complete, got a ${step.kind}`);
  }

  private advertise(mr: Mr, size: number): void {
    encodeInfo({ addr: mr.addr, rkey: mr.rkey, size }, this.sendMr.buffer);
    this.debug(`RDMA addr ${mr.addr.toString(16)} rkey ${hex(mr.rkey)} len ${size}`);
    this.link.qp.postSend({ wrId: WR_SEND, opcode: 'SEND', sg: { mr: this.sendMr } });
  }

  private goAhead(): void {
    this.link.qp.postSend({ wrId: WR_SEND, opcode: 'SEND', sg: { mr: this.sendMr } });
  }

  private postRecv(): void {
    this.link.qp.postRecv({ wrId: WR_RECV, sg: { mr: this.recvMr } });
  }

  private debug(line: string): void {
    if (this.options.debug) this.print(`${this.role}: ${line}`);
  }
}

function hex(n: number): string {
  return (n >>> 0).toString(16);
}
