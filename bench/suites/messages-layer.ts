/**
 * The message layer's side of the messages suite: its pairs over the soft
 * CM, and the runs the baselines are measured against (the same shapes as
 * messages-raw.ts's).
 */
import { performance } from 'perf_hooks';
import { firstValueFrom, Subscription } from 'rxjs';
import { acceptMessages, connect, connectMessages, Connection, listen, Listener, Message, MessageConnection } from 'rx-verbs';
import { MessageRateRun, SMALL } from './messages-raw';
import { cpuStart, threadNsPer } from './rig';

const HOST = '127.0.0.1';

/** A message connection: `a` accepted (the receiver of one-way runs), `b` connected. */
export interface LayerPair {
  listener: Listener;
  a: MessageConnection;
  b: MessageConnection;
}

/** Over the soft CM with `rnrRetryCount: 0`: a credit slip would fail a completion, not slow it. */
export async function layerPair(): Promise<LayerPair> {
  const listener = listen({ host: HOST, port: 0 });
  const accepted = firstValueFrom(listener.requests$).then((r) => acceptMessages(r));
  const b = await connectMessages({ host: HOST, port: listener.address!.port, rnrRetryCount: 0 });
  const a = await accepted;
  return { listener, a, b };
}

/** A plain connection: `a` accepted, `b` connected. */
export interface PlainPair {
  listener: Listener;
  a: Connection;
  b: Connection;
}

/** A plain connection over the soft CM with the QP and CQ sizes of `like`'s (the layer's). */
export async function plainPair(like: MessageConnection): Promise<PlainPair> {
  const cap = like.connection.qp.cap;
  const sizes = { cap: { maxSendWr: cap.maxSendWr, maxRecvWr: cap.maxRecvWr, maxSendSge: 1, maxRecvSge: 1 }, cqe: like.connection.recvCq.cqe };
  const listener = listen({ host: HOST, port: 0 });
  const accepted = firstValueFrom(listener.requests$).then((r) => r.accept(sizes));
  const b = await connect({ host: HOST, port: listener.address!.port, rnrRetryCount: 0, ...sizes });
  const a = await accepted;
  return { listener, a, b };
}

/**
 * `n` messages of SMALL bytes b -> a after `warmup` untimed ones, sent the
 * idiomatic way (`await send()`: it settles once posted, the bytes copied);
 * the receiver releases each at once.
 */
export async function layerRate(pair: LayerPair, n: number, warmup: number): Promise<MessageRateRun> {
  const { a, b } = pair;
  const payload = Buffer.alloc(SMALL, 7);
  let got = 0;
  let sum = 0;
  let target = warmup;
  let reached: (() => void) | undefined;
  const sub = a.messages$.subscribe((m: Message) => {
    sum = (sum + m.data[0]) | 0;
    m.release();
    if (++got === target) reached?.();
  });
  try {
    const phase = async (count: number) => {
      const done = new Promise<void>((resolve) => (reached = resolve));
      for (let i = 0; i < count; i++) await b.send(payload);
      await done;
    };
    await phase(warmup);
    target = warmup + n;
    const cpu = cpuStart();
    await phase(n);
    const seconds = (performance.now() - cpu.wall) / 1000;
    const error = sum !== ((7 * (warmup + n)) | 0) ? 'the receiver saw other bytes' : undefined;
    return { variant: 'layer', messages: n, seconds, rate: n / seconds, cpuNsPerMessage: threadNsPer(cpu, n), ...(error ? { error } : {}) };
  } finally {
    sub.unsubscribe();
  }
}

/** b sends SMALL bytes, a's subscriber sends them back; a round trip ends when b's subscriber has the echo (us). */
export async function layerPing(pair: LayerPair, iters: number, warmup: number): Promise<Float64Array> {
  const { a, b } = pair;
  const payload = Buffer.alloc(SMALL, 7);
  const out = new Float64Array(iters);
  const subs: Subscription[] = [];
  try {
    await new Promise<void>((resolve, reject) => {
      subs.push(
        a.messages$.subscribe((m) => {
          // send() copies eager bytes before it returns: the view may go back at once.
          a.send(m.data).catch(reject);
          m.release();
        }),
      );
      let k = 0;
      let t0 = 0;
      const go = () => {
        t0 = performance.now();
        b.send(payload).catch(reject);
      };
      subs.push(
        b.messages$.subscribe({
          next: (m) => {
            const t = performance.now();
            m.release();
            if (k >= warmup) out[k - warmup] = (t - t0) * 1000;
            if (++k === warmup + iters) resolve();
            else go();
          },
          error: reject,
        }),
      );
      go();
    });
    return out;
  } finally {
    for (const s of subs) s.unsubscribe();
  }
}

/**
 * `count` messages of `big`'s size b -> a, `inFlight` at a time (a
 * `send()` settles once a has READ it), after one untimed; payload bytes
 * per second.
 */
export async function layerBig(pair: LayerPair, big: Buffer, count: number, inFlight = 1): Promise<number> {
  const { a, b } = pair;
  let bad = 0;
  const sub = a.messages$.subscribe((m) => {
    if (m.length !== big.length || m.data[m.length - 1] !== big[big.length - 1] || !m.rendezvous) bad++;
    m.release();
  });
  try {
    await b.send(big);
    const t0 = performance.now();
    const pending = new Set<Promise<void>>();
    for (let i = 0; i < count; i++) {
      if (pending.size >= inFlight) await Promise.race(pending);
      const p: Promise<void> = b.send(big).then(() => void pending.delete(p));
      pending.add(p);
    }
    await Promise.all(pending);
    const seconds = (performance.now() - t0) / 1000;
    if (bad > 0) throw new Error(`rendezvous: ${bad} messages arrived wrong`);
    return (big.length * count) / seconds;
  } finally {
    sub.unsubscribe();
  }
}

/** `Buffer.copy` of `src` into a buffer of its size, `count` times after one; bytes per second. */
export function copyRate(src: Buffer, count: number): number {
  const dst = Buffer.allocUnsafe(src.length);
  src.copy(dst);
  const t0 = performance.now();
  for (let i = 0; i < count; i++) src.copy(dst);
  const seconds = (performance.now() - t0) / 1000;
  if (dst[dst.length - 1] !== src[src.length - 1]) throw new Error('copy: the bytes differ');
  return (src.length * count) / seconds;
}

/** The layer's counters of steady-state interest, both sides summed. */
export const steadyCounters = (p: LayerPair) => ({
  registrations: p.a.stats.registrations + p.b.stats.registrations,
  receiveBuffers: p.a.stats.receiveBuffers + p.b.stats.receiveBuffers,
  cacheHits: p.a.stats.cacheHits + p.b.stats.cacheHits,
  messages: p.a.stats.received + p.b.stats.received,
});
