/**
 * `rx-verbs bench` (also `npm run bench`): the benchmarks of DESIGN §3 on
 * the soft device, each against its baselines in the same process and run.
 *
 * Suites (`--only a,b`): throughput, eventRate, latency, idle, memory,
 * operators. Native baselines live in src/native/bench (`nativeBench`).
 * Every variant of a suite is run in interleaved rounds and the best round
 * is kept (the machine is noisy); ratios come from the same run.
 * `--quick` finishes in under a minute; `--json` also writes
 * bench/results/latest.json (or `--out`).
 * @packageDocumentation
 */
import { spawnSync } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { performance, PerformanceObserver } from 'perf_hooks';
import { asapScheduler, filter, map, mergeMap, MonoTypeOperatorFunction, Observable, observeOn, OperatorFunction, Subject, Subscription, tap } from 'rxjs';
import { binding } from '../../native/binding';
import { ackEvents, batchCompletions, drainCq, failOnError, rearm, splitErrors, steer, toTakeable } from '../../operators';
import { Context, CqEvent, CqLike, openDevice, WcBatch, WC_OPCODES } from '../../verbs';
import { helpText, OptionSpec, parseArgs, UsageError } from '../args';
import type { Command } from './index';

const SPECS: OptionSpec[] = [
  { name: 'quick', type: 'flag', help: 'short runs (under a minute)' },
  { name: 'json', type: 'flag', help: 'also write the results as JSON (see --out)' },
  { name: 'out', type: 'string', help: 'JSON file (default bench/results/latest.json)' },
  { name: 'only', type: 'string', help: 'comma-separated suites: throughput,eventRate,latency,idle,memory,operators' },
  { name: 'device', short: 'd', type: 'string', help: 'soft device to run on', default: 'soft0' },
  { name: 'quiet', short: 'q', type: 'flag', help: 'no progress output' },
  { name: 'help', short: 'h', type: 'flag', help: 'show this help' },
];

const SUITES = ['throughput', 'eventRate', 'latency', 'idle', 'memory', 'operators'] as const;
type Suite = (typeof SUITES)[number];

/** V8 flags the memory suite needs: gc() (default heap sizes, so RSS is what a user sees). */
const NODE_FLAGS = ['--expose-gc'];

/** `rx-verbs bench`: every suite, a table on stdout, JSON with `--json`. */
export const bench: Command = {
  summary: 'benchmarks against native baselines (throughput, event rate, latency, idle, memory, operators)',
  async run(argv) {
    const { options } = parseArgs(argv, SPECS);
    if (options.help) {
      process.stdout.write(helpText('rx-verbs bench [options]', this.summary, SPECS));
      return 0;
    }
    if (typeof (globalThis as { gc?: unknown }).gc !== 'function') return reexec();
    const only = options.only === undefined ? [...SUITES] : String(options.only).split(',').map((s) => s.trim());
    for (const s of only) if (!(SUITES as readonly string[]).includes(s)) throw new UsageError(`unknown suite '${s}' (try: ${SUITES.join(', ')})`);
    const cfg: RunConfig = {
      quick: !!options.quick,
      device: String(options.device),
      log: options.quiet ? () => undefined : (line: string) => process.stderr.write(`${line}\n`),
    };
    const results = await runBench(cfg, only as Suite[]);
    process.stdout.write(`${formatResults(results)}\n`);
    if (options.json || options.out) {
      const file = path.resolve(String(options.out ?? path.join(packageRoot(), 'bench', 'results', 'latest.json')));
      fs.mkdirSync(path.dirname(file), { recursive: true });
      fs.writeFileSync(file, `${JSON.stringify(results, null, 2)}\n`);
      process.stderr.write(`results written to ${file}\n`);
    }
    return 0;
  },
};

/** Runs this same command again in a child Node with the flags the suites need. */
function reexec(): number {
  if (process.env.RX_VERBS_BENCH_CHILD) throw new Error('bench: gc() is still not exposed in the child process');
  const script = process.argv[1];
  const r = spawnSync(process.execPath, [...NODE_FLAGS, ...process.execArgv, script, ...process.argv.slice(2)], {
    stdio: 'inherit',
    env: { ...process.env, RX_VERBS_BENCH_CHILD: '1' },
  });
  if (r.error) throw r.error;
  return r.status ?? 1;
}

function packageRoot(): string {
  return path.resolve(__dirname, '..', '..', '..');
}

// ---- shared plumbing --------------------------------------------------------

interface RunConfig {
  quick: boolean;
  device: string;
  log: (line: string) => void;
}

type Nb = (op: string, args?: Record<string, unknown>, handle?: unknown) => unknown;
const nb: Nb = (op, args, handle) => binding().nativeBench(op, args, handle);

const gc = (): void => (globalThis as unknown as { gc: () => void }).gc();
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
const immediate = () => new Promise<void>((r) => setImmediate(r));

interface CpuSample {
  wall: number;
  cpu: NodeJS.CpuUsage;
  thread: number;
}
const threadCpu = (): number => nb('threadCpu') as number;
const cpuStart = (): CpuSample => ({ wall: performance.now(), cpu: process.cpuUsage(), thread: threadCpu() });
/** CPU the calling (JS) thread used since `s`, in ns per item. */
const threadNsPer = (s: CpuSample, items: number): number => ((threadCpu() - s.thread) * 1e9) / Math.max(1, items);
/** Process CPU (all threads: JS, device, producer) as % of one core since `s`. */
function cpuPercent(s: CpuSample): number {
  const d = process.cpuUsage(s.cpu);
  return ((d.user + d.system) / 1000 / (performance.now() - s.wall)) * 100;
}

/** One pass of a workload: what was moved and how fast. */
interface Run {
  variant: string;
  wcs: number;
  seconds: number;
  rate: number;
  wcsPerEvent?: number;
  cpuPercent?: number;
  /** CPU the consumer's thread spent per WC (the JS thread; the drain loop's thread for native). */
  consumerNsPerWc?: number;
  error?: string;
}

/** Producer settings for one run (see src/native/bench). */
interface Load {
  depth: number;
  total: number;
  window: number;
  burst: number;
  rate: number;
}

interface ProducerHandle {
  handle: unknown;
  counter: ArrayBuffer;
}

/** A soft device set up for the JS consumers: the CQ under test on a channel, and a native producer posting to it. */
class JsRig {
  readonly ctx: Context;
  readonly channel;
  readonly cq;
  readonly pd;
  readonly producer: ProducerHandle;
  readonly credits: Uint32Array;

  constructor(device: string, depth: number, maxWr: number) {
    this.ctx = openDevice(device);
    this.channel = this.ctx.createCompChannel();
    this.cq = this.ctx.createCq({ cqe: depth, channel: this.channel });
    this.pd = this.ctx.allocPd();
    this.producer = nb('producer.create', { context: this.ctx.native, pd: this.pd.native, cq: this.cq.native, maxWr }) as ProducerHandle;
    this.credits = new Uint32Array(this.producer.counter);
  }

  start(load: Load): void {
    nb('producer.start', { total: load.total, window: load.window, burst: load.burst, rate: load.rate }, this.producer.handle);
  }

  stop(): { posted: number; error?: string } {
    return nb('producer.stop', undefined, this.producer.handle) as { posted: number; error?: string };
  }

  close(): void {
    nb('producer.close', undefined, this.producer.handle);
    this.ctx.close();
  }
}

type Consumer = (batch: WcBatch) => void;

/**
 * Subscribes the pipeline under test: `fast` (cq.completions$) or `operators`
 * (channel.events$ + rearm, ackEvents, drainCq, batchCompletions).
 */
function subscribePipeline(rig: JsRig, kind: 'fast' | 'operators', onBatch: Consumer): Subscription {
  if (kind === 'fast') return rig.cq.completions$.subscribe({ next: onBatch });
  const sub = rig.channel.events$.pipe(rearm(), ackEvents(), drainCq(), batchCompletions()).subscribe({ next: onBatch });
  rig.cq.requestNotify();
  const first = rig.cq.poll(256);
  if (first.length > 0) onBatch(first);
  return sub;
}

/** Moves `load.total` WCs through a JS pipeline; the subscriber reads wr_id and status of every WC. */
function runJs(cfg: RunConfig, kind: 'fast' | 'operators', load: Load, hooks?: { onBatch?: (got: number) => void }): Promise<Run & { batches: number }> {
  const rig = new JsRig(cfg.device, load.depth, load.window);
  return new Promise((resolve, reject) => {
    let got = 0;
    let batches = 0;
    let sum = 0;
    let errors = 0;
    let done = false;
    let sub: Subscription | undefined;
    let cpu: CpuSample;
    let timer: NodeJS.Timeout | undefined;
    const credits = rig.credits;
    const finish = (error?: string) => {
      if (done) return;
      done = true;
      const seconds = (performance.now() - cpu.wall) / 1000;
      const cpuPct = cpuPercent(cpu);
      const consumerNsPerWc = threadNsPer(cpu, got);
      clearTimeout(timer);
      const stopped = rig.stop();
      sub?.unsubscribe();
      const events = rig.cq.stats.events;
      try {
        rig.close();
      } catch (err) {
        reject(err);
        return;
      }
      resolve({
        variant: kind,
        wcs: got,
        seconds,
        rate: got / seconds,
        wcsPerEvent: got / Math.max(1, events),
        cpuPercent: cpuPct,
        consumerNsPerWc,
        batches,
        error: error ?? stopped.error ?? (errors > 0 ? `${errors} failed WCs` : undefined),
      });
    };
    const onBatch = (b: WcBatch) => {
      const n = b.length;
      const words = b.wrIdWords;
      const status = b.status;
      for (let i = 0; i < n; i++) {
        sum = (sum + words[2 * i] + words[2 * i + 1]) | 0;
        if (status[i] !== 0) errors++;
      }
      credits[0] += n;
      got += n;
      batches++;
      hooks?.onBatch?.(got);
      if (got >= load.total) setImmediate(finish);
    };
    try {
      sub = subscribePipeline(rig, kind, onBatch);
      cpu = cpuStart();
      rig.start(load);
      timer = setTimeout(() => finish(`stalled after ${got} of ${load.total} WCs`), 60_000 + (load.rate ? (load.total / load.rate) * 2000 : 0));
    } catch (err) {
      sub?.unsubscribe();
      rig.close();
      reject(err);
    }
  });
}

/** The native event-mode drain loop (the limit). */
function runNative(cfg: RunConfig, load: Load): Run {
  const cpu = cpuStart();
  const r = nb('drain', { device: cfg.device, cqe: load.depth, total: load.total, window: load.window, burst: load.burst, rate: load.rate }) as {
    seconds: number;
    wcs: number;
    events: number;
    consumerCpuSeconds: number;
    error?: string;
  };
  return {
    variant: 'native',
    wcs: r.wcs,
    seconds: r.seconds,
    rate: r.wcs / r.seconds,
    wcsPerEvent: r.wcs / Math.max(1, r.events),
    cpuPercent: cpuPercent(cpu),
    consumerNsPerWc: (r.consumerCpuSeconds * 1e9) / Math.max(1, r.wcs),
    error: r.error,
  };
}

/** The naive binding: one MakeCallback and one fresh object per WC. */
function runNaive(cfg: RunConfig, load: Load): Promise<Run> {
  return new Promise((resolve, reject) => {
    let got = 0;
    let sum = 0;
    let done = false;
    let cpu: CpuSample;
    let timer: NodeJS.Timeout | undefined;
    const finish = (error?: string) => {
      if (done) return;
      done = true;
      const seconds = (performance.now() - cpu.wall) / 1000;
      const cpuPct = cpuPercent(cpu);
      const consumerNsPerWc = threadNsPer(cpu, got);
      clearTimeout(timer);
      const s = nb('naive.close', undefined, handle) as { events: number; error?: string };
      resolve({ variant: 'naive', wcs: got, seconds, rate: got / seconds, wcsPerEvent: got / Math.max(1, s.events), cpuPercent: cpuPct, consumerNsPerWc, error: error ?? s.error });
    };
    const callback = (wc: { wrId: bigint; status: number }) => {
      sum = (sum + Number(wc.wrId) + wc.status) | 0;
      if (++got === load.total) setImmediate(finish);
    };
    let handle: unknown;
    try {
      handle = nb('naive.create', { device: cfg.device, cqe: load.depth, callback });
      cpu = cpuStart();
      nb('naive.start', { total: load.total, window: load.window, burst: load.burst, rate: load.rate }, handle);
      timer = setTimeout(() => finish(`stalled after ${got} of ${load.total} WCs`), 60_000 + (load.rate ? (load.total / load.rate) * 2000 : 0));
    } catch (err) {
      reject(err);
    }
  });
}

type Variant = 'native' | 'fast' | 'operators' | 'naive';

function runVariant(cfg: RunConfig, v: Variant, load: Load): Promise<Run> {
  if (v === 'native') return Promise.resolve(runNative(cfg, load));
  if (v === 'naive') return runNaive(cfg, load);
  return runJs(cfg, v, load);
}

/** Runs every variant `rounds` times, interleaved, and keeps each variant's best (highest rate) round. */
async function bestOf(cfg: RunConfig, label: string, variants: Variant[], load: (v: Variant) => Load, rounds: number): Promise<Record<string, Run>> {
  const best: Record<string, Run> = {};
  for (let r = 0; r < rounds; r++) {
    for (const v of variants) {
      const run = await runVariant(cfg, v, load(v));
      if (run.error) cfg.log(`  ${label} ${v}: ${run.error}`);
      if (!best[v] || run.rate > best[v].rate) best[v] = run;
      cfg.log(`  ${label} round ${r + 1}/${rounds} ${v.padEnd(9)} ${fmtRate(run.rate)} WC/s  ${fmt(run.wcsPerEvent ?? 0, 1)} WC/event  cpu ${fmt(run.cpuPercent ?? 0, 0)}%  consumer ${fmt(run.consumerNsPerWc ?? 0, 0)} ns/WC`);
      await immediate();
    }
  }
  return best;
}

// ---- 1. throughput ------------------------------------------------------------

interface ThroughputConfig {
  depth: number;
  rate: number;
  runs: Record<string, Run>;
  fastToNative: number;
  operatorsToNative: number;
  fastToNaive: number;
  operatorsToNaive: number;
  /** Consumer-thread CPU per WC: naive / fast path (how much cheaper the pipeline is, independent of the shared producer and device threads). */
  naiveCpuOverFast: number;
  naiveCpuOverOperators: number;
}

async function throughput(cfg: RunConfig) {
  const q = cfg.quick;
  const depths = q ? [256, 4096] : [64, 256, 1024, 4096];
  const paced = q ? [{ depth: 1024, rate: 200_000 }] : [{ depth: 1024, rate: 100_000 }, { depth: 1024, rate: 400_000 }];
  const total = q ? 150_000 : 1_000_000;
  const pacedSeconds = q ? 0.4 : 2;
  const rounds = q ? 2 : 3;
  const configs: ThroughputConfig[] = [];
  const all = [...depths.map((depth) => ({ depth, rate: 0 })), ...paced];
  for (const { depth, rate } of all) {
    cfg.log(`throughput: depth ${depth}, ${rate ? `${fmtRate(rate)} WC/s offered` : 'producer unlimited'}`);
    const n = rate ? Math.round(rate * pacedSeconds) : total;
    const load = (v: Variant): Load => ({ depth, window: depth, burst: Math.min(32, depth), rate, total: v === 'naive' && !rate ? Math.round(n / 3) : n });
    const runs = await bestOf(cfg, `d${depth}${rate ? `@${fmtRate(rate)}` : ''}`, ['native', 'fast', 'operators', 'naive'], load, rate ? 1 : rounds);
    configs.push({
      depth,
      rate,
      runs,
      fastToNative: runs.fast.rate / runs.native.rate,
      operatorsToNative: runs.operators.rate / runs.native.rate,
      fastToNaive: runs.fast.rate / runs.naive.rate,
      operatorsToNaive: runs.operators.rate / runs.naive.rate,
      naiveCpuOverFast: (runs.naive.consumerNsPerWc ?? NaN) / (runs.fast.consumerNsPerWc ?? NaN),
      naiveCpuOverOperators: (runs.naive.consumerNsPerWc ?? NaN) / (runs.operators.consumerNsPerWc ?? NaN),
    });
  }
  const unpaced = configs.filter((c) => c.rate === 0);
  return {
    // Headline: the fast path (cq.completions$) at the worst unpaced depth.
    ratioToNative: Math.min(...unpaced.map((c) => c.fastToNative)),
    ratioToNaive: Math.min(...unpaced.map((c) => c.fastToNaive)),
    operatorsRatioToNative: Math.min(...unpaced.map((c) => c.operatorsToNative)),
    operatorsRatioToNaive: Math.min(...unpaced.map((c) => c.operatorsToNaive)),
    consumerCpuNaiveOverFast: Math.min(...unpaced.map((c) => c.naiveCpuOverFast)),
    consumerCpuNaiveOverOperators: Math.min(...unpaced.map((c) => c.naiveCpuOverOperators)),
    configs,
  };
}

// ---- 2. event rate ---------------------------------------------------------------

async function eventRate(cfg: RunConfig) {
  const total = cfg.quick ? 4000 : 40_000;
  cfg.log('event rate: one WC in flight (one WC per event)');
  const load = (v: Variant): Load => ({ depth: 64, window: 1, burst: 1, rate: 0, total: v === 'naive' ? total / 2 : total });
  const runs = await bestOf(cfg, 'events', ['native', 'fast', 'operators', 'naive'], load, cfg.quick ? 2 : 3);
  return {
    ratioToNative: runs.fast.rate / runs.native.rate,
    operatorsRatioToNative: runs.operators.rate / runs.native.rate,
    naiveRatioToNative: runs.naive.rate / runs.native.rate,
    eventsPerSecond: Object.fromEntries(Object.entries(runs).map(([k, r]) => [k, r.rate])),
    runs,
  };
}

// ---- 3. latency ------------------------------------------------------------------

interface LatencyStats {
  variant: string;
  samples: number;
  p50: number;
  p99: number;
  p999: number;
  mean: number;
  min: number;
}

function stats(variant: string, us: Float64Array): LatencyStats {
  const s = Float64Array.from(us).sort();
  const at = (p: number) => s[Math.min(s.length - 1, Math.floor(p * s.length))];
  let sum = 0;
  for (const x of s) sum += x;
  return { variant, samples: s.length, p50: at(0.5), p99: at(0.99), p999: at(0.999), mean: sum / s.length, min: s[0] };
}

type PingKind = 'fast' | 'operators' | 'spin';

/** Ping-pong from JS against the native echo peer: post a SEND, wait for the echo's SEND to land in a receive. */
async function pingJs(cfg: RunConfig, kind: PingKind, iters: number, warmup: number, spinUs: number): Promise<Float64Array> {
  const depth = 16;
  const ctx = openDevice(cfg.device);
  let echo: { handle: unknown; qpNum: number; lid: number; psn: number } | undefined;
  try {
    const channel = ctx.createCompChannel();
    const cq = ctx.createCq({ cqe: depth * 2 + 16, channel });
    const pd = ctx.allocPd();
    const qp = pd.createQp({ sendCq: cq, recvCq: cq, cap: { maxSendWr: depth, maxRecvWr: depth } });
    const mr = pd.registerMemory(Buffer.alloc((depth + 1) * 64), { access: ['LOCAL_WRITE'] });
    echo = nb('echo.create', { context: ctx.native, pd: pd.native, depth, peerQpNum: qp.qpNum, peerPsn: qp.psn }) as typeof echo & object;
    qp.connect({ qpNum: echo.qpNum, lid: echo.lid, psn: echo.psn, port: 1 });
    const recvs = Array.from({ length: depth }, (_, i) => ({ wrId: i, sg: { mr, offset: i * 64, length: 64 } }));
    for (const r of recvs) qp.postRecv(r);
    const send = { wrId: 0, sg: { mr, offset: depth * 64, length: 8 }, signaled: false };
    nb('echo.start', { mode: kind === 'spin' ? 'poll' : 'event' }, echo.handle);
    const out = new Float64Array(iters);
    let k = 0;
    let t0 = 0;
    // Returns true when the round trip ended (a receive completed).
    const handle = (b: WcBatch): boolean => {
      const t = performance.now();
      let recv = false;
      for (let i = 0; i < b.length; i++) {
        if (b.status[i] !== 0) throw new Error(`ping: completion failed with status ${b.status[i]}`);
        if (b.opcode[i] === WC_OPCODES.RECV) {
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
          sub = channel.events$.pipe(rearm(), ackEvents(), drainCq(), batchCompletions()).subscribe({ next: onBatch, error: reject });
          cq.requestNotify();
        }
        t0 = performance.now();
        qp.postSend(send);
      });
    }
    nb('echo.stop', undefined, echo.handle);
    nb('echo.close', undefined, echo.handle);
    echo = undefined;
    return out;
  } finally {
    if (echo) nb('echo.close', undefined, echo.handle);
    ctx.close();
  }
}

function pingNative(cfg: RunConfig, mode: 'event' | 'poll', iters: number, warmup: number): Float64Array {
  return new Float64Array(nb('ping', { device: cfg.device, mode, iters, warmup }) as ArrayBuffer);
}

async function latency(cfg: RunConfig) {
  const iters = cfg.quick ? 3000 : 30_000;
  const warmup = cfg.quick ? 200 : 1000;
  const chunks = cfg.quick ? 3 : 6;
  const spinUs = 200;
  const per = Math.ceil(iters / chunks);
  // Variants run in interleaved chunks and their samples are merged, so a
  // burst of load on the machine hits every variant alike.
  const variants: [string, () => Promise<Float64Array> | Float64Array][] = [
    ['native-event', () => pingNative(cfg, 'event', per, warmup)],
    ['rxv-fast-event', () => pingJs(cfg, 'fast', per, warmup, 0)],
    ['rxv-operators-event', () => pingJs(cfg, 'operators', per, warmup, 0)],
    ['native-busy-poll', () => pingNative(cfg, 'poll', per, warmup)],
    ['rxv-spin', () => pingJs(cfg, 'spin', per, warmup, spinUs)],
  ];
  const samples = new Map<string, Float64Array[]>();
  cfg.log(`latency: RC ping-pong against a native echo peer, ${iters} round trips per variant in ${chunks} interleaved chunks`);
  for (let c = 0; c < chunks; c++) {
    for (const [name, run] of variants) {
      const s = await run();
      samples.set(name, [...(samples.get(name) ?? []), s]);
      const st = stats(name, s);
      cfg.log(`  chunk ${c + 1}/${chunks} ${name.padEnd(19)} p50 ${fmt(st.p50, 1)} us  p99 ${fmt(st.p99, 1)} us`);
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
    p99OverP50: ev.p99 / ev.p50,
    spinP50OverEventP50: best['rxv-spin'].p50 / ev.p50,
    operatorsP50RatioToNative: best['rxv-operators-event'].p50 / best['native-event'].p50,
    spinP50RatioToNativeBusyPoll: best['rxv-spin'].p50 / best['native-busy-poll'].p50,
    nativeP99OverP50: best['native-event'].p99 / best['native-event'].p50,
    spinUs,
    variants: best,
  };
}

// ---- 4. idle ------------------------------------------------------------------------

async function idle(cfg: RunConfig) {
  const seconds = cfg.quick ? 2 : 5;
  cfg.log(`idle: armed channels and live subscriptions, no traffic, ${seconds} s`);
  const ctx = openDevice(cfg.device);
  try {
    const channels = [ctx.createCompChannel(), ctx.createCompChannel()];
    const fastCqs = [0, 1, 2, 3].map((i) => ctx.createCq({ cqe: 256, channel: channels[i % 2] }));
    const opCq = ctx.createCq({ cqe: 256, channel: channels[0] });
    const sub = new Subscription();
    for (const cq of fastCqs) sub.add(cq.completions$.subscribe(() => undefined));
    sub.add(channels[0].events$.pipe(rearm(), ackEvents(), drainCq(), batchCompletions()).subscribe(() => undefined));
    opCq.requestNotify();
    await sleep(200);
    gc();
    const wakeups0 = channels.map((c) => c.wakeups.total);
    const cpu = cpuStart();
    await sleep(seconds * 1000);
    const pct = cpuPercent(cpu);
    const wakeups = channels.reduce((n, c, i) => n + c.wakeups.total - wakeups0[i], 0);
    sub.unsubscribe();
    cfg.log(`  ${fmt(pct, 3)}% of a core, ${wakeups} channel wakeups`);
    return { cpuPercent: pct, seconds, channels: channels.length, cqs: fastCqs.length + 1, wakeups };
  } finally {
    ctx.close();
  }
}

// ---- 5. memory ------------------------------------------------------------------------

const MB = 1024 * 1024;

/** Counts GCs (entries arrive asynchronously: read after yielding to the loop). */
class GcCounter {
  count = 0;
  private readonly obs = new PerformanceObserver((list) => {
    this.count += list.getEntries().length;
  });
  constructor() {
    this.obs.observe({ entryTypes: ['gc'] });
  }
  close(): void {
    this.obs.disconnect();
  }
}

/**
 * Allocation per WC on the batch path. Method: the real fast path runs with
 * bursts of 4..256 WRs, so its batches differ in size. Inside the running
 * pipeline (setup excluded), right after a gc() at a checkpoint, `heapUsed`
 * is read, and again ~300 batches later: the difference is what those
 * batches allocated on the JS heap (small enough to fit the young
 * generation; a segment during which a GC ran — seen by a PerformanceObserver
 * or by heapUsed going down — is discarded). Least squares over the segments
 * fits `bytes = perBatch * batches + perWc * wcs`. A per-WC allocation shows
 * as `perWc` >= 16 B (the smallest heap object), so `allocsPerWc = perWc / 16`
 * bounds the objects allocated per WC. Off-heap bytes (each batch's buffer,
 * one malloc per batch) come from `arrayBuffers` the same way.
 */
async function allocations(cfg: RunConfig) {
  const segments: { window: number; wcs: number; batches: number; heap: number; offHeap: number }[] = [];
  const counter = new GcCounter();
  const windows = [4, 16, 64, 256];
  const batchesPerSegment = 300;
  const segmentsPerRun = cfg.quick ? 3 : 8;
  let discarded = 0;
  for (const w of windows) {
    let seg: { wcs: number; batches: number; heap: number; ab: number; gcs: number } | undefined;
    let pending: { wcs: number; batches: number; heap: number; offHeap: number; gcs: number } | undefined;
    let batches = 0;
    let wcs = 0;
    let taken = 0;
    let gcAt = -1;
    const settle = () => {
      if (!pending) return;
      if (counter.count === pending.gcs && pending.heap > 0) segments.push({ window: w, ...pending });
      else discarded++;
      pending = undefined;
    };
    const total = w * batchesPerSegment * (segmentsPerRun + 2) * 2;
    await runJs(cfg, 'fast', { depth: 1024, window: w, burst: w, rate: 0, total }, {
      onBatch: (got) => {
        batches++;
        wcs = got;
        if (taken >= segmentsPerRun) return;
        if (!seg) {
          if (batches < 50) return; // warm up first
          settle();
          if (gcAt < 0) {
            gc();
            gcAt = batches;
            return;
          }
          // Start a few batches after the gc(), once its observer entry is in.
          if (batches - gcAt < 4) return;
          gcAt = -1;
          const m = process.memoryUsage();
          seg = { wcs, batches, heap: m.heapUsed, ab: m.arrayBuffers, gcs: counter.count };
          return;
        }
        if (batches - seg.batches < batchesPerSegment) return;
        const m = process.memoryUsage();
        pending = { wcs: wcs - seg.wcs, batches: batches - seg.batches, heap: m.heapUsed - seg.heap, offHeap: m.arrayBuffers - seg.ab, gcs: seg.gcs };
        seg = undefined;
        taken++;
      },
    });
    await immediate();
    settle();
  }
  counter.close();
  cfg.log(`  ${segments.length} GC-free segments (${discarded} discarded)`);
  for (const g of segments) cfg.log(`  window ${g.window}: ${g.batches} batches of ${fmt(g.wcs / g.batches, 1)} WCs, ${fmt(g.heap / g.batches, 0)} B heap and ${fmt(g.offHeap / g.batches, 0)} B off-heap per batch`);
  if (segments.length < 2) return { method: 'heapUsed deltas', error: 'too few GC-free segments', allocsPerWc: NaN };
  const x = segments.map((g) => [g.batches, g.wcs]);
  const [heapPerBatch, heapPerWc] = leastSquares2(x, segments.map((g) => g.heap));
  const [offPerBatch, offPerWc] = leastSquares2(x, segments.map((g) => g.offHeap));
  return {
    method: 'heapUsed/arrayBuffers deltas over GC-free in-pipeline segments of the fast path; least squares bytes = a*batches + b*wcs; allocsPerWc = max(0, b) / 16',
    segments,
    heapBytesPerBatch: heapPerBatch,
    heapBytesPerWc: heapPerWc,
    offHeapBytesPerBatch: offPerBatch,
    offHeapBytesPerWc: offPerWc,
    allocsPerWc: Math.max(0, heapPerWc) / 16,
  };
}

/** Solves min |X b - y| for two columns. */
function leastSquares2(x: number[][], y: number[]): [number, number] {
  let a11 = 0, a12 = 0, a22 = 0, b1 = 0, b2 = 0;
  for (let i = 0; i < x.length; i++) {
    const [u, v] = x[i];
    a11 += u * u;
    a12 += u * v;
    a22 += v * v;
    b1 += u * y[i];
    b2 += v * y[i];
  }
  const det = a11 * a22 - a12 * a12;
  if (Math.abs(det) < 1e-9) return [NaN, NaN];
  return [(b1 * a22 - b2 * a12) / det, (a11 * b2 - a12 * b1) / det];
}

async function memory(cfg: RunConfig) {
  const total = cfg.quick ? 1_000_000 : 10_000_000;
  cfg.log(`memory: ${fmtRate(total)} WCs through cq.completions$ (after a warm-up of ${fmtRate(total / 10)})`);
  await runJs(cfg, 'fast', { depth: 1024, window: 1024, burst: 32, rate: 0, total: total / 10 });
  const snap = () => {
    gc();
    gc();
    const m = process.memoryUsage();
    return { rss: m.rss, heapUsed: m.heapUsed, heapTotal: m.heapTotal, external: m.external, arrayBuffers: m.arrayBuffers };
  };
  await immediate();
  const before = snap();
  const checkpoints: { wcs: number; rssMB: number; heapMB: number }[] = [{ wcs: 0, rssMB: before.rss / MB, heapMB: before.heapUsed / MB }];
  let next = total / 10;
  const run = await runJs(
    cfg,
    'fast',
    { depth: 1024, window: 1024, burst: 32, rate: 0, total },
    {
      onBatch: (got) => {
        if (got < next) return;
        next += total / 10;
        const m = process.memoryUsage();
        checkpoints.push({ wcs: got, rssMB: m.rss / MB, heapMB: m.heapUsed / MB });
        cfg.log(`  ${fmtRate(got)} WCs  rss ${fmt(m.rss / MB, 1)} MB  heap ${fmt(m.heapUsed / MB, 1)} MB`);
      },
    },
  );
  await immediate();
  const after = snap();
  const rssGrowth = (after.rss - before.rss) / MB;
  const heapGrowth = (after.heapUsed - before.heapUsed) / MB;
  const scale = 10_000_000 / run.wcs;
  // Steady state: RSS slope over the second half of the run (after the heap
  // and allocator reached their working size), per 10M WCs.
  const late = checkpoints.filter((c) => c.wcs >= run.wcs / 2);
  const slope = late.length >= 2 ? (late[late.length - 1].rssMB - late[0].rssMB) / (late[late.length - 1].wcs - late[0].wcs) : NaN;
  cfg.log('allocations per WC (fast path, GC-free segments):');
  const alloc = await allocations(cfg);
  return {
    wcs: run.wcs,
    before,
    after,
    rssGrowthMB: rssGrowth,
    heapGrowthMB: heapGrowth,
    // Linear extrapolation to 10M WCs (an upper bound: the growth after the warm-up is not per WC).
    rssGrowthMBPer10M: rssGrowth * scale,
    rssSteadySlopeMBPer10M: slope * 10_000_000,
    heapGrowthMBPer10M: heapGrowth * scale,
    checkpoints,
    allocations: alloc,
  };
}

// ---- 6. operators ------------------------------------------------------------------------

/** An in-memory CQ: each event finds one batch of `k` WCs, then the CQ is empty. */
class SynthCq implements CqLike {
  readonly cqe = 1 << 20;
  arms = 0;
  acked = 0;
  private full = false;
  constructor(private readonly batch: WcBatch, private readonly empty: WcBatch) {}
  fill(): void {
    this.full = true;
  }
  requestNotify(): void {
    this.arms++;
  }
  poll(): WcBatch {
    if (!this.full) return this.empty;
    this.full = false;
    return this.batch;
  }
  ack(n: number): void {
    this.acked += n;
  }
}

interface OperatorCase {
  name: string;
  /** What flows in: CQ events (driving the CQ) or batches. */
  input: 'events' | 'batches';
  op: () => OperatorFunction<never, unknown>;
  baseline: () => OperatorFunction<never, unknown>;
  baselineName: string;
  /** Flushes by a scheduler: wait a microtask turn after each wakeup. */
  async?: boolean;
}

async function operators(cfg: RunConfig) {
  const k = 16;
  const batch = WcBatch.from(Array.from({ length: k }, (_, i) => ({ wrId: i, qpNum: 7 })));
  const empty = WcBatch.empty();
  const cq = new SynthCq(batch, empty);
  const event: CqEvent = { cq, context: undefined };
  const perWakeup = 8;
  const wakeups = cfg.quick ? 15_000 : 60_000;
  const id = <T>() => map((x: T) => x);
  const ackMap = () => {
    const counts = new Map<CqLike, number>();
    return tap((e: CqEvent) => {
      const n = (counts.get(e.cq) ?? 0) + 1;
      if (n >= 16) {
        counts.delete(e.cq);
        e.cq.ack(n);
      } else counts.set(e.cq, n);
    });
  };
  const pollAll = (e: CqEvent) => {
    const out: WcBatch[] = [];
    for (let b = e.cq.poll(64); b.length > 0; b = e.cq.poll(64)) out.push(b);
    return out;
  };
  const cases: OperatorCase[] = [
    { name: 'rearm', input: 'events', op: () => rearm() as never, baseline: () => tap((e: CqEvent) => e.cq.requestNotify(false)) as never, baselineName: 'tap(requestNotify)' },
    { name: 'ackEvents', input: 'events', op: () => ackEvents() as never, baseline: () => ackMap() as never, baselineName: 'tap(Map count, ack/16)' },
    { name: 'drainCq', input: 'events', op: () => drainCq() as never, baseline: () => mergeMap(pollAll) as never, baselineName: 'mergeMap(poll to empty)' },
    { name: 'batchCompletions', input: 'batches', op: () => batchCompletions() as never, baseline: () => id<WcBatch>() as never, baselineName: 'map(identity)', async: true },
    { name: 'steer', input: 'batches', op: () => steer({ by: (b: WcBatch) => b.qpNum[0], to: () => asapScheduler }) as never, baseline: () => observeOn(asapScheduler) as never, baselineName: 'observeOn(asap)', async: true },
    { name: 'failOnError', input: 'batches', op: () => failOnError() as never, baseline: () => tap((b: WcBatch) => { if (!b.allOk()) throw new Error('failed'); }) as never, baselineName: 'tap(allOk or throw)' },
    { name: 'splitErrors', input: 'batches', op: () => splitErrors(() => undefined) as never, baseline: () => filter((b: WcBatch) => b.allOk()) as never, baselineName: 'filter(allOk)' },
    {
      name: 'full pipeline',
      input: 'events',
      op: () => ((s: Observable<CqEvent>) => s.pipe(rearm(), ackEvents(), drainCq(), batchCompletions())) as never,
      baseline: () => ((s: Observable<CqEvent>) => s.pipe(tap((e: CqEvent) => e.cq.requestNotify(false)), ackMap(), mergeMap(pollAll), id<WcBatch>())) as never,
      baselineName: 'tap, tap, mergeMap, map',
      async: true,
    },
  ];

  const drive = async (build: () => OperatorFunction<never, unknown>, input: 'events' | 'batches', isAsync: boolean): Promise<number> => {
    const subject = new Subject<never>();
    let seen = 0;
    const sub = (subject.pipe(build()) as Observable<unknown>).subscribe((b) => {
      seen += (b as WcBatch).length ?? k;
    });
    const t0 = performance.now();
    for (let w = 0; w < wakeups; w++) {
      for (let i = 0; i < perWakeup; i++) {
        if (input === 'events') {
          cq.fill();
          subject.next(event as never);
        } else subject.next(batch as never);
      }
      if (isAsync) await Promise.resolve();
    }
    if (isAsync) await immediate();
    const ns = ((performance.now() - t0) * 1e6) / (wakeups * perWakeup * k);
    sub.unsubscribe();
    if (seen !== wakeups * perWakeup * k) throw new Error(`operators bench: saw ${seen} WCs, expected ${wakeups * perWakeup * k}`);
    return ns;
  };

  const toTakeableCase = async (useOp: boolean): Promise<number> => {
    const subject = new Subject<WcBatch>();
    let seen = 0;
    const t0 = performance.now();
    if (useOp) {
      const takeable = toTakeable(subject, { highWaterMark: perWakeup * 2 });
      for (let w = 0; w < wakeups; w++) {
        for (let i = 0; i < perWakeup; i++) subject.next(batch);
        for (let b = takeable.tryTake(); b; b = takeable.tryTake()) seen += b.length;
      }
      takeable.close();
    } else {
      const queue: WcBatch[] = [];
      const sub = subject.subscribe((b) => queue.push(b));
      for (let w = 0; w < wakeups; w++) {
        for (let i = 0; i < perWakeup; i++) subject.next(batch);
        for (let b = queue.shift(); b; b = queue.shift()) seen += b.length;
      }
      sub.unsubscribe();
    }
    const ns = ((performance.now() - t0) * 1e6) / (wakeups * perWakeup * k);
    if (seen !== wakeups * perWakeup * k) throw new Error('operators bench: toTakeable lost items');
    return ns;
  };

  cfg.log(`operators: synthetic CqLike, ${k} WCs per batch, ${perWakeup} per wakeup, ${wakeups} wakeups`);
  const rounds = cfg.quick ? 3 : 5;
  const rows: { operator: string; nsPerWc: number; baseline: string; baselineNsPerWc: number; ratio: number }[] = [];
  const all = [...cases.map((c) => c.name), 'toTakeable'];
  for (const name of all) {
    let best = Infinity;
    let bestBase = Infinity;
    const c = cases.find((x) => x.name === name);
    for (let r = 0; r < rounds; r++) {
      if (c) {
        best = Math.min(best, await drive(c.op, c.input, !!c.async));
        bestBase = Math.min(bestBase, await drive(c.baseline, c.input, !!c.async));
      } else {
        best = Math.min(best, await toTakeableCase(true));
        bestBase = Math.min(bestBase, await toTakeableCase(false));
      }
    }
    rows.push({ operator: name, nsPerWc: best, baseline: c ? c.baselineName : 'subscribe + array queue', baselineNsPerWc: bestBase, ratio: best / bestBase });
    cfg.log(`  ${name.padEnd(17)} ${fmt(best, 2)} ns/WC  (baseline ${fmt(bestBase, 2)})`);
  }
  return { wcsPerBatch: k, batchesPerWakeup: perWakeup, rows };
}

// ---- orchestration and report ---------------------------------------------------------------

interface Results {
  meta: Record<string, unknown>;
  throughput?: Awaited<ReturnType<typeof throughput>>;
  eventRate?: Awaited<ReturnType<typeof eventRate>>;
  latency?: Awaited<ReturnType<typeof latency>>;
  idle?: Awaited<ReturnType<typeof idle>>;
  memory?: Awaited<ReturnType<typeof memory>>;
  operators?: Awaited<ReturnType<typeof operators>>;
  idleCpuPercent?: number;
  rssGrowthMB?: number;
  allocsPerWc?: number;
  targets: { name: string; target: string; value: number; met: boolean }[];
}

async function runBench(cfg: RunConfig, suites: Suite[]): Promise<Results> {
  const started = Date.now();
  const results: Results = {
    meta: {
      quick: cfg.quick,
      device: cfg.device,
      node: process.version,
      cpus: os.cpus().length,
      loadAverageBefore: os.loadavg(),
      date: new Date().toISOString(),
    },
    targets: [],
  };
  if (suites.includes('throughput')) results.throughput = await throughput(cfg);
  if (suites.includes('eventRate')) results.eventRate = await eventRate(cfg);
  if (suites.includes('latency')) results.latency = await latency(cfg);
  if (suites.includes('idle')) {
    results.idle = await idle(cfg);
    results.idleCpuPercent = results.idle.cpuPercent;
  }
  if (suites.includes('memory')) {
    results.memory = await memory(cfg);
    // Full runs measure 10M WCs; quick runs add the steady-state slope over
    // 10M WCs to the growth measured over 1M (the first part is warm-up).
    results.rssGrowthMB = cfg.quick ? results.memory.rssGrowthMB + Math.max(0, results.memory.rssSteadySlopeMBPer10M) : results.memory.rssGrowthMB;
    results.allocsPerWc = results.memory.allocations.allocsPerWc;
  }
  if (suites.includes('operators')) results.operators = await operators(cfg);
  results.meta.seconds = (Date.now() - started) / 1000;
  results.meta.loadAverageAfter = os.loadavg();
  results.targets = targets(results);
  return results;
}

function targets(r: Results): Results['targets'] {
  const t: Results['targets'] = [];
  const add = (name: string, target: string, value: number | undefined, met: (v: number) => boolean) => {
    if (value !== undefined && !Number.isNaN(value)) t.push({ name, target, value, met: met(value) });
  };
  add('throughput fast path / native drain', '>= 0.5', r.throughput?.ratioToNative, (v) => v >= 0.5);
  add('throughput operators / native drain', '>= 0.5', r.throughput?.operatorsRatioToNative, (v) => v >= 0.5);
  add('throughput fast path / naive', '>= 10', r.throughput?.ratioToNaive, (v) => v >= 10);
  add('throughput operators / naive', '>= 10', r.throughput?.operatorsRatioToNaive, (v) => v >= 10);
  add('event rate fast path / native loop', '>= 0.5', r.eventRate?.ratioToNative, (v) => v >= 0.5);
  add('event rate operators / native loop', '>= 0.5', r.eventRate?.operatorsRatioToNative, (v) => v >= 0.5);
  add('latency event p50 / native event p50', '<= 1.5', r.latency?.p50RatioToNative, (v) => v <= 1.5);
  add('latency event p99 / p50', '<= 3', r.latency?.p99OverP50, (v) => v <= 3);
  add('latency spin p50 / event p50', '<= 0.5', r.latency?.spinP50OverEventP50, (v) => v <= 0.5);
  add('idle CPU (% of a core)', '< 1', r.idleCpuPercent, (v) => v < 1);
  add('RSS growth over 10M WCs (MB)', '< 5', r.rssGrowthMB, (v) => v < 5);
  add('allocations per WC (batch path)', '~0 (< 0.05)', r.allocsPerWc, (v) => v < 0.05);
  return t;
}

function fmt(v: number, digits: number): string {
  return Number.isFinite(v) ? v.toFixed(digits) : String(v);
}

function fmtRate(v: number): string {
  if (!Number.isFinite(v)) return String(v);
  if (v >= 1e6) return `${(v / 1e6).toFixed(2)}M`;
  if (v >= 1e3) return `${(v / 1e3).toFixed(1)}k`;
  return v.toFixed(0);
}

/** A table with a header row; numbers right-aligned. */
function table(title: string, header: string[], rows: string[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = `+${widths.map((w) => '-'.repeat(w + 2)).join('+')}+`;
  const fmtRow = (r: string[]) => `| ${r.map((c, i) => (i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join(' | ')} |`;
  return [title, line, fmtRow(header), line, ...rows.map(fmtRow), line].join('\n');
}

function formatResults(r: Results): string {
  const out: string[] = [];
  const m = r.meta;
  out.push(`rx-verbs bench (${m.quick ? 'quick' : 'full'}) on ${m.device}, node ${m.node}, ${m.cpus} CPUs, load ${(m.loadAverageBefore as number[]).map((x) => x.toFixed(1)).join(' ')}`);
  if (r.throughput) {
    const rows = r.throughput.configs.map((c) => [
      `${c.depth}`,
      c.rate ? fmtRate(c.rate) : 'max',
      ...(['native', 'fast', 'operators', 'naive'] as const).map((v) => `${fmtRate(c.runs[v].rate)} (${fmt(c.runs[v].wcsPerEvent ?? 0, 0)}/ev, ${fmt(c.runs[v].consumerNsPerWc ?? 0, 0)} ns)`),
      fmt(c.fastToNative, 2),
      fmt(c.operatorsToNative, 2),
      fmt(c.fastToNaive, 1),
      fmt(c.operatorsToNaive, 1),
      `${fmt(c.naiveCpuOverFast, 1)} / ${fmt(c.naiveCpuOverOperators, 1)}`,
    ]);
    out.push(
      table(
        '\n1. Throughput, WC/s (WCs per event, consumer-thread CPU ns per WC); the subscriber reads wr_id + status of every WC',
        ['depth', 'offered', 'native drain', 'fast path', 'operators', 'naive', 'fast/nat', 'ops/nat', 'fast/naive', 'ops/naive', 'naive CPU/WC over fast/ops'],
        rows,
      ),
    );
  }
  if (r.eventRate) {
    const e = r.eventRate;
    out.push(
      table('\n2. Event rate, one WC per event', ['variant', 'events/s', 'WC/event', 'ratio to native'], Object.entries(e.runs).map(([k, v]) => [k, fmtRate(v.rate), fmt(v.wcsPerEvent ?? 0, 2), fmt(v.rate / e.runs.native.rate, 2)])),
    );
  }
  if (r.latency) {
    const l = r.latency;
    const base: Record<string, string> = { 'rxv-fast-event': 'native-event', 'rxv-operators-event': 'native-event', 'rxv-spin': 'native-busy-poll' };
    out.push(
      table(
        `\n3. Latency, RC ping-pong round trip in us (spin: take({ spinUs: ${l.spinUs} }))`,
        ['variant', 'p50', 'p99', 'p99.9', 'mean', 'p99/p50', 'p50/native'],
        Object.values(l.variants).map((s) => [s.variant, fmt(s.p50, 1), fmt(s.p99, 1), fmt(s.p999, 1), fmt(s.mean, 1), fmt(s.p99 / s.p50, 2), base[s.variant] ? fmt(s.p50 / l.variants[base[s.variant]].p50, 2) : '']),
      ),
    );
  }
  if (r.idle) out.push(`\n4. Idle: ${fmt(r.idle.cpuPercent, 3)}% of a core over ${r.idle.seconds} s (${r.idle.channels} channels, ${r.idle.cqs} CQs armed and subscribed, ${r.idle.wakeups} wakeups)`);
  if (r.memory) {
    const mm = r.memory;
    const a = mm.allocations as unknown as Record<string, number>;
    out.push(
      table('\n5. Memory', ['measure', 'value'], [
        ['WCs through cq.completions$', fmtRate(mm.wcs)],
        ['RSS before / after (MB)', `${fmt(mm.before.rss / MB, 1)} / ${fmt(mm.after.rss / MB, 1)}`],
        ['heap used before / after (MB)', `${fmt(mm.before.heapUsed / MB, 2)} / ${fmt(mm.after.heapUsed / MB, 2)}`],
        ['RSS growth (MB)', fmt(mm.rssGrowthMB, 2)],
        ['RSS growth scaled linearly to 10M WCs (MB)', fmt(mm.rssGrowthMBPer10M, 2)],
        ['RSS steady-state slope over the 2nd half, per 10M WCs (MB)', fmt(mm.rssSteadySlopeMBPer10M, 2)],
        ['heap growth (MB)', fmt(mm.heapGrowthMB, 3)],
        ['JS heap bytes per batch (fit)', fmt(a.heapBytesPerBatch, 0)],
        ['JS heap bytes per WC (fit)', fmt(a.heapBytesPerWc, 2)],
        ['off-heap bytes per batch / per WC (fit)', `${fmt(a.offHeapBytesPerBatch, 0)} / ${fmt(a.offHeapBytesPerWc, 1)}`],
        ['allocations per WC (<= heap B per WC / 16)', fmt(a.allocsPerWc, 3)],
      ]),
    );
  }
  if (r.operators) {
    out.push(
      table(
        `\n6. Operators, ns per WC (synthetic CqLike, ${r.operators.wcsPerBatch} WC/batch)`,
        ['operator', 'ns/WC', 'RxJS baseline', 'ns/WC', 'ratio'],
        r.operators.rows.map((o) => [o.operator, fmt(o.nsPerWc, 2), o.baseline, fmt(o.baselineNsPerWc, 2), fmt(o.ratio, 2)]),
      ),
    );
  }
  if (r.targets.length) {
    out.push(table('\nTargets', ['target', 'goal', 'measured', 'met'], r.targets.map((t) => [t.name, t.target, fmt(t.value, 3), t.met ? 'yes' : 'NO'])));
  }
  out.push(`\n${fmt(m.seconds as number, 1)} s`);
  return out.join('\n');
}
