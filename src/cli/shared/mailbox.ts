/**
 * A queue between a completion handler and an `async` protocol loop: the
 * handler puts what happened, the loop awaits it in order. Once ended, what
 * is queued is still taken, then every `take()` rejects with the reason:
 * a protocol step never waits on a connection that is gone.
 */
export class Mailbox<T> {
  private readonly items: T[] = [];
  private waiter: { resolve: (item: T) => void; reject: (err: unknown) => void } | undefined;
  private reason: unknown;
  private ended = false;

  /** Queues `item` (dropped once ended: nobody will take it). */
  put(item: T): void {
    if (this.ended) return;
    const w = this.waiter;
    if (w) {
      this.waiter = undefined;
      w.resolve(item);
    } else {
      this.items.push(item);
    }
  }

  /** Ends the mailbox; the first reason sticks. */
  end(reason: unknown): void {
    if (this.ended) return;
    this.ended = true;
    this.reason = reason;
    const w = this.waiter;
    this.waiter = undefined;
    w?.reject(reason);
  }

  /** Whether it has ended. */
  get done(): boolean {
    return this.ended;
  }

  /** The next item, in order; rejects once the mailbox has ended and is empty. One taker at a time. */
  take(): Promise<T> {
    if (this.items.length > 0) return Promise.resolve(this.items.shift() as T);
    if (this.ended) return Promise.reject(this.reason);
    if (this.waiter) return Promise.reject(new Error('Mailbox: one taker at a time'));
    return new Promise<T>((resolve, reject) => (this.waiter = { resolve, reject }));
  }
}
