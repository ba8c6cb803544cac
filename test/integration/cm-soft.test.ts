import * as fs from 'fs';
import { filter, firstValueFrom, lastValueFrom } from 'rxjs';
import {
  connect as connectApi,
  connect$,
  listen as listenApi,
  ConnectionOptions,
  ListenOptions,
  Connection,
  ConnectionRejectedError,
  ConnectTimeoutError,
  AddressResolutionError,
  ListenerClosedError,
  Mr,
  WcBatch,
  softCmAddresses,
  openDevice,
  ackEvents,
  rearm,
  drainCq,
  DeviceRemovedError,
  DisconnectedError,
  createSoftDevice,
} from '../../src';
import { scaled } from '../support/slow';
import { waitFor } from '../support/device';

/**
 * The connection API (src/cm) end to end on soft0 over the soft CM: the
 * same code the virtual CM's unit tests drive, now with real ids, real
 * events and real data moving between QPs made on the CM's device.
 */
const HOST = '127.0.0.1';
const SLOT = 256;

/** One side's buffers: a receive slot and a send slot, and a counter of wr_ids. */
class End {
  readonly mr: Mr;
  private wrId = 0;
  constructor(readonly conn: Connection) {
    this.mr = conn.pd.allocMemory(2 * SLOT, { access: ['LOCAL_WRITE'] });
  }
  postRecv(): void {
    this.conn.qp.postRecv({ wrId: ++this.wrId, sg: { mr: this.mr, offset: 0, length: SLOT } });
  }
  send(text: string): void {
    const n = this.mr.buffer.write(text, SLOT);
    this.conn.qp.postSend({ wrId: ++this.wrId, sg: { mr: this.mr, offset: SLOT, length: n } });
  }
  /** The text of the next receive, taken from recvCq.completions$. */
  async received(): Promise<string> {
    const batch = (await this.conn.recvCq.completions$.take()) as WcBatch;
    const wc = batch.at(0)!;
    expect(wc.status).toBe('SUCCESS');
    return this.mr.buffer.toString('utf8', 0, wc.byteLen);
  }
  async sent(): Promise<void> {
    const batch = (await this.conn.sendCq.completions$.take()) as WcBatch;
    expect(batch.at(0)!.status).toBe('SUCCESS');
  }
}

/**
 * Everything a test opens, closed after it whatever happened: a failed
 * assertion must not leave a listener holding jest's process open.
 */
const opened: Array<{ close(): void }> = [];
function listen(options: ListenOptions) {
  return track(listenApi(options));
}
async function connect(options: ConnectionOptions) {
  return track(await connectApi(options));
}
function track<T extends { close(): void }>(thing: T): T {
  opened.push(thing);
  return thing;
}
afterEach(() => {
  for (const thing of opened.splice(0).reverse()) {
    try {
      thing.close();
    } catch {
      // closed already, or its device is gone
    }
  }
});

function openFds(): number {
  return fs.readdirSync('/proc/self/fd').length;
}

describe('connections on soft0 over the soft CM', () => {
  it('soft0 answers on loopback, so the soft CM is the default there', () => {
    expect(softCmAddresses().soft0).toEqual(expect.arrayContaining(['127.0.0.1', '::1']));
  });

  it('serves many clients on one listener, data verified both ways through completions$', async () => {
    const listener = listen({ host: HOST, port: 0 });
    const port = listener.address!.port;
    const servers: Connection[] = [];
    const served: Promise<void>[] = [];
    listener.requests$.subscribe((request) => {
      served.push(
        request.accept({ privateData: 'welcome' }).then(async (conn) => {
          servers.push(conn);
          const end = new End(conn);
          end.postRecv();
          const question = await end.received();
          end.send(`pong ${question}`);
          await end.sent();
        }),
      );
    });
    const clients = await Promise.all(
      Array.from({ length: 8 }, async (_, i) => {
        const conn = await connect({ host: HOST, port, privateData: `client ${i}` });
        expect(Buffer.from(conn.privateData).toString()).toBe('welcome');
        expect(conn.qp.state).toBe('RTS');
        expect(conn.context.deviceName).toBe('soft0');
        const end = new End(conn);
        end.postRecv();
        end.send(`ping ${i}`);
        await end.sent();
        expect(await end.received()).toBe(`pong ping ${i}`);
        return conn;
      }),
    );
    await Promise.all(served);
    expect(servers.length).toBe(8);
    for (const c of clients) c.close();
    for (const s of servers) s.close();
    listener.close();
  });

  it('rejects with private data', async () => {
    const listener = listen({ host: HOST, port: 0 });
    listener.requests$.subscribe((r) => r.reject({ privateData: 'full' }));
    const err = (await connect({ host: HOST, port: listener.address!.port }).catch((e: unknown) => e)) as ConnectionRejectedError;
    expect(err).toBeInstanceOf(ConnectionRejectedError);
    expect(err.reason).toBe(28);
    expect(Buffer.from(err.privateData).toString()).toBe('full');
    listener.close();
  });

  it('says nobody listens on a free port', async () => {
    const listener = listen({ host: HOST, port: 0 });
    const free = listener.address!.port;
    listener.close();
    const err = (await connect({ host: HOST, port: free }).catch((e: unknown) => e)) as ConnectionRejectedError;
    expect(err).toBeInstanceOf(ConnectionRejectedError);
    expect(err.noListener).toBe(true);
  });

  it('times out (ours) on an address nobody has, everything released; the CM says so after 2 s', async () => {
    const fds = openFds();
    const err = await connect({ host: '198.19.255.77', port: 7471, provider: 'soft', timeoutMs: 200 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConnectTimeoutError);
    const slow = await connect({ host: '198.19.255.78', port: 7471, provider: 'soft', timeoutMs: scaled(10_000) }).catch((e: unknown) => e);
    expect(slow).toBeInstanceOf(AddressResolutionError);
    expect(openFds()).toBe(fds);
  });

  it('disconnect from either side ends the other with disconnected$ and flushes its posted receives', async () => {
    const listener = listen({ host: HOST, port: 0 });
    const accepted = firstValueFrom(listener.requests$).then((r) => r.accept());
    const client = await connect({ host: HOST, port: listener.address!.port });
    const server = await accepted;
    const end = new End(server);
    end.postRecv();
    const heard = firstValueFrom(server.disconnected$);
    client.close();
    expect(await heard).toEqual({ by: 'peer' });
    const flushed = (await server.recvCq.completions$.take()) as WcBatch;
    expect(flushed.at(0)!.status).toBe('WR_FLUSH_ERR');
    server.close();

    const accepted2 = firstValueFrom(listener.requests$).then((r) => r.accept());
    const client2 = await connect({ host: HOST, port: listener.address!.port });
    const server2 = await accepted2;
    const heard2 = firstValueFrom(client2.disconnected$);
    server2.close();
    expect(await heard2).toEqual({ by: 'peer' });
    client2.close();
    listener.close();
  });

  it('closing the listener rejects what is pending and leaves accepted connections working', async () => {
    const listener = listen({ host: HOST, port: 0 });
    const port = listener.address!.port;
    const first = firstValueFrom(listener.requests$).then((r) => r.accept());
    const client = await connect({ host: HOST, port });
    const server = await first;
    const pendingRequest = firstValueFrom(listener.requests$);
    const refused = connect({ host: HOST, port }).catch((e: unknown) => e);
    const request = await pendingRequest;
    listener.close();
    expect(await refused).toBeInstanceOf(ConnectionRejectedError);
    await expect(request.accept()).rejects.toBeInstanceOf(ListenerClosedError);
    // The accepted connection still carries data.
    const a = new End(client);
    const b = new End(server);
    b.postRecv();
    a.send('still here');
    expect(await b.received()).toBe('still here');
    client.close();
    server.close();
  });

  it('a request left unanswered until the client gives up: accepting it later fails, nothing hangs or leaks', async () => {
    const listener = listen({ host: HOST, port: 0 });
    // After listen(): the process's CM channel and soft0's context stay open for later connections.
    const fds = openFds();
    const pending = firstValueFrom(listener.requests$);
    const err = await connect({ host: HOST, port: listener.address!.port, timeoutMs: 200 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConnectTimeoutError);
    const request = await pending;
    // As the kernel's rdma_cm (seen on rxe): the passive side hears nothing
    // of a request withdrawn before accept; the accept finds out, typed.
    try {
      expect(request.answer).toBe('pending');
      const late = await request.accept().catch((e: unknown) => e);
      expect(late).toBeInstanceOf(DisconnectedError);
      expect((late as DisconnectedError).message).toMatch(/the peer gave up before it was accepted/);
    } finally {
      listener.close();
    }
    expect(openFds()).toBe(fds);
  });

  it('connections share one context per device and one CM channel, both kept open between connections', async () => {
    const listener = listen({ host: HOST, port: 0 });
    const port = listener.address!.port;
    const servers: Connection[] = [];
    listener.requests$.subscribe((r) => void r.accept().then((s) => servers.push(track(s))));
    const a = await connect({ host: HOST, port });
    const b = await connect({ host: HOST, port, sharedCq: true });
    const context = a.context;
    expect(b.context).toBe(context);
    expect(await waitFor(() => servers.length === 2)).toBe(true);
    expect(servers.map((s) => s.context)).toEqual([context, context]);
    expect(a.sendCq).not.toBe(a.recvCq);
    expect(b.sendCq).toBe(b.recvCq);
    const fds = openFds();
    for (const c of [a, b, ...servers]) c.close();
    listener.close();
    expect(context.closed).toBe(false);
    // Each connection's own descriptors (its completion channel) went; the kept ones stayed.
    expect(openFds()).toBeLessThan(fds);
    const again = listen({ host: HOST, port: 0 });
    again.requests$.subscribe((r) => void r.accept().then((s) => servers.push(track(s))));
    const c = await connect({ host: HOST, port: again.address!.port });
    expect(c.context).toBe(context);
    await expect(connect({ host: HOST, port, sharedCq: 1 as never })).rejects.toThrow(/sharedCq must be a boolean/);
  });

  it('runs 200 connect/close cycles with open fds flat', async () => {
    const listener = listen({ host: HOST, port: 0 });
    const port = listener.address!.port;
    listener.requests$.subscribe((r) => void r.accept().then((s) => firstValueFrom(s.disconnected$).then(() => s.close())));
    for (let i = 0; i < 10; i++) (await connect({ host: HOST, port })).close();
    const fds = openFds();
    for (let i = 0; i < 200; i++) (await connect({ host: HOST, port })).close();
    await new Promise((r) => setTimeout(r, scaled(200)));
    expect(openFds()).toBeLessThanOrEqual(fds + 2);
    listener.close();
  });

  it('works with the explicit path: the CQs on channel.events$ with ackEvents, rearm and drainCq', async () => {
    const listener = listen({ host: HOST, port: 0 });
    const accepted = firstValueFrom(listener.requests$).then((r) => r.accept());
    const client = await connect({ host: HOST, port: listener.address!.port });
    const server = await accepted;
    const b = new End(server);
    b.postRecv();
    server.recvCq.requestNotify();
    const got = firstValueFrom(
      server.channel!.events$.pipe(
        ackEvents({ every: 1 }),
        rearm(),
        drainCq(),
        filter((batch) => batch.length > 0),
      ),
    );
    new End(client).send('explicit');
    const batch = await got;
    expect(b.mr.buffer.toString('utf8', 0, batch.at(0)!.byteLen)).toBe('explicit');
    client.close();
    server.close();
    listener.close();
  });

  it('borrows a PD, CQs and channel the caller brings, and never closes them', async () => {
    const ctx = openDevice('soft0');
    const pd = ctx.allocPd();
    const channel = ctx.createCompChannel();
    const cq = ctx.createCq({ cqe: 64, channel });
    const listener = listen({ host: HOST, port: 0 });
    const accepted = firstValueFrom(listener.requests$).then((r) => r.accept({ ownChannel: false }));
    const client = await connect({ host: HOST, port: listener.address!.port, pd, sendCq: cq, recvCq: cq });
    expect(client.pd).toBe(pd);
    expect(client.sendCq).toBe(cq);
    expect(client.recvCq).toBe(cq);
    const server = await accepted;
    listener.close(); // the server's id stayed on the listener's channel: it lives on
    const b = new End(server);
    b.postRecv();
    new End(client).send('borrowed');
    expect(await b.received()).toBe('borrowed');
    client.close();
    server.close();
    expect([pd.closed, cq.closed, channel.closed]).toEqual([false, false, false]);
    ctx.close();
  });

  it('device removal ends the connection, the listener and the CQ streams of that device with a typed error', async () => {
    const name = `softcm-rm${process.pid}`;
    createSoftDevice({ name, addresses: ['198.19.9.2'] });
    const listener = listen({ host: '198.19.9.2', port: 0 });
    const requestsEnd = lastValueFrom(listener.requests$).catch((e: unknown) => e);
    const accepted = firstValueFrom(listener.requests$).then((r) => r.accept());
    const client = await connect({ host: '198.19.9.2', port: listener.address!.port });
    const server = await accepted;
    expect(server.context.deviceName).toBe(name);
    const serverEnd = firstValueFrom(server.disconnected$).catch((e: unknown) => e);
    const cqEnd = lastValueFrom(server.recvCq.completions$).catch((e: unknown) => e);
    // The client reached the address over that device's loopback, as rdma_cm
    // does: its end is on the same device and is removed too.
    expect(client.context.deviceName).toBe(name);
    const clientEnd = firstValueFrom(client.disconnected$).catch((e: unknown) => e);
    try {
      server.context.faults.deviceFatal();
      expect(await serverEnd).toBeInstanceOf(DeviceRemovedError);
      expect(await requestsEnd).toBeInstanceOf(DeviceRemovedError);
      expect(await cqEnd).toBeInstanceOf(Error);
      expect(await clientEnd).toBeInstanceOf(DeviceRemovedError);
    } finally {
      client.close();
      server.close();
      listener.close();
    }
  });

  it("the server's port goes down under a live connection: the client's send ends RETRY_EXC_ERR, it closes with fds back; with the port back it connects again", async () => {
    const serverDevice = `softcm-pd${process.pid}`;
    createSoftDevice({ name: serverDevice, addresses: ['198.19.9.4'] });
    createSoftDevice({ name: `softcm-pc${process.pid}`, addresses: ['198.19.9.5'] });
    const device = track(openDevice(serverDevice));
    const listener = listen({ host: '198.19.9.4', port: 0 });
    const accepted: Connection[] = [];
    listener.requests$.subscribe((r) => void r.accept().then((c) => accepted.push(track(c))));
    const options = { host: '198.19.9.4', port: listener.address!.port, localHost: '198.19.9.5' };
    // A first connection opens the client device's context and the CM
    // channel, which the process keeps for later ones: count after it.
    (await connectApi(options)).close();
    while (accepted.length === 0) await new Promise((r) => setTimeout(r, 5));
    for (const c of accepted.splice(0)) c.close();
    const base = openFds();
    const client = await connectApi(options);
    const end = new End(client);
    const serverSide = async () => {
      while (accepted.length === 0) await new Promise((r) => setTimeout(r, 5));
      return accepted[0];
    };
    await serverSide();
    device.faults.portEvent('PORT_ERR');
    try {
      end.send('into the void');
      const batch = (await client.sendCq.completions$.take()) as WcBatch;
      expect(batch.at(0)!.status).toBe('RETRY_EXC_ERR');
      expect(client.disconnected).toBe(false);
      client.close();
      end.mr.close();
      expect(await firstValueFrom(client.disconnected$)).toEqual({ by: 'local' });
      // The server's end (in this process) goes too: then every fd since the baseline is closed.
      for (const c of accepted.splice(0)) c.close();
      expect(openFds()).toBe(base);
    } finally {
      device.faults.portEvent('PORT_ACTIVE');
    }
    const again = new End(await connect(options));
    const server = new End(await serverSide());
    server.postRecv();
    again.send('back');
    expect(await server.received()).toBe('back');
  });

  it('connects from the local address asked for (another soft device)', async () => {
    const name = `softcm-src${process.pid}`;
    createSoftDevice({ name, addresses: ['198.19.9.3'] });
    expect(softCmAddresses()[name]).toEqual(['198.19.9.3']);
    const listener = listen({ host: HOST, port: 0 });
    const accepted = firstValueFrom(listener.requests$).then((r) => r.accept());
    const client = await connect({ host: HOST, port: listener.address!.port, localHost: '198.19.9.3' });
    const server = track(await accepted);
    expect(client.context.deviceName).toBe(name);
    expect(client.localAddress?.host).toBe('198.19.9.3');
    expect(server.peerAddress?.host).toBe('198.19.9.3');
    const b = new End(server);
    b.postRecv();
    new End(client).send('across devices');
    expect(await b.received()).toBe('across devices');
  });

  it('refuses bad input before anything is sent (the Observable errors, listen() throws)', async () => {
    await expect(firstValueFrom(connect$({ host: 'localhost', port: 1 }))).rejects.toThrow(TypeError);
    await expect(firstValueFrom(connect$({ host: HOST, port: 1, privateData: new Uint8Array(57) }))).rejects.toThrow(RangeError);
    expect(() => listen({ host: HOST, port: 65536 })).toThrow(RangeError);
    await expect(firstValueFrom(connect$({ host: HOST, port: 1, provider: 'ib' as never }))).rejects.toThrow(TypeError);
  });
});
