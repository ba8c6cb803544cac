/**
 * Credit-based flow control: a sender never SENDs into an empty receive
 * queue, so a correct pair never sees "receiver not ready" (the suites run
 * with `rnrRetryCount: 0`, where any slip is a failed completion).
 *
 * Every SEND takes one of the receives the peer posted; every header
 * carries the sender's *grant*, how many receives it has posted for its
 * peer in all. So `free = peer's grant - SENDs sent` is exact, whatever kind
 * of message used the receives. Data (EAGER, RENDEZVOUS, DONE) may only go
 * while `free > reserve`; a CREDIT message (a header alone, to return
 * receives when there is no data to carry the grant) may use the reserve.
 *
 * Why that cannot lock up: a side sends a CREDIT when it owes at least
 * `threshold` receives (reposted, not yet announced). Receives it owes come
 * from the peer's messages: its data, which the consumer releases (at most
 * `depth` outstanding, so at most depth / threshold CREDITs), and the
 * peer's own CREDITs (each reposted at once: one owed receive, fewer than
 * the threshold of 2 or more, so CREDITs answer each other less and less
 * and die out). A side can therefore send at most depth / threshold + 1
 * CREDITs before a message of the peer (every one carries a grant) frees
 * its reserve again; the reserve is that plus one.
 */

/** Receives owed before a CREDIT goes out without data to ride on. */
export function creditThreshold(depth: number): number {
  return Math.max(2, Math.floor(depth / 4));
}

/** Receives a side keeps beyond `depth` for CREDIT messages (see the module comment). */
export function creditReserve(depth: number): number {
  return Math.ceil(depth / creditThreshold(depth)) + 2;
}

/** Receives a side posts in all for a peer: `depth` for data and the reserve. */
export function receivesFor(depth: number): number {
  return depth + creditReserve(depth);
}

/** Signed difference of two counters that wrap at 2^32. */
const diff = (a: number, b: number) => (a - b) | 0;

/** One side's view of the credits both ways. */
export class CreditWindow {
  /** The peer's last grant: receives it posted for us, in all. */
  private peerPosted: number;
  /** SENDs we posted, in all. */
  private sent = 0;
  /** Receives we posted for the peer, in all. */
  private posted: number;
  /** The grant we last sent (or announced at set-up). */
  private announced: number;
  /** Data sends keep this many of the peer's receives free (the peer's reserve). */
  readonly reserve: number;
  /** We send a CREDIT once we owe this many receives. */
  readonly threshold: number;

  /**
   * @param ourDepth the data receives we keep posted for the peer.
   * @param peerDepth the data receives the peer keeps posted for us.
   */
  constructor(ourDepth: number, peerDepth: number) {
    this.posted = receivesFor(ourDepth);
    this.announced = this.posted;
    this.peerPosted = receivesFor(peerDepth);
    this.reserve = creditReserve(peerDepth);
    this.threshold = creditThreshold(ourDepth);
  }

  /** The peer's receives we may still use. */
  get free(): number {
    return diff(this.peerPosted, this.sent);
  }

  /** Whether a data message may go now. */
  get canSendData(): boolean {
    return this.free > this.reserve;
  }

  /** Whether a CREDIT may go now. */
  get canSendCredit(): boolean {
    return this.free >= 1;
  }

  /** Receives we reposted and have not announced yet. */
  get owed(): number {
    return diff(this.posted, this.announced);
  }

  /** Whether we owe enough that a CREDIT should go even without data. */
  get creditDue(): boolean {
    return this.owed >= this.threshold;
  }

  /** A header arrived with `grant`; returns whether it freed receives. */
  granted(grant: number): boolean {
    if (diff(grant, this.peerPosted) <= 0) return false;
    this.peerPosted = grant;
    return true;
  }

  /** We reposted `n` receives for the peer. */
  reposted(n: number): void {
    this.posted = (this.posted + n) | 0;
  }

  /** A SEND is going out: takes a receive and returns the grant its header carries. */
  spend(): number {
    this.sent = (this.sent + 1) | 0;
    this.announced = this.posted;
    return this.posted >>> 0;
  }
}
