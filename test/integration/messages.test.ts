import { createHash, randomBytes } from 'crypto';
import { firstValueFrom } from 'rxjs';
import {
  acceptMessages,
  connectMessages,
  listen,
  Listener,
  Message,
  MessageConnection,
  MessageOptions,
  MessagesClosedError,
  MessagesMismatchError,
  RemoteError,
  RequestTimeoutError,
  connect,
} from '../../src';

/**
 * The message layer (docs/ARCHITECTURE.md, The message layer) end to end on soft0 over the soft CM, with
 * `rnrRetryCount: 0` on both sides: a credit slip would be a failed
 * completion (RNR_RETRY_EXC_ERR), not a delay.
 */
const HOST = '127.0.0.1';

async function pair(
  server: MessageOptions = {},
  client: MessageOptions = server,
): Promise<{ listener: Listener; a: MessageConnection; b: MessageConnection }> {
  const listener = listen({ host: HOST, port: 0 });
  const accepted = firstValueFrom(listener.requests$).then((r) => acceptMessages(r, { messages: server }));
  const b = await connectMessages({ host: HOST, port: listener.address!.port, rnrRetryCount: 0, messages: client });
  const a = await accepted;
  return { listener, a, b };
}

function closeAll(...things: Array<{ close(): void }>): void {
  for (const t of things) t.close();
}

const sha = (b: Uint8Array) => createHash('sha256').update(b).digest('hex');

describe('messages over a connection (soft0)', () => {
  it('sends both ways, small and empty, in order, exactly once', async () => {
    const { listener, a, b } = await pair();
    try {
      const got: string[] = [];
      const done = new Promise<void>((resolve) =>
        a.messages$.subscribe((m) => {
          got.push(m.text());
          m.release();
          if (got.length === 3) resolve();
        }),
      );
      await b.send('one');
      await b.send(new Uint8Array(0));
      await b.send(Buffer.from('three'));
      await done;
      expect(got).toEqual(['one', '', 'three']);
      await a.send('back');
      const back = (await b.messages$.take())!;
      expect(back.text()).toBe('back');
      back.release();
      expect(a.stats.received).toBe(3);
      expect(b.stats.sent).toBe(3);
    } finally {
      closeAll(b, a, listener);
    }
  });

  it('a slow consumer slows the sender: no RNR, nothing dropped, credits come back on release', async () => {
    const { listener, a, b } = await pair({ depth: 8 });
    try {
      const n = 500;
      const sends: Promise<void>[] = [];
      for (let i = 0; i < n; i++) sends.push(b.send(`m${i}`));
      // Nobody takes messages yet: the sender must stall on credits, not fail.
      await new Promise((r) => setTimeout(r, 50));
      expect(b.stats.sent).toBeLessThan(n);
      expect(b.stats.creditStalls).toBeGreaterThan(0);
      const seen: string[] = [];
      while (seen.length < n) {
        const m = (await a.messages$.take())!;
        seen.push(m.text());
        m.release();
      }
      await Promise.all(sends);
      expect(seen).toEqual(Array.from({ length: n }, (_, i) => `m${i}`));
      expect(a.stats.lent).toBe(0);
    } finally {
      closeAll(b, a, listener);
    }
  });

  it('messages past maxEager go by rendezvous: every byte arrives; the sender registers its buffer once', async () => {
    const { listener, a, b } = await pair({ maxEager: 1024 });
    try {
      const big = randomBytes(3 << 20);
      for (let round = 0; round < 3; round++) {
        const sent = b.send(big);
        const m = (await a.messages$.take())!;
        expect(m.rendezvous).toBe(true);
        expect(m.length).toBe(big.length);
        expect(sha(m.data)).toBe(sha(big));
        m.release();
        await sent;
      }
      expect(b.stats.rendezvousSent).toBe(3);
      expect(b.stats.registrations).toBe(1);
      expect(b.stats.cacheHits).toBe(2);
      expect(a.stats.receiveBuffers).toBe(1);
    } finally {
      closeAll(b, a, listener);
    }
  });

  it('request/response, small and large, with errors and timeouts typed', async () => {
    const { listener, a, b } = await pair({ maxEager: 512 });
    try {
      a.serve((req) => {
        const text = req.text();
        if (text === 'fail') throw new Error('no such key');
        if (text === 'slow') return new Promise<string>((r) => setTimeout(() => r('late'), 200));
        if (text === 'big') return Buffer.alloc(100_000, 7);
        return text.toUpperCase();
      });
      const r1 = await b.request('hello');
      expect(r1.text()).toBe('HELLO');
      r1.release();
      const big = await b.request('big');
      expect(big.length).toBe(100_000);
      expect(big.data.every((x) => x === 7)).toBe(true);
      big.release();
      await expect(b.request('fail')).rejects.toEqual(expect.objectContaining({ name: 'RemoteError', message: 'no such key' }));
      await expect(b.request('slow', { timeoutMs: 20 })).rejects.toBeInstanceOf(RequestTimeoutError);
      // The late reply is dropped and its buffer returned.
      await new Promise((r) => setTimeout(r, 300));
      expect(b.stats.lateReplies).toBe(1);
      expect(b.stats.lent).toBe(0);
      // Each reply is read and released as it comes: held replies would hold
      // their buffers, and the server would wait for credits (by design).
      const text = (m: Message) => {
        const t = m.text();
        m.release();
        return t;
      };
      const many = await Promise.all(Array.from({ length: 200 }, (_, i) => b.request(`k${i}`).then(text)));
      expect(many).toEqual(Array.from({ length: 200 }, (_, i) => `K${i}`));
      expect(RemoteError).toBeDefined();
    } finally {
      closeAll(b, a, listener);
    }
  });

  it('the two sides must agree: no layer, or another maxEager, fails typed on both sides', async () => {
    const listener = listen({ host: HOST, port: 0 });
    try {
      const port = listener.address!.port;
      const serverErr = firstValueFrom(listener.requests$).then((r) => acceptMessages(r, { messages: { maxEager: 4096 } }).catch((e: unknown) => e));
      const clientErr = await connectMessages({ host: HOST, port, messages: { maxEager: 1024 } }).catch((e: unknown) => e);
      expect(clientErr).toBeInstanceOf(MessagesMismatchError);
      expect(clientErr).toMatchObject({ field: 'maxEager', local: 1024, peer: 4096 });
      expect(await serverErr).toMatchObject({ field: 'maxEager', local: 4096, peer: 1024 });

      const plain = firstValueFrom(listener.requests$).then((r) => acceptMessages(r).catch((e: unknown) => e));
      await expect(connect({ host: HOST, port })).rejects.toThrow();
      expect(await plain).toMatchObject({ name: 'MessagesMismatchError', field: 'layer' });
    } finally {
      listener.close();
    }
  });

  it('ends: a peer that closes fails what is pending with MessagesClosedError; messages$ completes', async () => {
    const { listener, a, b } = await pair({ depth: 4 });
    try {
      const pending = b.request('never answered');
      const sends = Array.from({ length: 50 }, (_, i) => b.send(`x${i}`));
      const completed = new Promise<string>((resolve) => b.messages$.subscribe({ complete: () => resolve('complete'), error: (e: Error) => resolve(e.name) }));
      a.close();
      await expect(pending).rejects.toBeInstanceOf(MessagesClosedError);
      const settled = await Promise.allSettled(sends);
      expect(settled.some((s) => s.status === 'rejected')).toBe(true);
      for (const s of settled) if (s.status === 'rejected') expect(s.reason).toBeInstanceOf(MessagesClosedError);
      expect(await completed).toBe('complete');
      await expect(b.send('after')).rejects.toBeInstanceOf(MessagesClosedError);
    } finally {
      closeAll(b, a, listener);
    }
  });

  it('for await takes messages exactly once with tryTake mixed in', async () => {
    const { listener, a, b } = await pair();
    try {
      for (let i = 0; i < 10; i++) await b.send(`n${i}`);
      const got: string[] = [];
      await new Promise((r) => setTimeout(r, 20));
      const first = a.messages$.tryTake() as Message;
      got.push(first.text());
      first.release();
      for await (const m of a.messages$) {
        got.push(m.text());
        m.release();
        if (got.length === 10) break;
      }
      expect(got).toEqual(Array.from({ length: 10 }, (_, i) => `n${i}`));
    } finally {
      closeAll(b, a, listener);
    }
  });
});
