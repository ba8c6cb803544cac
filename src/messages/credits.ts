/**
 * Credit-based flow control: a sender never SENDs into an empty receive
 * queue, so a correct pair never sees "receiver not ready" (the suites run
 * with `rnrRetryCount: 0`, where any slip is a failed completion).
 *
 * Every SEND takes one of the receives the peer posted; every header
 * carries the sender's *grant*, how many receives it has posted for its
 * peer in all. So `free = peer's grant - SENDs sent` is exact, whatever kind
 * of message used the receives. Data (EAGER, RENDEZVOUS) may only go while
 * `free > reserve`; control messages may use the reserve: a CREDIT (a
 * header alone, to return receives when there is no data to carry the
 * grant) and a DONE (the READ of a rendezvous is over).
 *
 * Why DONE may not wait like data: the peer's receives may all be held by
 * messages its consumer keeps until its own sends settle (`serve()` keeps
 * a request until its reply has gone), and a rendezvous send settles on
 * the DONE. Were DONE data, each side would wait for the other. So a side
 * keeps at most `rendezvousWindow(depth)` rendezvous awaiting DONE, and
 * reserves that many receives for the DONEs.
 *
 * Why the reserve cannot run out: a side sends a CREDIT when it owes at
 * least `threshold` receives (reposted, not yet announced). Between two
 * messages of the peer (each carries a grant, which frees the reserve
 * again), receives it owes come only from its consumer releasing the
 * peer's data (at most `depth` outstanding, so at most depth / threshold
 * CREDITs, plus one for what was owed before), and the DONEs it owes
 * answer the peer's rendezvous (at most the peer's window: a new one would
 * carry a grant). The peer reposts the receives of CREDITs and DONEs at
 * once, and answers them with a CREDIT of its own once they reach its
 * threshold (2 or more, so CREDITs answer each other less and less and die
 * out). The reserve is depth / threshold + 2 for CREDITs and the window
 * for DONEs.
 */

/** Receives owed before a CREDIT goes out without data to ride on. */
export function creditThreshold(depth: number): number {
  return Math.max(2, Math.floor(depth / 4));
}

/** Rendezvous sends a side with this `depth` keeps awaiting DONE at most (see the module comment). */
export function rendezvousWindow(depth: number): number {
  return Math.min(depth, 16);
}

/** Receives a side keeps beyond `depth` for CREDIT and DONE messages (see the module comment). */
export function creditReserve(depth: number): number {
  return Math.ceil(depth / creditThreshold(depth)) + 2 + rendezvousWindow(depth);
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
  /** The receives the peer posted first (it announced its depth at set-up). */
  private readonly peerFirst: number;
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
    this.peerFirst = this.peerPosted;
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

  /** Whether a control message (CREDIT, DONE) may go now: it may use the reserve. */
  get canSendControl(): boolean {
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

  /**
   * Whether the peer can have sent `grant`: never less than its last one
   * (headers arrive in order), and never more receives than it can have
   * posted: its first ones and one repost for each SEND of ours.
   */
  possible(grant: number): boolean {
    return diff(grant, this.peerPosted) >= 0 && diff(grant, this.sent) <= this.peerFirst;
  }

  /** A header arrived with `grant` (a {@link CreditWindow.possible} one); returns whether it freed receives. */
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
