import { creditReserve, creditThreshold, CreditWindow, receivesFor, rendezvousWindow, requestWindow } from '../../../src/messages/credits';

describe('message credits: the sizes', () => {
  it('posts depth receives for data and a reserve for CREDITs and DONEs', () => {
    for (const depth of [2, 3, 4, 7, 8, 9, 64, 100, 4096]) {
      const threshold = creditThreshold(depth);
      expect(threshold).toBeGreaterThanOrEqual(2);
      expect(rendezvousWindow(depth)).toBe(Math.min(depth, 16));
      expect(creditReserve(depth)).toBe(Math.ceil(depth / threshold) + 4 + rendezvousWindow(depth));
      expect(receivesFor(depth)).toBe(depth + creditReserve(depth));
    }
  });
});

describe('message credits: one side\'s window', () => {
  it('sends data while more than the reserve is free, control messages into the reserve', () => {
    const w = new CreditWindow(4, 4);
    const total = receivesFor(4);
    expect(w.free).toBe(total);
    let data = 0;
    while (w.canSendData) {
      w.spend(false);
      data++;
    }
    expect(data).toBe(4);
    let control = 0;
    while (w.canSendControl) {
      w.spend(false);
      control++;
    }
    expect(control).toBe(creditReserve(4));
    expect(w.free).toBe(0);
    // The peer's next header grants what it reposted.
    expect(w.arrived(total + 3, false)).toBe(true);
    expect(w.free).toBe(3);
    expect(w.arrived(total + 3, false)).toBe(false);
  });

  it('owes what it reposted until a header carries the grant; a CREDIT is due at the threshold', () => {
    const w = new CreditWindow(64, 64);
    w.reposted(creditThreshold(64) - 1);
    expect(w.creditDue).toBe(false);
    w.reposted(1);
    expect(w.creditDue).toBe(true);
    expect(w.spend(false)).toBe(receivesFor(64) + creditThreshold(64));
    expect(w.owed).toBe(0);
  });

  it('tells a peer stuck on the reserve of a single receive released, below the threshold', () => {
    const w = new CreditWindow(8, 8);
    const first = receivesFor(8);
    // The peer fills every data receive of ours; it cannot send data now.
    for (let i = 0; i < 8; i++) w.arrived(first, false);
    expect(creditThreshold(8)).toBe(2);
    w.reposted(1);
    expect(w.creditDue).toBe(true);
    w.spend(true);
    expect(w.owed).toBe(0);
    // Once told, the peer is not stuck: a second release waits for the threshold.
    w.reposted(1);
    expect(w.creditDue).toBe(false);
    w.reposted(1);
    expect(w.creditDue).toBe(true);
  });

  it('lends the receive of its last CREDIT to data (the peer reposts it on arrival), never the last receive', () => {
    const w = new CreditWindow(4, 4);
    const reserve = creditReserve(4);
    for (let i = 0; i < 4; i++) w.spend(false);
    expect(w.free).toBe(reserve);
    expect(w.canSendData).toBe(false);
    w.spend(true);
    expect(w.free).toBe(reserve - 1);
    expect(w.canSendData).toBe(false);
    // A CREDIT's receive counts once, and only while it is the last SEND.
    const tight = new CreditWindow(4, 4);
    for (let i = 0; i < 3; i++) tight.spend(false);
    tight.spend(true);
    expect(tight.free).toBe(reserve);
    expect(tight.canSendData).toBe(true);
    tight.spend(false);
    expect(tight.canSendData).toBe(false);
  });

  it('takes only grants the peer can have sent: never fewer than before, never more than its first receives plus our SENDs', () => {
    const w = new CreditWindow(8, 4);
    const first = receivesFor(4);
    expect(w.possible(first)).toBe(true);
    expect(w.possible(first + 1)).toBe(false); // nothing of ours arrived that it could have reposted
    w.spend(false);
    w.spend(false);
    expect(w.possible(first + 2)).toBe(true);
    expect(w.possible(first + 3)).toBe(false);
    w.arrived(first + 2, false);
    expect(w.possible(first + 1)).toBe(false); // backwards
    expect(w.possible(first + 2)).toBe(true);
  });

  it('counts across the 2^32 wrap of the counters', () => {
    const w = new CreditWindow(4, 4);
    const first = receivesFor(4);
    // 2^32 SENDs, each answered by a repost, in steps the window allows.
    let grant = first;
    for (let i = 0; i < 4; i++) {
      for (let k = 0; k < 4; k++) w.spend(false);
      grant = (grant + 4) >>> 0;
      expect(w.possible(grant)).toBe(true);
      w.arrived(grant, false);
    }
    expect(w.free).toBe(first);
    // Far along: the same arithmetic holds where the counters wrap.
    const far = new CreditWindow(4, 4) as unknown as { sent: number; peerPosted: number };
    far.sent = 0xfffffffe | 0;
    far.peerPosted = (0xfffffffe + first) | 0;
    const wrapped = far as unknown as CreditWindow;
    expect(wrapped.free).toBe(first);
    wrapped.spend(false);
    wrapped.spend(false);
    wrapped.spend(false);
    expect(wrapped.free).toBe(first - 3);
    expect(wrapped.possible((0xfffffffe + first + 3) >>> 0)).toBe(true);
    expect(wrapped.possible((0xfffffffe + first + 4) >>> 0)).toBe(false);
    expect(wrapped.arrived((0xfffffffe + first + 3) >>> 0, false)).toBe(true);
    expect(wrapped.free).toBe(first);
  });
});

/**
 * A model of two sides running the credit rules of message-connection.ts
 * over an in-order wire: DONEs first (into the reserve), then replies, then
 * messages and requests in order; a rendezvous only within the window, a
 * request only within the request window; a CREDIT when due. Consumers
 * behave like `serve()` (a request is held until its reply has settled; a
 * rendezvous reply settles on its DONE) and hold other messages for a
 * while. Every SEND must find a receive posted (no RNR), every grant must
 * be one the window takes, and the pair must always finish, never stall or
 * answer CREDITs for ever.
 */
describe('message credits: two sides under the rules', () => {
  type Role = 'request' | 'reply' | 'message';
  interface Frame {
    kind: 'eager' | 'rdv' | 'done' | 'credit';
    grant: number;
    role?: Role;
    rdvId?: number;
  }
  interface Held {
    role: Role;
    answered: boolean;
    /** A request: its reply has settled, it may go. */
    settled: boolean;
  }
  interface Out {
    kind: 'eager' | 'rdv';
    role: Role;
    /** The held request a reply answers. */
    answers?: Held;
  }

  function prng(seed: number): () => number {
    let x = seed >>> 0 || 1;
    return () => {
      x ^= x << 13;
      x ^= x >>> 17;
      x ^= x << 5;
      return (x >>> 0) / 2 ** 32;
    };
  }

  class Side {
    readonly w: CreditWindow;
    posted: number;
    /** SENDs on their way to this side. */
    readonly wire: Frame[] = [];
    readonly held: Held[] = [];
    readonly outgoing: Out[] = [];
    readonly replies: Out[] = [];
    readonly dones: number[] = [];
    readonly awaiting = new Map<number, Held | undefined>();
    requestsOut = 0;
    nextRdv = 1;
    /** Replies and messages that arrived. */
    readonly arrived = { reply: 0, message: 0 };
    credits = 0;
    peer!: Side;
    constructor(
      readonly depth: number,
      readonly peerDepth: number,
      private readonly random: () => number,
    ) {
      this.w = new CreditWindow(depth, peerDepth);
      this.posted = receivesFor(depth);
    }
    private sendFrame(f: Omit<Frame, 'grant'>): void {
      if (!this.w.canSendControl) throw new Error('a SEND without a free receive in view');
      this.peer.wire.push({ ...f, grant: this.w.spend(f.kind === 'credit') });
    }
    repost(): void {
      this.posted++;
      this.w.reposted(1);
    }
    pump(): void {
      while (this.dones.length > 0 && this.w.canSendControl) this.sendFrame({ kind: 'done', rdvId: this.dones.shift() });
      for (const queue of [this.replies, this.outgoing]) {
        while (this.dones.length === 0 && queue.length > 0 && this.w.canSendData) {
          const head = queue[0];
          if (head.kind === 'rdv' && this.awaiting.size >= rendezvousWindow(this.depth)) break;
          if (head.role === 'request' && this.requestsOut >= requestWindow(this.peerDepth)) break;
          queue.shift();
          if (head.role === 'request') this.requestsOut++;
          if (head.kind === 'rdv') {
            const id = this.nextRdv++;
            this.awaiting.set(id, head.answers);
            this.sendFrame({ kind: 'rdv', role: head.role, rdvId: id });
          } else {
            if (head.answers) head.answers.settled = true;
            this.sendFrame({ kind: 'eager', role: head.role });
          }
        }
      }
      if (this.w.creditDue && this.w.canSendControl) {
        this.credits++;
        this.sendFrame({ kind: 'credit' });
      }
    }
    /** The next SEND arrives. */
    receive(): void {
      const f = this.wire.shift()!;
      if (this.posted === 0) throw new Error('RNR: a SEND found no receive posted');
      this.posted--;
      if (!this.w.possible(f.grant)) throw new Error(`grant ${f.grant} refused`);
      this.w.arrived(f.grant, f.kind === 'credit');
      if (f.kind === 'done') {
        const answers = this.awaiting.get(f.rdvId!);
        if (!this.awaiting.delete(f.rdvId!)) throw new Error('DONE for nothing');
        if (answers) answers.settled = true;
        this.repost();
      } else if (f.kind === 'credit') {
        this.repost();
      } else {
        // The READ is done at once here; the receive stays with the message until it is released.
        if (f.kind === 'rdv') this.dones.push(f.rdvId!);
        if (f.role === 'reply') this.requestsOut--;
        if (f.role !== 'request') this.arrived[f.role!]++;
        this.held.push({ role: f.role!, answered: false, settled: false });
      }
    }
    /** What the consumer may do now. */
    moves(): Array<() => void> {
      const out: Array<() => void> = [];
      this.held.forEach((h, i) => {
        if (h.role === 'request' && !h.answered) {
          out.push(() => {
            h.answered = true;
            this.replies.push({ kind: this.random() < 0.5 ? 'rdv' : 'eager', role: 'reply', answers: h });
          });
        } else if (h.role !== 'request' || h.settled) {
          out.push(() => {
            this.held.splice(i, 1);
            this.repost();
          });
        }
      });
      return out;
    }
  }

  it('never sends into an empty receive queue and always finishes: mixed depths, requests both ways, held messages, rendezvous', () => {
    for (let seed = 1; seed <= 300; seed++) {
      const next = prng(seed);
      const big = seed % 10 === 0;
      const depths = [2 + Math.floor(next() * (big ? 300 : 30)), 2 + Math.floor(next() * (big ? 300 : 30))];
      const a = new Side(depths[0], depths[1], next);
      const b = new Side(depths[1], depths[0], next);
      a.peer = b;
      b.peer = a;
      const n = 40 + Math.floor(next() * 80);
      const counts = { request: 0, message: 0 };
      for (const s of [a, b]) {
        for (let i = 0; i < n; i++) {
          const role = next() < 0.6 ? 'request' : 'message';
          if (s === a) counts[role]++;
          s.outgoing.push({ kind: next() < 0.5 ? 'rdv' : 'eager', role });
        }
      }
      const show = (s: Side) =>
        JSON.stringify({ free: s.w.free, owed: s.w.owed, reserve: s.w.reserve, posted: s.posted, held: s.held.length, outgoing: s.outgoing.length, replies: s.replies.length, dones: s.dones.length, awaiting: s.awaiting.size, requestsOut: s.requestsOut, arrived: s.arrived });
      const where = () => `seed ${seed} (depths ${depths.join(', ')})\n${show(a)}\n${show(b)}`;
      for (let step = 0; ; step++) {
        a.pump();
        b.pump();
        if (step > 100_000) throw new Error(`${where()}: no end after ${step} steps`);
        const moves = [...a.moves(), ...b.moves()];
        if (a.wire.length > 0) moves.push(() => a.receive());
        if (b.wire.length > 0) moves.push(() => b.receive());
        if (moves.length === 0) break;
        moves[Math.floor(next() * moves.length)]();
      }
      // Everything went and came back, and nothing is held.
      const total = (s: Side) => s.arrived.reply + s.arrived.message;
      if (total(a) + total(b) !== 2 * n || a.held.length + b.held.length > 0 || a.outgoing.length + b.outgoing.length > 0) {
        throw new Error(`${where()}: stuck`);
      }
      expect(b.arrived.message + a.arrived.reply).toBe(counts.message + counts.request);
    }
  });
});
