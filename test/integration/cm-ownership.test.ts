import * as fs from 'fs';
import { firstValueFrom, lastValueFrom } from 'rxjs';
import {
  connect,
  connect$,
  listen,
  Connection,
  Listener,
  Mr,
  Srq,
  WcBatch,
  openCmContext,
  releaseCmContext,
  shutdownCm,
  openDevice,
  ResourcesClosedError,
  ConnectionRequest,
} from '../../src';

/**
 * Who owns what around a connection on the soft CM (soft0): the shared CM
 * context and its leases, a connection whose QP goes under it, the retry
 * counts each side's QP gets, SRQs behind connections, and the shutdown of
 * what the CM keeps for the process.
 */
const HOST = '127.0.0.1';

const fdCount = () => fs.readdirSync('/proc/self/fd').length;

/** A listener on a free port and the first request it gets from `dial()`. */
async function pair(
  accept: (request: ConnectionRequest) => Promise<Connection>,
  dial: (port: number) => Promise<Connection>,
): Promise<{ listener: Listener; server: Connection; client: Connection }> {
  const listener = listen({ host: HOST, port: 0 });
  const request = firstValueFrom(listener.requests$);
  const clientP = dial(listener.address!.port);
  const server = await accept(await request);
  const client = await clientP;
  return { listener, server, client };
}

/** One SEND of `text` from `mr` (at `offset`) on `conn`. */
function send(conn: Connection, mr: Mr, offset: number, text: string, wrId = 1): void {
  const n = mr.buffer.write(text, offset);
  conn.qp.postSend({ wrId, sg: { mr, offset, length: n } });
}

async function statuses(source: { take(): Promise<WcBatch | undefined> }, n: number): Promise<string[]> {
  const out: string[] = [];
  while (out.length < n) {
    const batch = await source.take();
    if (!batch) break;
    for (const wc of batch) out.push(wc.status);
  }
  return out;
}

describe('shared CM contexts: one ownership rule', () => {
  it('the last releaseCmContext() closes what was made on the context, and rounds leave no descriptor behind', () => {
    const round = () => {
      const ctx = openCmContext(HOST);
      const channel = ctx.createCompChannel();
      const pd = ctx.allocPd();
      const mr = pd.allocMemory(4096, { access: ['LOCAL_WRITE'] });
      const cq = ctx.createCq({ cqe: 16, channel });
      channel.events$.subscribe(); // watching: would hold the process if left open
      releaseCmContext(ctx);
      return { ctx, channel, pd, mr, cq };
    };
    round();
    const before = fdCount();
    for (let i = 0; i < 5; i++) {
      const made = round();
      expect([made.channel.closed, made.pd.closed, made.mr.closed, made.cq.closed]).toEqual([true, true, true, true]);
      // The context itself stays kept for the next connection on its device.
      expect(made.ctx.closed).toBe(false);
    }
    expect(fdCount()).toBe(before);
  });

  it('what one lease holder made lives while another lease (a connection) is open', async () => {
    const ctx = openCmContext(HOST);
    const pd = ctx.allocPd();
    const { listener, server, client } = await pair(
      (r) => r.accept({ pd }),
      (port) => connect({ host: HOST, port }),
    );
    releaseCmContext(ctx); // the connections still lease it
    expect(pd.closed).toBe(false);
    expect(server.qp.closed).toBe(false);
    server.close();
    client.close();
    listener.close();
    expect(pd.closed).toBe(true); // the last lease ended with the last connection
  });

  it("example 06's server releases its channel and PD on close(): start/stop rounds leave no descriptor behind", () => {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const { startServer } = require('../../examples/06-rpc-over-cm/server.js') as {
      startServer(o: { host: string; port: number }): { close(): void };
    };
    startServer({ host: HOST, port: 0 }).close();
    const before = fdCount();
    for (let i = 0; i < 5; i++) startServer({ host: HOST, port: 0 }).close();
    expect(fdCount()).toBe(before);
  });

  it('releaseCmContext() refuses what it cannot release, never silently', () => {
    const ctx = openCmContext(HOST);
    releaseCmContext(ctx);
    expect(() => releaseCmContext(ctx)).toThrow(expect.objectContaining({ code: 'EINVAL' }));
    const own = openDevice('soft0');
    try {
      expect(() => releaseCmContext(own)).toThrow(TypeError);
      expect(own.closed).toBe(false);
    } finally {
      own.close();
    }
  });

  it("a connection cannot close the context its peers share, and one whose QP is closed under it ends typed", async () => {
    const first = await pair(
      (r) => r.accept(),
      (port) => connect({ host: HOST, port }),
    );
    const second = await pair(
      (r) => r.accept(),
      (port) => connect({ host: HOST, port }),
    );
    try {
      expect(() => first.client.context.close()).toThrow(expect.objectContaining({ code: 'EBUSY' }));
      expect(second.client.qp.closed).toBe(false);
      expect(second.client.context.closed).toBe(false);

      // Its own PD closed by the user: the QP goes with it, the connection ends.
      const ended = lastValueFrom(first.client.disconnected$).then(
        () => 'completed',
        (err: unknown) => err,
      );
      const peerSaw = firstValueFrom(first.server.disconnected$);
      first.client.pd.close();
      const error = await ended;
      expect(error).toBeInstanceOf(ResourcesClosedError);
      expect(error).toMatchObject({ code: 'ERR_CM_RESOURCES_CLOSED' });
      expect(first.client.disconnected).toBe(true);
      await expect(peerSaw).resolves.toEqual({ by: 'peer' });
      await expect(first.client.recvCq.completions$.take()).rejects.toBeInstanceOf(ResourcesClosedError);
      // The other connections on the context are untouched.
      expect(second.client.qp.state).toBe('RTS');
      expect(second.client.disconnected).toBe(false);
    } finally {
      for (const p of [first, second]) {
        p.client.close();
        p.server.close();
        p.listener.close();
      }
    }
  });
});

describe('retry counts reach the QPs', () => {
  /** The client SENDs twice to a server with one receive posted: what the client's CQ says. */
  async function secondSendTo(clientOptions: { rnrRetryCount?: number }, acceptOptions: { rnrRetryCount?: number }) {
    const { listener, server, client } = await pair(
      (r) =>
        r.accept({
          ...acceptOptions,
          prepare: (res) => {
            const mr = res.pd.allocMemory(64, { access: ['LOCAL_WRITE'] });
            res.qp.postRecv({ wrId: 1, sg: { mr, offset: 0, length: 64 } });
          },
        }),
      (port) => connect({ host: HOST, port, ...clientOptions }),
    );
    try {
      const mr = client.pd.allocMemory(64, { access: ['LOCAL_WRITE'] });
      send(client, mr, 0, 'one', 1);
      send(client, mr, 32, 'two', 2);
      let timer: NodeJS.Timeout | undefined;
      try {
        return await Promise.race([
          statuses(client.sendCq.completions$, 2),
          new Promise<string[]>((resolve) => (timer = setTimeout(() => resolve(['no completion in 2 s']), 2000))),
        ]);
      } finally {
        clearTimeout(timer);
      }
    } finally {
      client.close();
      server.close();
      listener.close();
    }
  }

  it('connect({ rnrRetryCount: 0 }) gives the client its own RNR retry count: the second SEND fails RNR at once', async () => {
    expect(await secondSendTo({ rnrRetryCount: 0 }, {})).toEqual(['SUCCESS', 'RNR_RETRY_EXC_ERR']);
  });

  it('accept({ rnrRetryCount: 7 }) sets the server QP only; the client keeps its own 0', async () => {
    expect(await secondSendTo({ rnrRetryCount: 0 }, { rnrRetryCount: 7 })).toEqual(['SUCCESS', 'RNR_RETRY_EXC_ERR']);
  });

  it('the server QP takes the request\'s count unless accept() says otherwise', async () => {
    const { listener, server, client } = await pair(
      (r) => r.accept(),
      (port) =>
        connect({
          host: HOST,
          port,
          rnrRetryCount: 0,
          prepare: (res) => {
            const mr = res.pd.allocMemory(64, { access: ['LOCAL_WRITE'] });
            res.qp.postRecv({ wrId: 1, sg: { mr, offset: 0, length: 64 } });
          },
        }),
    );
    try {
      const mr = server.pd.allocMemory(64, { access: ['LOCAL_WRITE'] });
      send(server, mr, 0, 'one', 1);
      send(server, mr, 32, 'two', 2);
      expect(await statuses(server.sendCq.completions$, 2)).toEqual(['SUCCESS', 'RNR_RETRY_EXC_ERR']);
    } finally {
      client.close();
      server.close();
      listener.close();
    }
  });
});

describe('bad options reject, never throw', () => {
  it('connect() rejects and connect$() errors with the TypeError / RangeError', async () => {
    let promise: Promise<unknown> | undefined;
    expect(() => {
      promise = connect({ host: HOST, port: 70000 });
    }).not.toThrow();
    await expect(promise).rejects.toBeInstanceOf(RangeError);
    let source: ReturnType<typeof connect$> | undefined;
    expect(() => {
      source = connect$({ host: 'example.org', port: 1 });
    }).not.toThrow();
    await expect(firstValueFrom(source!)).rejects.toBeInstanceOf(TypeError);
  });

  it('accept() rejects for bad options and the request stays pending', async () => {
    const listener = listen({ host: HOST, port: 0 });
    const request = firstValueFrom(listener.requests$);
    const clientP = connect({ host: HOST, port: listener.address!.port });
    const r = await request;
    let promise: Promise<unknown> | undefined;
    expect(() => {
      promise = r.accept({ privateData: new Uint8Array(197) });
    }).not.toThrow();
    await expect(promise).rejects.toBeInstanceOf(RangeError);
    await expect(r.accept({ rnrRetryCount: 8 })).rejects.toBeInstanceOf(RangeError);
    expect(r.answer).toBe('pending');
    const server = await r.accept();
    const client = await clientP;
    client.close();
    server.close();
    listener.close();
  });
});

describe('an SRQ behind connections', () => {
  it('accept({ srq }) and connect({ srq }): every connection receives through the one SRQ', async () => {
    const ctx = openCmContext(HOST);
    const pd = ctx.allocPd();
    const srq: Srq = pd.createSrq({ maxWr: 64 });
    const slots = pd.allocMemory(64 * 16, { access: ['LOCAL_WRITE'] });
    for (let i = 0; i < 16; i++) srq.postRecv({ wrId: i, sg: { mr: slots, offset: i * 64, length: 64 } });
    const recvCq = ctx.createCq({ cqe: 64, channel: ctx.createCompChannel() });
    const listener = listen({ host: HOST, port: 0 });
    const servers: Connection[] = [];
    const clients: Connection[] = [];
    try {
      listener.requests$.subscribe((r) => void r.accept({ srq, recvCq }).then((c) => servers.push(c)));
      for (let i = 0; i < 3; i++) clients.push(await connect({ host: HOST, port: listener.address!.port, rnrRetryCount: 0 }));
      while (servers.length < 3) await new Promise((r) => setTimeout(r, 5));
      for (const s of servers) {
        expect(s.qp.srq).toBe(srq);
        expect(s.resources.srq).toBe(srq);
      }
      const words = clients.map((c, i) => {
        const mr = c.pd.allocMemory(64, { access: ['LOCAL_WRITE'] });
        send(c, mr, 0, `from client ${i}`, i);
        return `from client ${i}`;
      });
      const got: string[] = [];
      while (got.length < 3) {
        const batch = (await recvCq.completions$.take())!;
        for (const wc of batch) {
          expect(wc.status).toBe('SUCCESS');
          got.push(slots.buffer.toString('utf8', Number(wc.wrId) * 64, Number(wc.wrId) * 64 + wc.byteLen));
        }
      }
      expect(got.sort()).toEqual(words.sort());

      // The client side can use one too.
      const cpd = clients[0].pd;
      const csrq = cpd.createSrq({ maxWr: 4 });
      const c2 = await connect({ host: HOST, port: listener.address!.port, srq: csrq });
      clients.push(c2);
      expect(c2.qp.srq).toBe(csrq);
      expect(c2.pd).toBe(cpd);
      await expect(connect({ host: HOST, port: listener.address!.port, srq: srq, pd: cpd })).rejects.toBeInstanceOf(TypeError);
    } finally {
      for (const c of [...clients, ...servers]) c.close();
      listener.close();
      releaseCmContext(ctx);
    }
    expect(srq.closed).toBe(true);
  });
});

describe('shutdownCm()', () => {
  it('refuses while something uses the CM, then closes what it keeps; later connections make them anew', async () => {
    const listener = listen({ host: HOST, port: 0 });
    expect(() => shutdownCm()).toThrow(expect.objectContaining({ code: 'EBUSY' }));
    listener.close();
    const ctx = openCmContext(HOST);
    expect(() => shutdownCm()).toThrow(/lease/);
    releaseCmContext(ctx);
    shutdownCm();
    expect(ctx.closed).toBe(true);
    const { listener: l2, server, client } = await pair(
      (r) => r.accept(),
      (port) => connect({ host: HOST, port }),
    );
    expect(server.qp.state).toBe('RTS');
    client.close();
    server.close();
    l2.close();
    shutdownCm();
  });
});
