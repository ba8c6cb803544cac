/**
 * A shared receive queue in virtual time, for `accept({ srq })` /
 * `connect({ srq })` on the virtual CM: connections made with it share it
 * (`resources.srq`, `resources.qp.srq`), as on the native CMs. It counts the
 * receives posted to it and holds no buffers: a SEND that reaches a QP on it
 * takes one (or meets "receiver not ready" when none is left) and moves no
 * bytes; play the receive's completion on the connection's CQ.
 */
export class VirtualSrq {
  /** Receives posted and not yet taken by {@link VirtualSrq.take}. */
  posted = 0;
  private isClosed = false;

  /** @param maxWr how many receives it holds (default 64). */
  constructor(readonly maxWr = 64) {}

  /** True once destroyed. */
  get closed(): boolean {
    return this.isClosed;
  }

  /** Posts `n` receives (1 by default). @throws RangeError past `maxWr`; an Error (EBADF) once closed. */
  postRecv(n = 1): void {
    if (this.isClosed) throw Object.assign(new Error('postRecv on a destroyed SRQ'), { code: 'EBADF' });
    if (this.posted + n > this.maxWr) throw new RangeError(`the SRQ holds ${this.maxWr} receives; ${this.posted} are posted`);
    this.posted += n;
  }

  /** A message consumed one posted receive: false when none was posted (the sender would see RNR). */
  take(): boolean {
    if (this.posted === 0) return false;
    this.posted--;
    return true;
  }

  /** Destroys it. Idempotent. */
  close(): void {
    this.isClosed = true;
  }
}
