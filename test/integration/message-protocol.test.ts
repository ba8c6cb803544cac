import { randomBytes } from 'crypto';
import { firstValueFrom, Subscription } from 'rxjs';
import { acceptMessages, connect, Connection, listen, Listener, MessageConnection, Mr } from '../../src';

/**
 * The README's "Message protocol" section is enough to write a peer: this
 * one is written from it alone (plain `connect()`, hand-made set-up bytes
 * and headers, its own credit counting; nothing from src/messages), and
 * talks to `acceptMessages()` on soft0 with `rnrRetryCount: 0`, so a
 * documented rule that let a SEND meet an empty receive queue would fail a
 * completion here.
 */
const HOST = '127.0.0.1';

// The numbers as the README gives them.
const TYPE = { EAGER: 1, RENDEZVOUS: 2, DONE: 3, CREDIT: 4 };
const FLAG = { REQUEST: 1, RESPONSE: 2, ERROR: 4, CANCELLED: 8 };
const threshold = (d: number) => Math.max(2, Math.floor(d / 4));
const windowOf = (d: number) => Math.min(d, 16);
const reserve = (d: number) => Math.ceil(d / threshold(d)) + 4 + windowOf(d);
const receives = (d: number) => d + reserve(d);
const int32 = (x: number) => x | 0;

interface Setup {
  magic: string;
  version: number;
  maxEager: number;
  depth: number;
  flags: number;
  maxMessage: number;
}

interface Received {
  type: number;
  flags: number;
  grant: number;
  id: number;
  length: number;
  payload: Buffer;
}

function setupBytes(s: Omit<Setup, 'magic' | 'flags'>): Buffer {
  const b = Buffer.alloc(16);
  b.write('RXM', 0, 'latin1');
  b.writeUInt8(s.version, 3);
  b.writeUInt32LE(s.maxEager, 4);
  b.writeUInt16LE(s.depth, 8);
  b.writeUInt32LE(s.maxMessage, 12);
  return b;
}

function readSetup(data: Uint8Array): Setup {
  const b = Buffer.from(data);
  return {
    magic: b.toString('latin1', 0, 3),
    version: b.readUInt8(3),
    maxEager: b.readUInt32LE(4),
    depth: b.readUInt16LE(8),
    flags: b.readUInt8(10),
    maxMessage: b.readUInt32LE(12),
  };
}

/** A peer of the message layer written from the README. It reposts every receive at once. */
class RawPeer {
  private posted: number;
  private peerGrant: number;
  private sent = 0;
  private readonly inbox: Received[] = [];
  private wake: (() => void) | undefined;
  private readonly subscription: Subscription;
  peer!: Setup;

  private constructor(
    readonly conn: Connection,
    private readonly recvMr: Mr,
    private readonly sendMr: Mr,
    private readonly slot: number,
    private readonly depth: number,
  ) {
    this.posted = receives(depth);
    this.peerGrant = 0;
    this.subscription = conn.recvCq.completions$.subscribe((batch) => {
      for (const wc of batch) {
        if (wc.status !== 'SUCCESS') throw new Error(`a receive completed ${wc.status}`);
        const at = Number(wc.wrId) * slot;
        const b = recvMr.buffer;
        const got: Received = {
          type: b.readUInt8(at),
          flags: b.readUInt8(at + 1),
          grant: b.readUInt32LE(at + 4),
          id: b.readUInt32LE(at + 8),
          length: b.readUInt32LE(at + 12),
          payload: Buffer.from(b.subarray(at + 16, at + wc.byteLen)),
        };
        if (got.length !== wc.byteLen - 16) throw new Error(`length ${got.length} in a SEND of ${wc.byteLen}`);
        if (int32(got.grant - this.peerGrant) > 0) this.peerGrant = got.grant;
        this.conn.qp.postRecv({ wrId: wc.wrId, sg: { mr: this.recvMr, offset: at, length: this.slot } });
        this.posted++;
        this.inbox.push(got);
      }
      this.wake?.();
    });
  }

  static async connect(port: number, setup: { maxEager: number; depth: number; maxMessage: number }): Promise<RawPeer> {
    const slot = 16 + Math.max(setup.maxEager, 20);
    const n = receives(setup.depth);
    let mrs!: [Mr, Mr];
    const conn = await connect({
      host: HOST,
      port,
      rnrRetryCount: 0,
      privateData: setupBytes({ version: 1, ...setup }),
      prepare: ({ pd, qp }) => {
        mrs = [pd.allocMemory(n * slot, { access: ['LOCAL_WRITE'] }), pd.allocMemory(slot)];
        for (let i = 0; i < n; i++) qp.postRecv({ wrId: i, sg: { mr: mrs[0], offset: i * slot, length: slot } });
      },
    });
    const peer = new RawPeer(conn, mrs[0], mrs[1], slot, setup.depth);
    peer.peer = readSetup(conn.privateData);
    peer.peerGrant = receives(peer.peer.depth);
    return peer;
  }

  /** The peer's receives this side may still use. */
  get free(): number {
    return int32(this.peerGrant - this.sent);
  }

  /** Whether the README's rule lets a data message (EAGER, RENDEZVOUS, DONE) go now. */
  get maySendData(): boolean {
    return this.free > reserve(this.peer.depth);
  }

  /** Sends one message by the rules, and waits for its completion. */
  async send(type: number, flags: number, id: number, payload: Uint8Array = new Uint8Array(0)): Promise<void> {
    if (type === TYPE.CREDIT || type === TYPE.DONE ? this.free < 1 : !this.maySendData) throw new Error('the rules do not allow this SEND now');
    const b = this.sendMr.buffer;
    b.writeUInt8(type, 0);
    b.writeUInt8(flags, 1);
    b.writeUInt16LE(0, 2);
    b.writeUInt32LE(this.posted >>> 0, 4);
    b.writeUInt32LE(id, 8);
    b.writeUInt32LE(payload.length, 12);
    b.set(payload, 16);
    this.sent++;
    this.conn.qp.postSend({ wrId: 1, sg: { mr: this.sendMr, length: 16 + payload.length } });
    await this.completion('SEND');
  }

  /** RDMA READs `length` bytes from the peer into `mr`. */
  async read(mr: Mr, addr: bigint, rkey: number, length: number): Promise<void> {
    this.conn.qp.postSend({ wrId: 2, opcode: 'RDMA_READ', sg: { mr, length }, remote: { addr, rkey } });
    await this.completion('RDMA_READ');
  }

  private async completion(opcode: string): Promise<void> {
    const batch = await this.conn.sendCq.completions$.take();
    const wc = [...batch!][0];
    expect([wc.opcode, wc.status]).toEqual([opcode, 'SUCCESS']);
  }

  /** The newest grant of the peer. */
  get grant(): number {
    return this.peerGrant;
  }

  /** The messages that arrived and were not read yet, now (no waiting). */
  queued(): Received[] {
    return this.inbox.splice(0);
  }

  /** The next message the peer sent. */
  async next(): Promise<Received> {
    while (this.inbox.length === 0) await new Promise<void>((resolve) => (this.wake = resolve));
    return this.inbox.shift()!;
  }

  close(): void {
    this.subscription.unsubscribe();
    this.conn.close();
  }
}

describe('the README\'s message protocol, spoken by a peer written from it', () => {
  let listener: Listener;
  let server: MessageConnection;
  let raw: RawPeer;
  const SERVER = { maxEager: 256, depth: 8 };

  beforeEach(async () => {
    listener = listen({ host: HOST, port: 0 });
    const accepted = firstValueFrom(listener.requests$).then((r) => acceptMessages(r, { messages: SERVER }));
    raw = await RawPeer.connect(listener.address!.port, { maxEager: 256, depth: 4, maxMessage: 1 << 20 });
    server = await accepted;
  });

  afterEach(() => {
    raw.close();
    server.close();
    listener.close();
  });

  it('set-up, an eager request and its reply, an error reply', async () => {
    expect(raw.peer).toEqual({ magic: 'RXM', version: 1, maxEager: 256, depth: 8, flags: 0, maxMessage: 256 << 20 });
    expect(server.peerLimits).toEqual({ maxEager: 256, depth: 4, maxMessage: 1 << 20 });
    server.serve((req) => {
      if (req.text() === 'fail') throw new Error('no such thing');
      return req.text().toUpperCase();
    });
    await raw.send(TYPE.EAGER, FLAG.REQUEST, 7, Buffer.from('ping'));
    const reply = await raw.next();
    // The first message carries the grant the set-up implies: receives(depth).
    expect(reply).toEqual({ type: TYPE.EAGER, flags: FLAG.RESPONSE, grant: receives(8), id: 7, length: 4, payload: Buffer.from('PING') });
    await raw.send(TYPE.EAGER, FLAG.REQUEST, 8, Buffer.from('fail'));
    const failed = await raw.next();
    expect(failed).toMatchObject({ type: TYPE.EAGER, flags: FLAG.RESPONSE | FLAG.ERROR, id: 8 });
    expect(failed.payload.toString('utf8')).toBe('no such thing');
  });

  it('credits: data stops at the reserve; released messages come back as CREDIT grants, and no SEND meets an empty queue', async () => {
    const bodies: string[] = [];
    while (raw.maySendData) {
      const body = `m${bodies.length}`;
      await raw.send(TYPE.EAGER, 0, 0, Buffer.from(body));
      bodies.push(body);
    }
    // receives(8) = 24 posted for us, reserve(8) = 16 kept for CREDITs and DONEs: 8 data messages.
    expect(bodies).toHaveLength(receives(8) - reserve(8));
    const got: string[] = [];
    while (got.length < bodies.length) {
      const m = (await server.messages$.take())!;
      got.push(m.text());
      m.release();
    }
    expect(got).toEqual(bodies);
    expect(server.stats.lent).toBe(0);
    // The server owes 8 receives now and has no data to carry the grant:
    // CREDITs do, at least until this side may send again (the server sends
    // one as soon as this side is stuck on its reserve, and then one per
    // threshold(8) = 2 receives owed, so 1 may stay owed).
    while (!raw.maySendData) await raw.next();
    await new Promise((resolve) => setTimeout(resolve, 50));
    const credits = raw.queued();
    expect(credits.every((c) => c.type === TYPE.CREDIT && c.flags === 0 && c.id === 0 && c.length === 0)).toBe(true);
    expect(raw.grant).toBeGreaterThanOrEqual(receives(8) + bodies.length - (threshold(8) - 1));
    expect(raw.grant).toBeLessThanOrEqual(receives(8) + bodies.length);
    expect(raw.maySendData).toBe(true);
    await raw.send(TYPE.EAGER, 0, 0, Buffer.from('after'));
    const m = (await server.messages$.take())!;
    expect(m.text()).toBe('after');
    m.release();
  });

  it('rendezvous both ways: the descriptor, the READ, DONE', async () => {
    // This side to the server: a message past maxEager, left for the server to READ.
    const big = randomBytes(100_000);
    const source = raw.conn.pd.allocMemory(big.length, { access: ['LOCAL_WRITE', 'REMOTE_READ'] });
    big.copy(source.buffer);
    const descriptor = Buffer.alloc(20);
    descriptor.writeBigUInt64LE(source.addr, 0);
    descriptor.writeUInt32LE(source.rkey, 8);
    descriptor.writeUInt32LE(big.length, 12);
    await raw.send(TYPE.RENDEZVOUS, 0, 41, descriptor);
    const m = (await server.messages$.take())!;
    expect(m.rendezvous).toBe(true);
    expect(m.data.equals(big)).toBe(true);
    m.release();
    expect(await raw.next()).toMatchObject({ type: TYPE.DONE, flags: 0, id: 41, length: 0 });

    // The server to this side: a large reply comes as a descriptor naming the request.
    const answer = randomBytes(50_000);
    server.serve(() => answer);
    await raw.send(TYPE.EAGER, FLAG.REQUEST, 9, Buffer.from('big'));
    const rv = await raw.next();
    expect(rv).toMatchObject({ type: TYPE.RENDEZVOUS, flags: FLAG.RESPONSE, length: 20 });
    const d = rv.payload;
    expect(d.readUInt32LE(12)).toBe(answer.length);
    expect(d.readUInt32LE(16)).toBe(9);
    const dest = raw.conn.pd.allocMemory(answer.length, { access: ['LOCAL_WRITE'] });
    await raw.read(dest, d.readBigUInt64LE(0), d.readUInt32LE(8), answer.length);
    expect(dest.buffer.subarray(0, answer.length).equals(answer)).toBe(true);
    await raw.send(TYPE.DONE, 0, rv.id);
    // DONE settles the server's reply; serve() then releases the request. A
    // plain message sent after DONE arrives after it, so by then nothing is lent.
    await raw.send(TYPE.EAGER, 0, 0, Buffer.from('last'));
    const last = (await server.messages$.take())!;
    expect(last.text()).toBe('last');
    last.release();
    expect(server.stats).toMatchObject({ rendezvousSent: 1, rendezvousReceived: 1, lent: 0 });
  });
});
