/**
 * The rping protocol loops against a peer written here by hand, in one
 * process on soft0 over the soft CM: what each side does when the other
 * breaks the protocol or leaves. (Both sides ours, through the built CLI:
 * rping.test.ts.)
 */
import { firstValueFrom } from 'rxjs';
import { connect, listen, type Connection, type Listener, type Mr, type VerbsResources } from '../../src';
import { RpingSession, type SessionOptions } from '../../src/cli/rping/session';
import { decodeInfo, encodeInfo, INFO_BYTES } from '../../src/cli/rping/wire';

const HOST = '127.0.0.1';
const OPTIONS: SessionOptions = { size: 64, count: 3, verbose: false, validate: true, debug: false };

/**
 * A listener and a connected pair: `ours` runs a session whose buffers and
 * receive were made in `prepare`, `peer` is driven by the test.
 */
async function pair(
  oursIs: 'server' | 'client',
  options: SessionOptions,
): Promise<{ listener: Listener; ours: Connection; peer: Connection; session: RpingSession }> {
  const listener = listen({ host: HOST, port: 0 });
  let session: RpingSession | undefined;
  const prepare = (r: VerbsResources) => (session = new RpingSession(r, oursIs, options, () => undefined));
  const request = firstValueFrom(listener.requests$);
  const client = connect({ host: HOST, port: listener.address!.port, ...(oursIs === 'client' ? { prepare } : {}) });
  const server = await (await request).accept(oursIs === 'server' ? { prepare } : {});
  const conn = await client;
  const [ours, peer] = oursIs === 'server' ? [server, conn] : [conn, server];
  return { listener, ours, peer, session: session! };
}

/** The hand-made peer's buffers and its one receive. */
class Peer {
  readonly recv: Mr;
  readonly send: Mr;
  constructor(readonly conn: Connection) {
    this.recv = conn.pd.allocMemory(INFO_BYTES, { access: ['LOCAL_WRITE'] });
    this.send = conn.pd.allocMemory(64, { access: ['LOCAL_WRITE', 'REMOTE_READ', 'REMOTE_WRITE'] });
    conn.qp.postRecv({ wrId: 1, sg: { mr: this.recv } });
  }
  sendBytes(n: number): void {
    this.conn.qp.postSend({ wrId: 2, sg: { mr: this.send, length: n } });
  }
  /** The next receive's advertisement, re-posting the receive. */
  async advertisement(): Promise<{ addr: bigint; rkey: number; size: number }> {
    for (;;) {
      const batch = await firstValueFrom(this.conn.recvCq.completions$);
      for (let i = 0; i < batch.length; i++) {
        if (batch.opcode[i] !== 128) continue;
        expect(batch.status[i]).toBe(0);
        const info = decodeInfo(Buffer.from(this.recv.buffer));
        this.conn.qp.postRecv({ wrId: 1, sg: { mr: this.recv } });
        return info;
      }
    }
  }
}

describe('rping sessions against a peer that misbehaves (soft0, soft CM)', () => {
  let listener: Listener | undefined;
  const conns: Connection[] = [];
  const sessions: RpingSession[] = [];
  afterEach(() => {
    for (const c of conns.splice(0)) c.close();
    for (const s of sessions.splice(0)) s.close();
    listener?.close();
  });

  async function setUp(oursIs: 'server' | 'client', options: SessionOptions = OPTIONS) {
    const p = await pair(oursIs, options);
    listener = p.listener;
    conns.push(p.ours, p.peer);
    sessions.push(p.session);
    p.session.start(p.ours);
    return { session: p.session, peer: new Peer(p.peer) };
  }

  it('server: a message that is not 16 bytes is "bogus data"', async () => {
    const { session, peer } = await setUp('server');
    const served = session.serve();
    peer.sendBytes(12);
    await expect(served).rejects.toThrow('received bogus data, size 12');
  });

  it('server: a client buffer larger than its -S is refused before any RDMA', async () => {
    const { session, peer } = await setUp('server');
    const served = session.serve();
    encodeInfo({ addr: peer.send.addr, rkey: peer.send.rkey, size: 65 }, peer.send.buffer);
    peer.sendBytes(INFO_BYTES);
    await expect(served).rejects.toThrow("the client pings 65 bytes, more than this server's -S 64");
  });

  it('server: the client leaving is the normal end, with the pings served', async () => {
    const { session, peer } = await setUp('server');
    const served = session.serve();
    peer.conn.close();
    await expect(served).resolves.toBe(0);
  });

  it('client: the server leaving before -C pings is an error naming how far it got', async () => {
    const { session, peer } = await setUp('client');
    const pinging = session.ping();
    const source = await peer.advertisement(); // the first ping's source buffer, then the peer hangs up
    expect(source.size).toBe(64);
    peer.conn.close();
    await expect(pinging).rejects.toThrow('the server disconnected after 0 of 3 pings');
  });

  it('client with -C 0: the server leaving is the normal end', async () => {
    const { session, peer } = await setUp('client', { ...OPTIONS, count: 0 });
    const pinging = session.ping();
    await peer.advertisement();
    peer.conn.close();
    await expect(pinging).resolves.toBe(0);
  });

  it('client: a short go-ahead is "bogus data"', async () => {
    const { session, peer } = await setUp('client');
    const pinging = session.ping();
    await peer.advertisement();
    peer.sendBytes(8);
    await expect(pinging).rejects.toThrow('received bogus data, size 8');
  });

  it('client: a go-ahead longer than the 16-byte receive fails it (LOC_LEN_ERR), as a typed error', async () => {
    const { session, peer } = await setUp('client');
    const pinging = session.ping();
    await peer.advertisement();
    peer.sendBytes(20);
    await expect(pinging).rejects.toMatchObject({ name: 'WorkCompletionError', status: 'LOC_LEN_ERR' });
  });
});
