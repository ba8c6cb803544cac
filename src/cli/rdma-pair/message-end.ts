/**
 * One end of rdma_server / rdma_client's exchange: one 16-byte receive
 * buffer and one 16-byte send buffer on the connection's PD, one receive
 * posted before the connection is up (`prepare`, as they post theirs before
 * connecting or accepting), every send signaled (as their `sq_sig_all`),
 * the completions taken through the rx-verbs fast path (`cq.completions$`).
 */
import { Subscription } from 'rxjs';
import { WorkCompletionError, type Mr, type WcBatch } from '../../index';
import { feedCompletions, watchEnd, type Link, type LinkResources } from '../shared/link';
import { Mailbox } from '../shared/mailbox';

/** Bytes each side sends, as rdma_server and rdma_client do. */
export const MESSAGE_BYTES = 16;

type Step = { kind: 'recv'; data: Buffer } | { kind: 'send' };

const OP_SEND = 0;
const OP_RECV = 128;

/** One end of the 16-byte exchange. */
export class MessageEnd {
  private readonly recvMr: Mr;
  private readonly sendMr: Mr;
  private readonly steps = new Mailbox<Step>();
  private feed: Subscription | undefined;
  private ended: Subscription | undefined;

  /** Registers the buffers and posts the receive: call it from `prepare`, before the peer can send. */
  constructor(private readonly link: LinkResources) {
    this.recvMr = link.pd.allocMemory(MESSAGE_BYTES, { access: ['LOCAL_WRITE'] });
    try {
      this.sendMr = link.pd.allocMemory(MESSAGE_BYTES, { access: [] });
      link.qp.postRecv({ wrId: 1n, sg: { mr: this.recvMr } });
    } catch (err) {
      this.recvMr.close();
      throw err;
    }
  }

  /** Starts taking completions and watching the end of `conn` (the connection the resources became). */
  start(conn: Link): void {
    this.feed = feedCompletions(this.link, (b) => this.onBatch(b), (err) => this.steps.end(err));
    this.ended = watchEnd(conn, (b) => this.onBatch(b), (err) =>
      this.steps.end(err ?? new Error('the peer disconnected before the exchange was done')),
    );
  }

  /** Sends `data` (16 bytes) and waits for its completion. */
  async send(data: Uint8Array): Promise<void> {
    if (data.length !== MESSAGE_BYTES) throw new RangeError(`the message is ${MESSAGE_BYTES} bytes, got ${data.length}`);
    this.sendMr.buffer.set(data);
    const inline = this.link.qp.cap.maxInlineData >= MESSAGE_BYTES;
    this.link.qp.postSend({ wrId: 2n, opcode: 'SEND', sg: { mr: this.sendMr }, signaled: true, inline });
    await this.expect('send');
  }

  /** Waits for the peer's message; resolves with a copy of its bytes. */
  async receive(): Promise<Buffer> {
    const step = await this.expect('recv');
    return (step as { data: Buffer }).data;
  }

  /** Stops taking completions and frees the buffers. Idempotent. */
  close(): void {
    this.feed?.unsubscribe();
    this.ended?.unsubscribe();
    this.steps.end(new Error('closed'));
    this.recvMr.close();
    this.sendMr?.close();
  }

  private async expect(kind: Step['kind']): Promise<Step> {
    const step = await this.steps.take();
    if (step.kind !== kind) throw new Error(`protocol error: waiting for a ${kind} completion, got a ${step.kind}`);
    return step;
  }

  private onBatch(batch: WcBatch): void {
    for (let i = 0; i < batch.length; i++) {
      if (batch.status[i] !== 0) {
        this.steps.end(WorkCompletionError.fromBatch(batch, i));
        return;
      }
      if (batch.opcode[i] === OP_SEND) {
        this.steps.put({ kind: 'send' });
      } else if (batch.opcode[i] === OP_RECV) {
        if (batch.byteLen[i] !== MESSAGE_BYTES) {
          this.steps.end(new Error(`received ${batch.byteLen[i]} bytes, expected ${MESSAGE_BYTES}`));
          return;
        }
        this.steps.put({ kind: 'recv', data: Buffer.from(this.recvMr.buffer) });
      }
    }
  }
}
