import { createHash, randomBytes } from 'crypto';
import { once } from 'events';
import * as http from 'http';
import { Duplex, PassThrough, Readable, Writable } from 'stream';
import { pipeline } from 'stream/promises';
import { firstValueFrom } from 'rxjs';
import {
  acceptMessages,
  connectMessages,
  connectSocket,
  createSocketServer,
  frame,
  listen,
  Message,
  RdmaAgent,
  RdmaServer,
  RdmaSocket,
  SocketResetError,
} from '../../src';

/**
 * Byte-stream sockets over the message layer on soft0 (README "Sockets
 * over RDMA"): net.Socket's habits, Node's own http on them, async
 * iteration and Web Streams, the ends (half-close, destroy, a peer gone).
 * Every connection runs with rnrRetryCount 0: a credit slip would fail it.
 */
const HOST = '127.0.0.1';
const sha = (b: Uint8Array) => createHash('sha256').update(b).digest('hex');
const ACCEPT = { accept: { rnrRetryCount: 0 } };

async function serve(onConnection: (s: RdmaSocket) => void, options: Parameters<typeof createSocketServer>[0] = {}): Promise<{ server: RdmaServer; port: number }> {
  const server = createSocketServer({ ...ACCEPT, ...(options as object) }, onConnection);
  server.listen(0, HOST);
  await once(server, 'listening');
  return { server, port: server.address()!.port };
}

function dial(port: number, options: Record<string, unknown> = {}): RdmaSocket {
  return connectSocket({ host: HOST, port, rnrRetryCount: 0, ...options });
}

async function closeServer(server: RdmaServer): Promise<void> {
  if (!server.listening) return;
  await new Promise<void>((resolve) => server.close(() => resolve()));
}

/** Resolves once the stream closed (at once if it already has); an 'error' before does not reject. */
function closed(stream: Duplex): Promise<void> {
  if (stream.closed) return Promise.resolve();
  return new Promise((resolve) => stream.once('close', () => resolve()));
}

/** Reads a stream to its end. */
async function drain(r: Readable): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const chunk of r) parts.push(chunk as Buffer);
  return Buffer.concat(parts);
}

describe('frame(): writes into messages', () => {
  it('joins small neighbours within the eager size, sends large ones alone (cut at the message size), drops empty ones', () => {
    const b = (n: number, v = n) => Buffer.alloc(n, v);
    const out = frame([b(10), b(0), b(20), b(100), b(5000), b(3), b(4)], 64, 1000);
    expect(out.map((x) => x.length)).toEqual([30, 100, 1000, 1000, 1000, 1000, 1000, 7]);
    expect(Buffer.concat(out)).toEqual(Buffer.concat([b(10), b(20), b(100), b(5000), b(3), b(4)]));
    expect(frame([], 64, 1000)).toEqual([]);
    expect(frame([b(0)], 64, 1000)).toEqual([]);
  });
});

describe('sockets over RDMA (soft0)', () => {
  it('echoes a piped stream of random writes; bytes identical and in order, counted on both sides', async () => {
    let serverSide: RdmaSocket | undefined;
    const { server, port } = await serve((s) => {
      serverSide = s;
      s.pipe(s);
    });
    const data = randomBytes(3 << 20);
    const socket = dial(port);
    await once(socket, 'connect');
    expect(socket.remoteAddress).toBe(HOST);
    expect(socket.remotePort).toBe(port);
    expect(socket.remoteFamily).toBe('IPv4');
    expect(socket.address()).toMatchObject({ address: HOST, family: 'IPv4' });
    const echoed = drain(socket);
    let at = 0;
    const sizes: number[] = [];
    while (at < data.length) {
      const n = Math.min(data.length - at, [1, 100, 8192, 8193, 65536, 300_000][sizes.length % 6]);
      sizes.push(n);
      if (!socket.write(data.subarray(at, at + n))) await once(socket, 'drain');
      at += n;
    }
    socket.end();
    expect(sha(await echoed)).toBe(sha(data));
    await closed(socket);
    expect(socket.bytesRead).toBe(data.length);
    expect(socket.bytesWritten).toBe(data.length);
    expect(serverSide!.bytesRead).toBe(data.length);
    await closeServer(server);
  });

  it('half-close: the client ends its side and still reads what the server writes after its end', async () => {
    const { server, port } = await serve(
      (s) => {
        const parts: Buffer[] = [];
        s.on('data', (d: Buffer) => parts.push(d));
        s.on('end', () => {
          // The client's side ended; this side still writes, then ends.
          const got = Buffer.concat(parts).toString();
          s.write(`heard ${got.length} bytes: `);
          setTimeout(() => s.end(got.toUpperCase()), 20);
        });
      },
      { allowHalfOpen: true },
    );
    const socket = dial(port);
    socket.end('hello half-closed world');
    const reply = await drain(socket);
    expect(reply.toString()).toBe('heard 23 bytes: HELLO HALF-CLOSED WORLD');
    expect(socket.writableFinished).toBe(true);
    await closed(socket);
    await closeServer(server);
  });

  it('without allowHalfOpen, the end of the peer\'s stream ends this side too and the connection closes on both', async () => {
    const closes: string[] = [];
    const { server, port } = await serve((s) => {
      s.resume();
      s.on('close', () => closes.push('server'));
    });
    const socket = dial(port);
    socket.on('close', () => closes.push('client'));
    socket.resume();
    socket.end('bye');
    await closed(socket);
    await closeServer(server);
    expect(closes.sort()).toEqual(['client', 'server']);
  });

  it('write() returns false at writableHighWaterMark and emits drain after; a server that never reads holds the writer to its buffers and the credits', async () => {
    let serverSide: RdmaSocket | undefined;
    const { server, port } = await serve(
      (s) => {
        serverSide = s;
        s.pause();
      },
      { accept: { rnrRetryCount: 0, messages: { depth: 8 } } },
    );
    const socket = dial(port, { writableHighWaterMark: 64 * 1024, messages: { depth: 8 } });
    await once(socket, 'connect');
    const chunk = Buffer.alloc(4096, 7);
    let accepted = 0;
    while (socket.write(chunk)) accepted++;
    expect(accepted).toBeLessThan(64 * 1024 / 4096);
    // The server never reads: the writes the layer takes stop at the credits,
    // the rest stays in the socket's buffer, bounded by what write() refused.
    await new Promise((resolve) => setTimeout(resolve, 200));
    const inFlight = socket.bytesWritten;
    const layer = socket.messages!;
    expect(layer.stats.creditStalls).toBeGreaterThan(0);
    expect(socket.writableLength).toBeLessThanOrEqual(64 * 1024 + chunk.length);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(socket.bytesWritten).toBe(inFlight);
    // The server reads: everything moves, drain comes.
    const drained = once(socket, 'drain');
    let got = 0;
    serverSide!.on('data', (d: Buffer) => (got += d.length));
    serverSide!.resume();
    await drained;
    socket.end();
    await once(serverSide!, 'end');
    expect(got).toBe((accepted + 1) * chunk.length);
    // The server's side ends in turn (no allowHalfOpen): this side reads to that end, then both close.
    socket.resume();
    await closed(socket);
    await closeServer(server);
  });

  it('pause() stops the peer (its credits stop), resume() lets it go on; nothing lost', async () => {
    const data = randomBytes(2 << 20);
    let writerDone = false;
    const { server, port } = await serve((s) => {
      s.resume();
      void (async () => {
        for (let at = 0; at < data.length; at += 16384) if (!s.write(data.subarray(at, at + 16384))) await once(s, 'drain');
        s.end();
        writerDone = true;
      })();
    });
    const socket = dial(port, { readableHighWaterMark: 16384, messages: { depth: 4 } });
    const parts: Buffer[] = [];
    socket.on('data', (d: Buffer) => {
      parts.push(d);
      if (parts.length === 3) {
        socket.pause();
        setTimeout(() => socket.resume(), 300);
      }
    });
    await once(socket, 'connect');
    await new Promise((resolve) => setTimeout(resolve, 150));
    // Paused: what arrived so far is far from all of it, and the writer waits.
    const paused = socket.bytesRead;
    expect(socket.isPaused()).toBe(true);
    expect(writerDone).toBe(false);
    expect(paused).toBeLessThan(data.length / 4);
    await once(socket, 'end');
    expect(sha(Buffer.concat(parts))).toBe(sha(data));
    await closeServer(server);
  });

  it('destroy(): the peer fails with SocketResetError (ECONNRESET) then closes, each once; end() twice is fine; write after end is Node\'s error', async () => {
    const events: string[] = [];
    let serverSide: RdmaSocket | undefined;
    const { server, port } = await serve((s) => {
      serverSide = s;
      s.on('error', (e: Error & { code?: string }) => events.push(`error ${e.name} ${e.code}`));
      s.on('close', () => events.push('close'));
      s.resume();
    });
    const socket = dial(port);
    await once(socket, 'connect');
    socket.write('some');
    await new Promise((resolve) => setTimeout(resolve, 50));
    socket.destroy();
    await closed(serverSide!);
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(events).toEqual(['error SocketResetError ECONNRESET', 'close']);

    const other = dial(port);
    const otherErrors: string[] = [];
    other.on('error', (e: Error & { code?: string }) => otherErrors.push(String(e.code)));
    other.resume();
    other.end('x');
    other.end();
    const late = await new Promise<Error & { code?: string }>((resolve) => other.write('y', (err) => resolve(err as Error)));
    expect(late.code).toBe('ERR_STREAM_WRITE_AFTER_END');
    await closed(other);
    expect(otherErrors).toEqual(['ERR_STREAM_WRITE_AFTER_END']);
    await closeServer(server);
  });

  it('destroy() during a large write settles the write, closes once, and the server serves on', async () => {
    const { server, port } = await serve((s) => {
      s.on('error', () => undefined);
      s.resume();
    });
    const socket = dial(port);
    await once(socket, 'connect');
    const writeDone = new Promise<Error | null | undefined>((resolve) => socket.write(Buffer.alloc(32 << 20, 1), (err) => resolve(err)));
    setImmediate(() => socket.destroy());
    const err = await writeDone;
    expect(err).toBeTruthy();
    await closed(socket);
    // The server still takes connections.
    const again = dial(port);
    again.resume();
    again.end('ok');
    await closed(again);
    await closeServer(server);
  });

  it('a connect to nothing fails with error then close', async () => {
    const listener = listen({ host: HOST, port: 0 });
    const port = listener.address!.port;
    listener.close();
    const socket = dial(port);
    const order: string[] = [];
    socket.on('error', () => order.push('error'));
    await closed(socket);
    expect(order).toEqual(['error']);
    expect(socket.connecting).toBe(false);
  });

  it('for await reads to the end; Duplex.toWeb gives Web Streams both ways', async () => {
    const { server, port } = await serve((s) => s.pipe(s));
    const socket = dial(port);
    const { readable, writable } = Duplex.toWeb(socket);
    const writer = writable.getWriter();
    const data = randomBytes(200_000);
    // Read while writing: the echo can only go on while this side reads.
    const reading = (async () => {
      const parts: Uint8Array[] = [];
      for await (const chunk of readable as unknown as AsyncIterable<Uint8Array>) parts.push(chunk);
      return Buffer.concat(parts);
    })();
    await writer.write(data.subarray(0, 100_000));
    await writer.write(data.subarray(100_000));
    await writer.close();
    expect(sha(await reading)).toBe(sha(data));
    await closeServer(server);
  });

  it('stream.pipeline() from a file-like source to the socket, checked by sha256 on the far side', async () => {
    let digest!: Promise<string>;
    const { server, port } = await serve((s) => {
      const h = createHash('sha256');
      s.on('data', (d: Buffer) => h.update(d));
      digest = once(s, 'end').then(() => h.digest('hex'));
    });
    const socket = dial(port);
    const data = randomBytes(5 << 20);
    const source = Readable.from(
      (function* () {
        for (let at = 0; at < data.length; at += 65536) yield data.subarray(at, at + 65536);
      })(),
    );
    // The server's end comes back once it read ours: this side reads to it, then both close.
    socket.resume();
    await pipeline(source, socket);
    expect(await digest).toBe(sha(data));
    await closed(socket);
    await closeServer(server);
  });

  it('setTimeout emits timeout after idleness, activity pushes it back; setNoDelay/setKeepAlive return the socket', async () => {
    const { server, port } = await serve((s) => s.resume());
    const socket = dial(port);
    await once(socket, 'connect');
    expect(socket.setNoDelay(true)).toBe(socket);
    expect(socket.setKeepAlive(true, 1000)).toBe(socket);
    let timeouts = 0;
    socket.setTimeout(100, () => timeouts++);
    expect(socket.timeout).toBe(100);
    for (let i = 0; i < 5; i++) {
      await new Promise((resolve) => setTimeout(resolve, 40));
      socket.write('tick');
    }
    expect(timeouts).toBe(0);
    await once(socket, 'timeout');
    expect(socket.destroyed).toBe(false);
    expect(() => socket.setTimeout(-1)).toThrow(RangeError);
    socket.end();
    socket.resume();
    await closed(socket);
    await closeServer(server);
  });

  it('the server: getConnections, maxConnections drops the extra request, close() waits for its connections', async () => {
    const sockets: RdmaSocket[] = [];
    const { server, port } = await serve((s) => {
      sockets.push(s);
      s.resume();
    });
    server.maxConnections = 2;
    const a = dial(port);
    const b = dial(port);
    await Promise.all([once(a, 'connect'), once(b, 'connect')]);
    const dropped = once(server, 'drop');
    const c = dial(port);
    c.on('error', () => undefined);
    await closed(c);
    await dropped;
    const count = await new Promise<number>((resolve) => server.getConnections((_e, n) => resolve(n)));
    expect(count).toBe(2);
    let serverClosed = false;
    server.close(() => (serverClosed = true));
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(serverClosed).toBe(false);
    a.end();
    b.end();
    a.resume();
    b.resume();
    await Promise.all([closed(a), closed(b)]);
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(serverClosed).toBe(true);
  });
});

describe("Node's http over RDMA sockets (soft0)", () => {
  let httpServer: http.Server;
  let rdma: RdmaServer;
  let port: number;

  beforeAll(async () => {
    httpServer = http.createServer((req, res) => {
      const h = createHash('sha256');
      let n = 0;
      req.on('data', (d: Buffer) => {
        h.update(d);
        n += d.length;
      });
      req.on('end', () => {
        const body = `${req.method} ${req.url} ${n} ${h.digest('hex')}`;
        if (req.url === '/chunked') {
          res.write(body.slice(0, 10));
          res.end(body.slice(10));
        } else {
          res.setHeader('content-length', Buffer.byteLength(body));
          res.end(body);
        }
      });
    });
    ({ server: rdma, port } = await serve((s) => httpServer.emit('connection', s), { allowHalfOpen: true }));
  });

  afterAll(async () => {
    await closeServer(rdma);
    httpServer.close();
  });

  function post(agent: http.Agent, path: string, body: Buffer, chunked: boolean): Promise<{ text: string; socket: unknown }> {
    return new Promise((resolve, reject) => {
      const req = http.request({ host: HOST, port, method: 'POST', path, agent, headers: chunked ? {} : { 'content-length': body.length } }, (res) => {
        const parts: Buffer[] = [];
        res.on('data', (d: Buffer) => parts.push(d));
        res.on('end', () => resolve({ text: Buffer.concat(parts).toString(), socket: req.socket }));
        res.on('error', reject);
      });
      req.on('error', reject);
      if (chunked) {
        for (let at = 0; at < body.length; at += 100_000) req.write(body.subarray(at, at + 100_000));
        req.end();
      } else req.end(body);
    });
  }

  it('keep-alive clients through an RdmaAgent: chunked and Content-Length bodies up to 64 MiB, every body checked by sha256', async () => {
    const agent = new RdmaAgent({ keepAlive: true, maxSockets: 4, socket: { rnrRetryCount: 0 } });
    const sizes = [64 << 20, 0, 1, 8192, 8193, 1 << 20, ...Array.from({ length: 40 }, (_, i) => (i * 7919) % 300_000)];
    const results = await Promise.all(
      sizes.map(async (size, i) => {
        const body = randomBytes(size);
        const chunked = i % 2 === 1;
        const path = chunked ? '/chunked' : '/plain';
        const r = await post(agent, path, body, chunked);
        expect(r.text).toBe(`POST ${path} ${size} ${sha(body)}`);
        return r.socket;
      }),
    );
    // 46 requests on at most 4 connections: the agent kept them alive and reused them.
    expect(new Set(results).size).toBeLessThanOrEqual(4);
    for (const s of new Set(results)) expect(s).toBeInstanceOf(RdmaSocket);
    agent.destroy();
  });

  it('pipelined requests on one socket are answered in order', async () => {
    const socket = dial(port);
    const request = (path: string) => `GET ${path} HTTP/1.1\r\nHost: x\r\n\r\n`;
    socket.write(request('/one') + request('/two') + request('/three').replace('Host: x', 'Host: x\r\nConnection: close'));
    const text = (await drain(socket)).toString();
    const bodies = text.split('\r\n\r\n').slice(1).map((s) => s.split('HTTP/1.1')[0]);
    expect(bodies.map((b) => b.split(' ')[1])).toEqual(['/one', '/two', '/three']);
  });
});

describe('the message layer under the sockets', () => {
  it('messages$ has an async-iterator form: for await takes each message, in order, until the layer ends', async () => {
    const listener = listen({ host: HOST, port: 0 });
    const accepted = firstValueFrom(listener.requests$).then((r) => acceptMessages(r));
    const client = await connectMessages({ host: HOST, port: listener.address!.port, rnrRetryCount: 0 });
    const server = await accepted;
    for (let i = 0; i < 50; i++) void client.send(`m${i}`);
    await client.flush();
    client.close();
    const got: string[] = [];
    for await (const m of server.messages$ as AsyncIterable<Message>) {
      got.push(m.text());
      m.release();
    }
    expect(got).toEqual(Array.from({ length: 50 }, (_, i) => `m${i}`));
    server.close();
    listener.close();
  });

  it('flush() then close(): everything sent arrives, 100 rounds (the disconnect never overtakes what the peer acknowledged)', async () => {
    const listener = listen({ host: HOST, port: 0 });
    for (let round = 0; round < 100; round++) {
      const accepted = firstValueFrom(listener.requests$).then((r) => acceptMessages(r));
      const client = await connectMessages({ host: HOST, port: listener.address!.port, rnrRetryCount: 0 });
      const server = await accepted;
      const n = 1 + (round % 7);
      for (let i = 0; i < n; i++) void client.send(i % 3 === 2 ? randomBytes(20_000) : `m${i}`);
      await client.flush();
      expect(client.stats).toMatchObject({ sent: n });
      client.close();
      let got = 0;
      for await (const m of server.messages$ as AsyncIterable<Message>) {
        got++;
        m.release();
      }
      expect(got).toBe(n);
      server.close();
    }
    listener.close();
  });

  it('flush() rejects typed when the layer ends first', async () => {
    const listener = listen({ host: HOST, port: 0 });
    const accepted = firstValueFrom(listener.requests$).then((r) => acceptMessages(r, { messages: { depth: 2 } }));
    const client = await connectMessages({ host: HOST, port: listener.address!.port, rnrRetryCount: 0, messages: { depth: 2 } });
    const server = await accepted;
    // The server never takes: credits run out and the flush cannot finish.
    for (let i = 0; i < 10; i++) client.send(`m${i}`).catch(() => undefined);
    const flushed = client.flush();
    setTimeout(() => client.close(), 20);
    await expect(flushed).rejects.toMatchObject({ name: 'MessagesClosedError' });
    server.close();
    listener.close();
  });
});

describe('sockets: faults', () => {
  it('a peer that destroys mid-stream: the reader gets what came before, then SocketResetError; nothing after a gap', async () => {
    const data = randomBytes(4 << 20);
    let serverSide: RdmaSocket | undefined;
    const { server, port } = await serve((s) => {
      serverSide = s;
      void (async () => {
        for (let at = 0; at < data.length; at += 65536) {
          if (at === 2 << 20) return s.destroy();
          if (!s.write(data.subarray(at, at + 65536))) await once(s, 'drain');
        }
      })();
    });
    const socket = dial(port);
    const parts: Buffer[] = [];
    socket.on('data', (d: Buffer) => parts.push(d));
    const [err] = (await once(socket, 'error')) as [SocketResetError];
    expect(err).toBeInstanceOf(SocketResetError);
    expect(err.code).toBe('ECONNRESET');
    await closed(socket);
    const got = Buffer.concat(parts);
    // A prefix of what was written, never more and never with a gap.
    expect(got.length).toBeLessThanOrEqual(2 << 20);
    expect(got.equals(data.subarray(0, got.length))).toBe(true);
    expect(serverSide!.destroyed).toBe(true);
    await closeServer(server);
  });

  it('writes to a socket whose peer is gone fail typed, and the socket closes', async () => {
    const { server, port } = await serve((s) => s.destroy());
    const socket = dial(port);
    const errors: Error[] = [];
    socket.on('error', (e) => errors.push(e));
    await once(socket, 'connect');
    const w = new Writable({
      write(chunk, _e, cb) {
        socket.write(chunk, () => cb());
      },
    });
    w.write(Buffer.alloc(1000));
    await closed(socket);
    expect(errors).toHaveLength(1);
    expect(errors[0]).toBeInstanceOf(SocketResetError);
    await closeServer(server);
  });

  it('a PassThrough chain through two sockets keeps order under random pause/resume/cork/uncork and write sizes', async () => {
    const { server, port } = await serve((s) => s.pipe(s));
    const socket = dial(port, { messages: { depth: 8 } });
    const digestIn = createHash('sha256');
    const digestOut = createHash('sha256');
    const out = new PassThrough();
    socket.pipe(out);
    let received = 0;
    out.on('data', (d: Buffer) => {
      digestOut.update(d);
      received += d.length;
    });
    let seed = 12345;
    const rand = () => ((seed = (seed * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff);
    let sent = 0;
    for (let i = 0; i < 20_000; i++) {
      const r = rand();
      const size = r < 0.001 ? Math.floor(rand() * (1 << 20)) : Math.floor(rand() * 600);
      const chunk = randomBytes(size);
      digestIn.update(chunk);
      sent += size;
      const action = rand();
      if (action < 0.02) socket.cork();
      else if (action < 0.04) socket.uncork();
      else if (action < 0.05) {
        out.pause();
        setTimeout(() => out.resume(), 1);
      }
      if (!socket.write(chunk)) {
        // Corked writes wait for uncork(), as on any Writable: drain comes after.
        while (socket.writableCorked > 0) socket.uncork();
        await once(socket, 'drain');
      }
    }
    while (socket.writableCorked > 0) socket.uncork();
    socket.end();
    await closed(socket);
    expect(received).toBe(sent);
    expect(digestOut.digest('hex')).toBe(digestIn.digest('hex'));
    await closeServer(server);
  }, 120_000);
});
