/**
 * A received message. Its `data` is a view into a buffer of the layer's
 * pool, lent to the consumer until {@link Message.release} (one rule, for
 * every way of taking a message: the taker releases; `for await`,
 * `serve()` and `request()`'s caller included). Until then the buffer is
 * not reposted, and its credit is not returned to the peer: a message that
 * is never released stalls the sender once its credits are spent, and
 * nothing is lost. Read or copy `data` before releasing: the buffer is then
 * reused for the next message.
 */
export class Message {
  /** The bytes (a view into a pooled buffer: valid until `release()`). */
  readonly data: Buffer;
  /** The request id for requests and replies, 0 otherwise. */
  readonly id: number;
  /** Whether it came by rendezvous (the peer's memory was READ). */
  readonly rendezvous: boolean;
  private giveBack: (() => void) | undefined;

  /** @internal */
  constructor(data: Buffer, id: number, rendezvous: boolean, giveBack: () => void) {
    this.data = data;
    this.id = id;
    this.rendezvous = rendezvous;
    this.giveBack = giveBack;
  }

  /** Its length in bytes. */
  get length(): number {
    return this.data.length;
  }

  /** Whether it was released. */
  get released(): boolean {
    return this.giveBack === undefined;
  }

  /** The bytes as UTF-8 text. */
  text(): string {
    return this.data.toString('utf8');
  }

  /** Hands the buffer back to the pool (its credit goes back to the peer). Idempotent. */
  release(): void {
    const giveBack = this.giveBack;
    if (!giveBack) return;
    this.giveBack = undefined;
    giveBack();
  }
}
