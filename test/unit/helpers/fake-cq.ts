import type { CqEvent, CqLike } from '../../../src/verbs/interfaces';
import { WcBatch, WorkCompletionInit } from '../../../src/verbs/wc-batch';

/**
 * A CQ stub for operator specs: records each call (with the virtual frame)
 * into a log shared by several CQs, so specs can check the order of arm,
 * ack and poll across the pipeline.
 */
export class FakeCq implements CqLike {
  readonly cqe = 16;
  readonly queue: Partial<WorkCompletionInit>[] = [];
  failArm: unknown;
  failAck: unknown;
  failPoll: unknown;

  constructor(
    readonly name: string,
    private readonly log: string[],
    private readonly now: () => number = () => 0,
  ) {}

  requestNotify(solicitedOnly = false): void {
    if (this.failArm) throw this.failArm;
    this.log.push(`${this.name}:arm${solicitedOnly ? '(s)' : ''}@${this.now()}`);
  }

  poll(max = this.cqe): WcBatch {
    if (this.failPoll) throw this.failPoll;
    const taken = this.queue.splice(0, max);
    this.log.push(`${this.name}:poll=${taken.length}@${this.now()}`);
    return WcBatch.from(taken);
  }

  ack(n: number): void {
    if (this.failAck) throw this.failAck;
    this.log.push(`${this.name}:ack(${n})@${this.now()}`);
  }

  /** Queues completions with these wr_ids. */
  add(...wrIds: number[]): this {
    for (const wrId of wrIds) this.queue.push({ wrId });
    return this;
  }

  event(): CqEvent<FakeCq> {
    return { cq: this, context: this.name };
  }
}

/** A batch of successful completions with these wr_ids. */
export function batchOf(...wrIds: number[]): WcBatch {
  return WcBatch.from(wrIds.map((wrId) => ({ wrId })));
}

/** wr_ids of a batch as numbers. */
export function ids(batch: WcBatch): number[] {
  return Array.from(batch.wrId, (v) => Number(v));
}
