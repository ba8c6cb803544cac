import { firstValueFrom, lastValueFrom, toArray } from 'rxjs';
import { connect, connect$, listen, Connection, ConnectionRequest } from '../../../src';
import {
  CM_PRIVATE_DATA_MAX,
  ConnectionRejectedError,
  DisconnectedError,
  ListenerClosedError,
  RequestAnsweredError,
} from '../../../src/core';
import { virtualCm, VirtualCm, VirtualResources, VirtualResourceOptions, VirtualSrq } from '../../../src/testing';

/**
 * listen / connect / accept on the virtual CM in real time (latency 0): the
 * connection logic of src/cm, end to end, without the addon.
 */
const text = (data: Uint8Array) => Buffer.from(data).toString();
const bytes = (n: number) => new Uint8Array(n).fill(7);
const addr = { host: '10.0.0.2', port: 7471 };

function nextRequest(listener: { requests$: { tryTake(): unknown } & Parameters<typeof firstValueFrom>[0] }) {
  return firstValueFrom(listener.requests$) as Promise<ConnectionRequest<VirtualResources>>;
}

describe('connections (virtual CM, real time)', () => {
  let cm: VirtualCm;
  beforeEach(() => {
    cm = virtualCm(undefined, { latency: 0 });
  });
  afterEach(() => {
    expect(cm.openIds).toBe(0);
  });

  async function pair(accept: { privateData?: string; ownChannel?: boolean } = {}) {
    const listener = listen({ ...addr, cm });
    const request = nextRequest(listener);
    const client = connect({ ...addr, cm, privateData: 'hello' });
    const req = await request;
    const server = await req.accept(accept);
    return { listener, req, server, client: await client };
  }

  it('connects: private data both ways, QPs in RTS, addresses, each side the other QP', async () => {
    const { listener, req, server, client } = await pair({ privateData: 'welcome' });
    expect(text(req.privateData)).toBe('hello');
    expect(text(client.privateData)).toBe('welcome');
    expect(text(server.privateData)).toBe('hello');
    expect(req.peerQpNum).toBe(client.qp.qpNum);
    expect(client.qp.state).toBe('RTS');
    expect(server.qp.state).toBe('RTS');
    expect(client.peerAddress).toEqual(addr);
    expect(server.localAddress).toEqual(addr);
    expect(server.peerAddress).toEqual(client.localAddress);
    client.close();
    server.close();
    listener.close();
  });

  it('calls prepare with the resources before anything goes to the peer: INIT on connect, RTS on accept', async () => {
    const listener = listen({ ...addr, cm });
    const states: string[] = [];
    const request = nextRequest(listener);
    const client = connect({ ...addr, cm, prepare: (r) => states.push(`client ${r.qp.state}`) });
    const server = await (await request).accept({ prepare: (r) => states.push(`server ${r.qp.state}`) });
    const conn = await client;
    expect(states).toEqual(['client INIT', 'server RTS']);
    conn.close();
    server.close();
    const failing = nextRequest(listener);
    const refused = connect({ ...addr, cm }).catch((e: unknown) => e);
    const boom = new Error('boom');
    await expect(
      (await failing).accept({
        prepare: () => {
          throw boom;
        },
      }),
    ).rejects.toBe(boom);
    expect(await refused).toBeInstanceOf(Error);
    await expect(connect({ ...addr, cm, prepare: () => { throw boom; } })).rejects.toBe(boom);
    await expect(firstValueFrom(connect$({ ...addr, cm, prepare: 5 as never }))).rejects.toThrow(/prepare must be a function/);
    listener.close();
  });

  it('connects from the local address asked for', async () => {
    const listener = listen({ ...addr, cm });
    const accepted = nextRequest(listener).then((r) => r.accept());
    const client = await connect({ ...addr, cm, localHost: '10.0.0.9' });
    const server = await accepted;
    expect(client.localAddress?.host).toBe('10.0.0.9');
    expect(server.peerAddress?.host).toBe('10.0.0.9');
    await expect(firstValueFrom(connect$({ ...addr, cm, localHost: 'here' }))).rejects.toThrow(/localHost must be a numeric/);
    client.close();
    server.close();
    listener.close();
  });

  it('accepts many clients on one listener', async () => {
    const listener = listen({ ...addr, cm });
    const served: Promise<unknown>[] = [];
    listener.requests$.subscribe((r) => served.push(r.accept({ privateData: `you are ${text(r.privateData)}` })));
    const clients = await Promise.all(Array.from({ length: 20 }, (_, i) => connect({ ...addr, cm, privateData: `c${i}` })));
    const servers = (await Promise.all(served)) as Array<{ close(): void }>;
    expect(clients.map((c) => text(c.privateData))).toEqual(clients.map((_, i) => `you are c${i}`));
    for (const c of [...clients, ...servers]) c.close();
    listener.close();
  });

  it('rejects with private data: ConnectionRejectedError with reason 28 and what the listener said', async () => {
    const listener = listen({ ...addr, cm });
    listener.requests$.subscribe((r) => r.reject({ privateData: 'busy, try 7472' }));
    const err = (await connect({ ...addr, cm }).catch((e: unknown) => e)) as ConnectionRejectedError;
    expect(err).toBeInstanceOf(ConnectionRejectedError);
    expect(err.code).toBe('ERR_CM_REJECTED');
    expect(err.reason).toBe(28);
    expect(err.noListener).toBe(false);
    expect(text(err.privateData)).toBe('busy, try 7472');
    listener.close();
  });

  it('says nobody listens on a port of a known host (reason 8)', async () => {
    const listener = listen({ ...addr, cm });
    const err = (await connect({ ...addr, port: 9, cm }).catch((e: unknown) => e)) as ConnectionRejectedError;
    expect(err.code).toBe('ERR_CM_REJECTED');
    expect(err.noListener).toBe(true);
    expect(err.message).toMatch(/nobody listens on 10\.0\.0\.2:9/);
    listener.close();
  });

  it('takes private data up to each limit, and refuses one byte more with a RangeError before anything is sent', async () => {
    const listener = listen({ ...addr, cm });
    const requests: ConnectionRequest<VirtualResources>[] = [];
    listener.requests$.subscribe((r) => requests.push(r));
    await expect(firstValueFrom(connect$({ ...addr, cm, privateData: bytes(CM_PRIVATE_DATA_MAX.connect + 1) }))).rejects.toThrow(RangeError);
    expect(cm.openIds).toBe(1); // the listener's id only: nothing was made or sent
    for (const n of [0, 1, CM_PRIVATE_DATA_MAX.connect]) {
      const client = connect({ ...addr, cm, privateData: bytes(n) });
      while (requests.length === 0) await new Promise((r) => setImmediate(r));
      const req = requests.shift()!;
      expect(req.privateData.length).toBe(n);
      expect(() => req.reject({ privateData: bytes(CM_PRIVATE_DATA_MAX.reject + 1) })).toThrow(RangeError);
      await expect(req.accept({ privateData: bytes(CM_PRIVATE_DATA_MAX.accept + 1) })).rejects.toThrow(RangeError);
      expect(req.answer).toBe('pending');
      const server = await req.accept({ privateData: bytes(CM_PRIVATE_DATA_MAX.accept) });
      const conn = await client;
      expect(conn.privateData.length).toBe(CM_PRIVATE_DATA_MAX.accept);
      conn.close();
      server.close();
    }
    const rejected = connect({ ...addr, cm }).catch((e: ConnectionRejectedError) => e.privateData.length);
    while (requests.length === 0) await new Promise((r) => setImmediate(r));
    requests.shift()!.reject({ privateData: bytes(CM_PRIVATE_DATA_MAX.reject) });
    expect(await rejected).toBe(CM_PRIVATE_DATA_MAX.reject);
    listener.close();
  });

  it('answers a request once: a second accept or reject is a RequestAnsweredError', async () => {
    const { listener, req, server, client } = await pair();
    await expect(req.accept()).rejects.toBeInstanceOf(RequestAnsweredError);
    expect(() => req.reject()).toThrow(RequestAnsweredError);
    expect(() => req.reject()).toThrow(/already accepted/);
    client.close();
    server.close();
    listener.close();

    const l2 = listen({ ...addr, cm });
    const r2 = nextRequest(l2);
    const c2 = connect({ ...addr, cm }).catch((e: unknown) => e);
    const request = await r2;
    request.reject();
    expect(() => request.reject()).toThrow(/already rejected/);
    await expect(request.accept()).rejects.toMatchObject({ code: 'ERR_CM_ANSWERED', answer: 'rejected' });
    expect(await c2).toBeInstanceOf(ConnectionRejectedError);
    l2.close();
  });

  it('closing the listener rejects pending requests and completes requests$; accepting one then fails', async () => {
    const listener = listen({ ...addr, cm });
    const all = lastValueFrom(listener.requests$.pipe(toArray()));
    const pending = nextRequest(listener);
    const client = connect({ ...addr, cm }).catch((e: unknown) => e);
    const req = await pending;
    listener.close();
    listener.close(); // idempotent
    expect((await all).length).toBe(1);
    await expect(req.accept()).rejects.toBeInstanceOf(ListenerClosedError);
    const err = (await client) as ConnectionRejectedError;
    expect(err).toBeInstanceOf(ConnectionRejectedError);
  });

  it.each([true, false])('closing the listener never kills accepted connections (ownChannel %s)', async (ownChannel) => {
    const { listener, server, client } = await pair({ ownChannel });
    listener.close();
    expect(server.disconnected).toBe(false);
    const heard = firstValueFrom(server.disconnected$);
    client.close();
    expect(await heard).toEqual({ by: 'peer' });
    expect(server.qp.state).toBe('ERR');
    server.close();
  });

  it('disconnect from either side: the other sees disconnected$ { by: peer }; close is idempotent and late subscribers hear it', async () => {
    const { listener, server, client } = await pair();
    const heard = firstValueFrom(client.disconnected$);
    server.close();
    expect(await heard).toEqual({ by: 'peer' });
    expect(await firstValueFrom(server.disconnected$)).toEqual({ by: 'local' });
    client.close();
    client.close();
    expect(client.closed).toBe(true);
    listener.close();
  });

  it('a request left unanswered until the peer gives up: no event (as rxe), accepting it fails with DisconnectedError', async () => {
    const listener = listen({ ...addr, cm });
    const pending = nextRequest(listener);
    const attempt = connect$({ ...addr, cm }).subscribe({ error: () => undefined });
    const req = await pending;
    attempt.unsubscribe(); // the client gives up
    await new Promise((r) => setTimeout(r, 5));
    expect(req.answer).toBe('pending');
    await expect(req.accept()).rejects.toBeInstanceOf(DisconnectedError);
    expect(req.answer).toBe('accepted');
    listener.close();
  });

  it('runs 200 connect/close cycles without leaking ids', async () => {
    const listener = listen({ ...addr, cm });
    listener.requests$.subscribe((r) => void r.accept().then((s) => s.close()));
    for (let i = 0; i < 200; i++) (await connect({ ...addr, cm })).close();
    await new Promise((r) => setTimeout(r, 5));
    listener.close();
  });

  it('refuses bad input with TypeError / RangeError (connect$ errors, listen throws)', async () => {
    const bad: Array<[unknown, RegExp]> = [
      [null, /options must be an object/],
      [{ host: 'localhost', port: 1, cm }, /numeric IPv4 or IPv6/],
      [{ host: 7, port: 1, cm }, /host must be/],
      [{ host: '10.0.0.2', port: 0, cm }, /port must be an integer in \[1, 65535\]/],
      [{ host: '10.0.0.2', port: 65536, cm }, /port/],
      [{ host: '10.0.0.2', port: '1', cm }, /port must be a number/],
      [{ host: '10.0.0.2', port: 1, cm, privateData: 5 }, /privateData must be/],
      [{ host: '10.0.0.2', port: 1, cm, timeoutMs: -1 }, /timeoutMs/],
      [{ host: '10.0.0.2', port: 1, cm, retryCount: 8 }, /retryCount must be an integer in \[0, 7\]/],
      [{ host: '10.0.0.2', port: 1, cm, rnrRetryCount: '7' }, /rnrRetryCount must be a number/],
      [{ host: '10.0.0.2', port: 1, cm, scheduler: {} }, /scheduler/],
      [{ host: '10.0.0.2', port: 1, cm: {} }, /cm must be a CM port/],
    ];
    for (const [options, message] of bad) {
      await expect(firstValueFrom(connect$(options as never))).rejects.toThrow(message);
    }
    expect(() => listen({ host: '10.0.0.2', port: 1, cm, backlog: 0 })).toThrow(RangeError);
    expect(() => listen({ host: '::1', port: -1, cm })).toThrow(RangeError);
    const listener = listen({ ...addr, cm });
    expect(() => listen({ ...addr, cm })).toThrow(expect.objectContaining({ code: 'EADDRINUSE' }));
    listener.close();
  });
  it('gives each QP its retry counts as the kernel CM does: the requester\'s retry count on both, each side its own RNR count', async () => {
    const listener = listen({ ...addr, cm });
    const request = nextRequest(listener);
    const clientP = connect({ ...addr, cm, retryCount: 3, rnrRetryCount: 0 });
    const req = await request;
    const server = await req.accept();
    const client = await clientP;
    expect([client.qp.retryCount, client.qp.rnrRetryCount]).toEqual([3, 0]);
    expect([server.qp.retryCount, server.qp.rnrRetryCount]).toEqual([3, 0]);
    client.close();
    server.close();
    const request2 = nextRequest(listener);
    const clientP2 = connect({ ...addr, cm });
    const server2 = await (await request2).accept({ rnrRetryCount: 2 });
    const client2 = await clientP2;
    expect([client2.qp.retryCount, client2.qp.rnrRetryCount]).toEqual([6, 7]);
    expect([server2.qp.retryCount, server2.qp.rnrRetryCount]).toEqual([6, 2]);
    client2.close();
    server2.close();
    listener.close();
  });

  it('puts connections on a shared receive queue (accept({ srq }), connect({ srq })), borrowed', async () => {
    const srq = new VirtualSrq(8);
    const listener = listen({ ...addr, cm });
    const servers: Connection<VirtualResources>[] = [];
    listener.requests$.subscribe((r) => void r.accept({ srq }).then((c) => servers.push(c)));
    const clients = [await connect({ ...addr, cm }), await connect<VirtualResources, VirtualResourceOptions>({ ...addr, cm, srq })];
    while (servers.length < 2) await new Promise((r) => setImmediate(r));
    expect(servers.map((s) => s.qp.srq)).toEqual([srq, srq]);
    expect(servers[0].resources.srq).toBe(srq);
    expect(clients[1].qp.srq).toBe(srq);
    expect(clients[0].qp.srq).toBeUndefined();
    for (const c of [...clients, ...servers]) c.close();
    expect(srq.closed).toBe(false);
    await expect(connect<VirtualResources, VirtualResourceOptions>({ ...addr, cm, srq: {} as never })).rejects.toThrow(/srq must be a VirtualSrq/);
    listener.close();
  });
});
