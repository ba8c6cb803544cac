/** Suite 3: ping-pong round trips in event mode and spin-then-park, against native event mode and busy polling. */
import { performance } from 'perf_hooks';
import { Subscription } from 'rxjs';
import { ackEvents, batchCompletions, drainCq, openDevice, rearm, WcBatch, WC_OPCODES } from 'rx-verbs';
import type { BenchHandle } from '../native/addon';
import { fmt } from './format';
import { HistogramBucket, logHistogram } from './histogram';
import { RunConfig, gidArg, native, scaled } from './rig';

export interface LatencyStats {
  variant: string;
  samples: number;
  p50: number;
  p99: number;
  p999: number;
  mean: number;
  min: number;
  /** The distribution (log-spaced buckets, us); absent in results saved before it was kept. */
  histogram?: HistogramBucket[];
}

export function stats(variant: string, us: Float64Array): LatencyStats {
  const s = Float64Array.from(us).sort();
  const at = (p: number) => s[Math.min(s.length - 1, Math.floor(p * s.length))];
  let sum = 0;
  for (const x of s) sum += x;
  return { variant, samples: s.length, p50: at(0.5), p99: at(0.99), p999: at(0.999), mean: sum / s.length, min: s[0], histogram: logHistogram(s) };
}

export type PingKind = 'fast' | 'operators' | 'spin';

/** Ping-pong from JS against the native echo peer: post a SEND, wait for the echo's SEND to land in a receive. */
export async function pingJs(cfg: RunConfig, kind: PingKind, iters: number, warmup: number, spinUs: number): Promise<Float64Array> {
  const depth = 16;
  const ctx = openDevice(cfg.device);
  let echo: { handle: BenchHandle; qpNum: number; lid: number; psn: number } | undefined;
  try {
    const channel = ctx.createCompChannel();
    const cq = ctx.createCq({ cqe: depth * 2 + 16, channel });
    const pd = ctx.allocPd();
    const qp = pd.createQp({ sendCq: cq, recvCq: cq, cap: { maxSendWr: depth, maxRecvWr: depth } });
    const mr = pd.registerMemory(Buffer.alloc((depth + 1) * 64), { access: ['LOCAL_WRITE'] });
    echo = native().echoCreate({ context: ctx.native, pd: pd.native, depth, peerQpNum: qp.qpNum, peerPsn: qp.psn, ...gidArg(cfg) });
    // The echo's QP is on this device's port: on RoCE its GID is ours.
    const route = gidArg(cfg);
    const gid = route.gidIndex === undefined ? undefined : qp.endpoint(route).gid;
    qp.connect({ qpNum: echo.qpNum, lid: echo.lid, psn: echo.psn, port: 1, ...(gid === undefined ? {} : { gid }) }, route);
    const recvs = Array.from({ length: depth }, (_, i) => ({ wrId: i, sg: { mr, offset: i * 64, length: 64 } }));
    for (const r of recvs) qp.postRecv(r);
    const send = { wrId: 0, sg: { mr, offset: depth * 64, length: 8 }, signaled: false };
    native().echoStart(echo.handle, { mode: kind === 'spin' ? 'poll' : 'event' });
    const out = new Float64Array(iters);
    let k = 0;
    let t0 = 0;
    // Returns true when the round trip ended (a receive completed).
    const handle = (b: WcBatch): boolean => {
      const t = performance.now();
      let recv = false;
      for (let i = 0; i < b.length; i++) {
        if (b.statusAt(i) !== 0) throw new Error(`ping: completion failed with status ${b.statusAt(i)}`);
        if (b.opcodeAt(i) === WC_OPCODES.RECV) {
          qp.postRecv(recvs[b.wrIdLow(i)]);
          recv = true;
        }
      }
      if (recv) {
        if (k >= warmup) out[k - warmup] = (t - t0) * 1000;
        k++;
      }
      return recv;
    };
    if (kind === 'spin') {
      const source = cq.completions$;
      while (k < warmup + iters) {
        t0 = performance.now();
        qp.postSend(send);
        for (;;) {
          const b = await source.take({ spinUs });
          if (b && handle(b)) break;
        }
      }
    } else {
      await new Promise<void>((resolve, reject) => {
        let sub: Subscription | undefined;
        const timer = setTimeout(() => reject(new Error(`ping stalled after ${k} round trips`)), 60_000);
        const onBatch = (b: WcBatch) => {
          try {
            if (!handle(b)) return;
            if (k >= warmup + iters) {
              clearTimeout(timer);
              setImmediate(() => {
                sub?.unsubscribe();
                resolve();
              });
              return;
            }
            t0 = performance.now();
            qp.postSend(send);
          } catch (err) {
            clearTimeout(timer);
            reject(err);
          }
        };
        if (kind === 'fast') {
          sub = cq.completions$.subscribe({ next: onBatch, error: reject });
        } else {
          sub = channel.events$.pipe(ackEvents(), rearm(), drainCq(), batchCompletions()).subscribe({ next: onBatch, error: reject });
          cq.requestNotify();
        }
        t0 = performance.now();
        qp.postSend(send);
      });
    }
    native().echoStop(echo.handle);
    native().echoClose(echo.handle);
    echo = undefined;
    return out;
  } finally {
    if (echo) native().echoClose(echo.handle);
    ctx.close();
  }
}

export function pingNative(cfg: RunConfig, mode: 'event' | 'poll' | 'spin', iters: number, warmup: number): Float64Array {
  return new Float64Array(native().ping({ device: cfg.device, ...gidArg(cfg), mode, iters, warmup }));
}

/**
 * The native event-mode ping asleep in Node's event loop instead of poll(2),
 * no JS until the end: the floor of an event-mode round trip in a Node.js
 * process. With `js`, each completion is also handed to a JS function that
 * reads it (status, opcode, wr_id) before the native side reposts: the
 * floor of a library that delivers completions to JS. With `calls`, that
 * function also makes two Node-API calls into the product addon (a getter
 * of a device context: a receiver check and a return), standing for the
 * two posts a handler makes in JS: what crossing into native costs.
 */
export function pingNativeLoop(cfg: RunConfig, iters: number, warmup: number, js: false | 'js' | 'calls' = false): Promise<Float64Array> {
  // Its own device (soft0 is always there): only its calls count.
  const callee = js === 'calls' ? openDevice('soft0') : undefined;
  return new Promise<Float64Array>((resolve, reject) => {
    let handle: BenchHandle | undefined;
    let bad = 0;
    let seen = 0;
    const timer = setTimeout(() => {
      if (handle) native().pingLoopClose(handle);
      reject(new Error('ping loop stalled'));
    }, 60_000);
    const callback = (result: ArrayBuffer | string) => {
      clearTimeout(timer);
      // Closed on the next turn: this call comes from inside the loop's own wakeup.
      setImmediate(() => {
        if (handle) native().pingLoopClose(handle);
        if (typeof result === 'string') reject(new Error(result));
        else if (bad > 0) reject(new Error(`ping loop: ${bad} completions failed`));
        else if (js && seen < iters + warmup) reject(new Error(`ping loop: JS saw ${seen} receives of ${iters + warmup}`));
        else resolve(new Float64Array(result));
      });
    };
    // What pingJs's subscriber reads of each completion.
    const onCompletion = (status: number, opcode: number, wrIdLow: number) => {
      if (status !== 0) bad++;
      if (opcode === WC_OPCODES.RECV && wrIdLow < 16) seen++;
    };
    const withCalls = (status: number, opcode: number, wrIdLow: number) => {
      onCompletion(status, opcode, wrIdLow);
      // Two calls, whatever the first returns.
      if (callee?.native.closed) bad++;
      if (callee?.native.closed) bad++;
    };
    try {
      const each = js === 'calls' ? withCalls : js ? onCompletion : undefined;
      handle = native().pingLoopStart({ device: cfg.device, ...gidArg(cfg), iters, warmup, callback, ...(each ? { onCompletion: each } : {}) });
    } catch (err) {
      clearTimeout(timer);
      reject(err);
    }
  }).finally(() => callee?.close());
}

export async function latency(cfg: RunConfig) {
  const iters = scaled(cfg, cfg.quick ? 3000 : 30_000, 100);
  // Warm-up does not scale with the device: it is there for the JS side,
  // whose code must be optimized (not interpreted, not being compiled on a
  // worker thread) before it is measured. Scaled down to the 20 round trips
  // of a quick run on rxe0, it measured V8's tiers instead of the library.
  // V8 tiers a function up by how often it ran, then compiles it on a
  // worker thread: on rxe0 in the TCG guest the event-mode ping's last hot
  // function (handleWakeup) was optimized after about 3,700 round trips
  // (--trace-opt), and its p50 fell by about a sixth on the way. 1,000 left every
  // quick chunk on rxe0 in that phase.
  const warmup = cfg.quick ? 200 : 1000;
  const firstWarmup = 5000;
  const chunks = cfg.quick ? 3 : 6;
  const spinUs = 200;
  const per = Math.ceil(iters / chunks);
  // Variants run in interleaved chunks and their samples are merged, so a
  // burst of load on the machine hits every variant alike.
  const variants: [string, (w: number) => Promise<Float64Array> | Float64Array][] = [
    ['native-event', (w) => pingNative(cfg, 'event', per, w)],
    // The floor of any Node.js process: native-event's work, woken by Node's loop.
    ['native-event-loop', (w) => pingNativeLoop(cfg, per, w)],
    // The floor of a library that hands completions to JS: the above, and
    // one JS call per completion before the native side reposts.
    ['native-event-loop-js', (w) => pingNativeLoop(cfg, per, w, 'js')],
    // ... and two Node-API calls from that JS, as a handler's two posts.
    ['native-event-loop-js-calls', (w) => pingNativeLoop(cfg, per, w, 'calls')],
    ['rxv-fast-event', (w) => pingJs(cfg, 'fast', per, w, 0)],
    ['rxv-operators-event', (w) => pingJs(cfg, 'operators', per, w, 0)],
    ['native-busy-poll', (w) => pingNative(cfg, 'poll', per, w)],
    // The spin's own baseline: the addon's spin policy (look when the CQ
    // changed, sched_yield between looks) without JS. Its tail under the
    // same load is the machine's share of rxv-spin's tail.
    ['native-spin', (w) => pingNative(cfg, 'spin', per, w)],
    ['rxv-spin', (w) => pingJs(cfg, 'spin', per, w, spinUs)],
  ];
  const samples = new Map<string, Float64Array[]>();
  cfg.log(
    `latency: RC ping-pong against a native echo peer, ${iters} round trips per variant in ${chunks} interleaved chunks ` +
      `(warm-up: ${firstWarmup} round trips before a variant's first chunk, ${warmup} before each other)`,
  );
  for (let c = 0; c < chunks; c++) {
    for (const [name, run] of variants) {
      const s = await run(c === 0 ? firstWarmup : warmup);
      samples.set(name, [...(samples.get(name) ?? []), s]);
      const st = stats(name, s);
      cfg.log(`  chunk ${c + 1}/${chunks} ${name.padEnd(26)} p50 ${fmt(st.p50, 1)} us  p99 ${fmt(st.p99, 1)} us`);
    }
  }
  const best: Record<string, LatencyStats> = {};
  for (const [name, parts] of samples) {
    const all = new Float64Array(parts.reduce((n, p) => n + p.length, 0));
    let at = 0;
    for (const p of parts) {
      all.set(p, at);
      at += p.length;
    }
    best[name] = stats(name, all);
  }
  const ev = best['rxv-fast-event'];
  return {
    p50RatioToNative: ev.p50 / best['native-event'].p50,
    loopP50RatioToNative: best['native-event-loop'].p50 / best['native-event'].p50,
    loopJsP50RatioToNative: best['native-event-loop-js'].p50 / best['native-event'].p50,
    loopJsCallsP50RatioToNative: best['native-event-loop-js-calls'].p50 / best['native-event'].p50,
    p99OverP50: ev.p99 / ev.p50,
    spinP50OverEventP50: best['rxv-spin'].p50 / ev.p50,
    spinP99OverP50: best['rxv-spin'].p99 / best['rxv-spin'].p50,
    operatorsP50RatioToNative: best['rxv-operators-event'].p50 / best['native-event'].p50,
    spinP50RatioToNativeBusyPoll: best['rxv-spin'].p50 / best['native-busy-poll'].p50,
    nativeSpinP99OverP50: best['native-spin'].p99 / best['native-spin'].p50,
    nativeP99OverP50: best['native-event'].p99 / best['native-event'].p50,
    spinUs,
    variants: best,
  };
}
