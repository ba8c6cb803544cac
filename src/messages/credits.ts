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
 * When a CREDIT goes: once a side owes `threshold` receives (reposted, not
 * yet announced), and also as soon as what it owes would let a peer that
 * is stuck send data again: the peer's view of its receives (the last
 * grant less the SENDs that arrived since) is within the reserve, and what
 * it has posted is not. Without that, up to `threshold - 1` receives could
 * stay unannounced while the peer waits for exactly them.
 *
 * Two such CREDITs can cross, each taking the receive the other side was
 * waiting for, and would then answer each other for ever. So the receive
 * of a CREDIT counts as returned for data from the moment it is sent, as
 * long as it is the sender's last SEND: the peer reposts it on arrival, and
 * its next grant will say so. Until then a data message may use that one
 * receive of the reserve (never the last receive: `free >= 1` always
 * holds); both sides count it alike, so the crossing ends there.
 *
 * Why DONE may not wait like data: the peer's receives may all be held by
 * messages its consumer keeps until its own sends settle (`serve()` keeps
 * a request until its reply has gone), and a rendezvous send settles on
 * the DONE. Were DONE data, each side would wait for the other. So a side
 * keeps at most `rendezvousWindow(depth)` rendezvous awaiting DONE, and
 * reserves that many receives for the DONEs.
 *
 * Why replies go ahead of requests, and requests are limited: when both
 * sides serve requests and make them, each may hold the other's requests
 * until its replies have gone; were every data receive of both sides held
 * by a request, no reply could go. So a side keeps fewer requests awaiting
 * replies than the peer has data receives (`requestWindow`), and its
 * replies never wait behind its requests.
 *
 * Why the reserve cannot run out: between two messages of the peer (each
 * carries a grant, which frees the reserve again), the receives a side
 * owes come only from its consumer releasing the peer's data (at most
 * `depth` outstanding: depth / threshold CREDITs, and one for what was owed
 * before), one CREDIT for a stuck peer (after it the peer's view is past
 * the reserve until the peer sends again), and the DONEs it owes answer
 * the peer's rendezvous (at most the peer's window: a new one would carry
 * a grant). The peer reposts the receives of CREDITs and DONEs at once.
 * The reserve is depth / threshold + 3 for CREDITs, one for the receive a
 * CREDIT lends to data, and the window for DONEs.
 */

/** Receives owed before a CREDIT goes out without data to ride on. */
export function creditThreshold(depth: number): number {
  return Math.max(2, Math.floor(depth / 4));
}

/** Rendezvous sends a side with this `depth` keeps awaiting DONE at most (see the module comment). */
export function rendezvousWindow(depth: number): number {
  return Math.min(depth, 16);
}

/**
 * Requests a side keeps awaiting their replies at most, when its peer has
 * this `depth`: one fewer than the peer's data receives, so the peer's
 * receives are never all held by requests it keeps until their replies
 * have gone (see the module comment).
 */
export function requestWindow(peerDepth: number): number {
  return peerDepth - 1;
}

/** Receives a side keeps beyond `depth` for CREDIT and DONE messages (see the module comment). */
export function creditReserve(depth: number): number {
  return Math.ceil(depth / creditThreshold(depth)) + 4 + rendezvousWindow(depth);
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
  /** SENDs of the peer that arrived, in all. */
  private arrivals = 0;
  /** Receives we posted for the peer, in all. */
  private posted: number;
  /** The grant we last sent (or announced at set-up). */
  private announced: number;
  /** The reserve the peer keeps free of data in our receives. */
  private readonly ownReserve: number;
  /** Whether our last SEND was a CREDIT (its receive counts as returned for data). */
  private sentCredit = false;
  /** Whether the peer's last SEND that arrived was a CREDIT. */
  private arrivedCredit = false;
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
    this.ownReserve = creditReserve(ourDepth);
    this.peerPosted = receivesFor(peerDepth);
    this.peerFirst = this.peerPosted;
    this.reserve = creditReserve(peerDepth);
    this.threshold = creditThreshold(ourDepth);
  }

  /** The peer's receives we may still use. */
  get free(): number {
    return diff(this.peerPosted, this.sent);
  }

  /** Whether a data message may go now (see the module comment for the CREDIT's receive). */
  get canSendData(): boolean {
    const free = this.free;
    return free >= 1 && free + (this.sentCredit ? 1 : 0) > this.reserve;
  }

  /** Whether a control message (CREDIT, DONE) may go now: it may use the reserve. */
  get canSendControl(): boolean {
    return this.free >= 1;
  }

  /** Receives we reposted and have not announced yet. */
  get owed(): number {
    return diff(this.posted, this.announced);
  }

  /**
   * Whether a CREDIT should go even without data: we owe `threshold`
   * receives, or what we owe would let a peer stuck on our reserve send
   * data again (see the module comment).
   */
  get creditDue(): boolean {
    const owed = this.owed;
    if (owed >= this.threshold) return true;
    if (owed === 0) return false;
    // The peer's view of our receives, as its data sees it.
    const lent = this.arrivedCredit ? 1 : 0;
    return diff(this.announced, this.arrivals) + lent <= this.ownReserve && diff(this.posted, this.arrivals) + lent > this.ownReserve;
  }

  /**
   * Whether the peer can have sent `grant`: never less than its last one
   * (headers arrive in order), and never more receives than it can have
   * posted: its first ones and one repost for each SEND of ours.
   */
  possible(grant: number): boolean {
    return diff(grant, this.peerPosted) >= 0 && diff(grant, this.sent) <= this.peerFirst;
  }

  /**
   * A SEND of the peer arrived (a CREDIT, or another type), its header
   * carrying `grant` (a {@link CreditWindow.possible} one); returns whether
   * that freed receives.
   */
  arrived(grant: number, credit: boolean): boolean {
    this.arrivals = (this.arrivals + 1) | 0;
    this.arrivedCredit = credit;
    if (diff(grant, this.peerPosted) <= 0) return false;
    this.peerPosted = grant;
    return true;
  }

  /** We reposted `n` receives for the peer. */
  reposted(n: number): void {
    this.posted = (this.posted + n) | 0;
  }

  /** A SEND is going out (a CREDIT, or another type): takes a receive and returns the grant its header carries. */
  spend(credit: boolean): number {
    this.sent = (this.sent + 1) | 0;
    this.sentCredit = credit;
    this.announced = this.posted;
    return this.posted >>> 0;
  }
}
