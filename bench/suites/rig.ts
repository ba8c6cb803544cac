/** Shared plumbing of the benchmarks: run configuration, CPU sampling, the JS rig over the native producer, and the runners of each variant. */
import { performance } from 'perf_hooks';
import { Subscription } from 'rxjs';
import { ackEvents, batchCompletions, Context, drainCq, openDevice, rearm, WcBatch } from 'rx-verbs';
import { BenchHandle, load } from '../native/addon';
import { fmt, fmtRate } from './format';

export interface RunConfig {
  quick: boolean;
  device: string;
  /** The GID index QPs of the device reach each other by (RoCE, e.g. rxe0 on the loopback); undefined: LID routing (soft, InfiniBand). */
  gidIndex?: number;
  /**
   * Scales the work of the throughput, event-rate and latency suites (WCs,
   * round trips; default 1): rxe0 under QEMU's emulation moves a few
   * thousand WCs a second, where soft0 moves millions.
   */
  scale?: number;
  /** The throughput suite's CQ depths, producer unlimited, and no paced runs (`--depths`); undefined: its defaults. */
  depths?: number[];
  log: (line: string) => void;
}

/** `n` scaled by the run's `scale`, at least `min`. */
export const scaled = (cfg: RunConfig, n: number, min = 1): number => Math.max(min, Math.round(n * (cfg.scale ?? 1)));

/** The `gidIndex` argument of the native baselines, when the device needs one. */
export const gidArg = (cfg: RunConfig): { gidIndex?: number } => (cfg.gidIndex === undefined ? {} : { gidIndex: cfg.gidIndex });

/** The native baselines (bench/native), loaded on first use. */
export const native = () => load();

export const gc = (): void => (globalThis as unknown as { gc: () => void }).gc();
export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
export const immediate = () => new Promise<void>((r) => setImmediate(r));

export interface CpuSample {
  wall: number;
  cpu: NodeJS.CpuUsage;
  thread: number;
  /** The process's minor page faults so far. */
  faults: number;
}
export const threadCpu = (): number => native().threadCpu();
const minorFaults = (): number => process.resourceUsage().minorPageFault;
export const cpuStart = (): CpuSample => ({ wall: performance.now(), cpu: process.cpuUsage(), thread: threadCpu(), faults: minorFaults() });
/**
 * Minor page faults of the whole process since `s`, per 1,000 items. The
 * producer and device threads are the same for every variant, so what
 * differs between variants is the consumer's: a first write to a page the
 * process had not touched (or had given back to the kernel).
 */
export const faultsPerK = (s: CpuSample, items: number): number => ((minorFaults() - s.faults) * 1000) / Math.max(1, items);
/** CPU the calling (JS) thread used since `s`, in ns per item. */
export const threadNsPer = (s: CpuSample, items: number): number => ((threadCpu() - s.thread) * 1e9) / Math.max(1, items);
/** Process CPU (all threads: JS, device, producer) as % of one core since `s`. */
export function cpuPercent(s: CpuSample): number {
  const d = process.cpuUsage(s.cpu);
  return ((d.user + d.system) / 1000 / (performance.now() - s.wall)) * 100;
}

/** One pass of a workload: what was moved and how fast. */
export interface Run {
  variant: string;
  wcs: number;
  seconds: number;
  rate: number;
  wcsPerEvent?: number;
  cpuPercent?: number;
  /**
   * CPU the consumer's thread spent per WC (the JS thread; the drain loop's
   * thread for native). In what bestOf keeps, the median over its rounds.
   */
  consumerNsPerWc?: number;
  /** bestOf: consumerNsPerWc of every round, in the order they ran. */
  roundsNsPerWc?: number[];
  /** Minor page faults of the process per 1,000 WCs (see faultsPerK); in what bestOf keeps, the median round. */
  faultsPerKWc?: number;
  error?: string;
}

/** Producer settings for one run (see bench/native/producer.h). */
export interface Load {
  depth: number;
  total: number;
  window: number;
  burst: number;
  rate: number;
}

export interface ProducerHandle {
  handle: BenchHandle;
  counter: ArrayBuffer;
}

/** A soft device set up for the JS consumers: the CQ under test on a channel, and a native producer posting to it. */
export class JsRig {
  readonly ctx: Context;
  readonly channel;
  readonly cq;
  readonly pd;
  readonly producer: ProducerHandle;
  readonly credits: Uint32Array;

  constructor(cfg: RunConfig, depth: number, maxWr: number) {
    this.ctx = openDevice(cfg.device);
    this.channel = this.ctx.createCompChannel();
    this.cq = this.ctx.createCq({ cqe: depth, channel: this.channel });
    this.pd = this.ctx.allocPd();
    this.producer = native().producerCreate({ context: this.ctx.native, pd: this.pd.native, cq: this.cq.native, maxWr, ...gidArg(cfg) });
    this.credits = new Uint32Array(this.producer.counter);
  }

  start(load: Load): void {
    native().producerStart(this.producer.handle, { total: load.total, window: load.window, burst: load.burst, rate: load.rate });
  }

  stop(): { posted?: number; error?: string } {
    return native().producerStop(this.producer.handle);
  }

  close(): void {
    native().producerClose(this.producer.handle);
    this.ctx.close();
  }
}

export type Consumer = (batch: WcBatch) => void;

/**
 * Subscribes the pipeline under test: `fast` (cq.completions$) or `operators`
 * (channel.events$ + ackEvents, rearm, drainCq, batchCompletions).
 */
export function subscribePipeline(rig: JsRig, kind: 'fast' | 'operators', onBatch: Consumer): Subscription {
  if (kind === 'fast') return rig.cq.completions$.subscribe({ next: onBatch });
  const sub = rig.channel.events$.pipe(ackEvents(), rearm(), drainCq(), batchCompletions()).subscribe({ next: onBatch });
  rig.cq.requestNotify();
  const first = rig.cq.poll(256);
  if (first.length > 0) onBatch(first);
  return sub;
}

/** Moves `load.total` WCs through a JS pipeline; the subscriber reads wr_id and status of every WC. */
export function runJs(cfg: RunConfig, kind: 'fast' | 'operators', load: Load, hooks?: { onBatch?: (got: number) => void }): Promise<Run & { batches: number }> {
  const rig = new JsRig(cfg, load.depth, load.window);
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
      const faultsPerKWc = faultsPerK(cpu, got);
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
        faultsPerKWc,
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
export function runNative(cfg: RunConfig, load: Load): Run {
  const cpu = cpuStart();
  const r = native().drain({ device: cfg.device, ...gidArg(cfg), cqe: load.depth, total: load.total, window: load.window, burst: load.burst, rate: load.rate });
  return {
    variant: 'native',
    wcs: r.wcs,
    seconds: r.seconds,
    rate: r.wcs / r.seconds,
    wcsPerEvent: r.wcs / Math.max(1, r.events),
    cpuPercent: cpuPercent(cpu),
    consumerNsPerWc: (r.consumerCpuSeconds * 1e9) / Math.max(1, r.wcs),
    faultsPerKWc: faultsPerK(cpu, r.wcs),
    error: r.error,
  };
}

/** The naive binding: one MakeCallback and one fresh object per WC. */
export function runNaive(cfg: RunConfig, load: Load): Promise<Run> {
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
      const faultsPerKWc = faultsPerK(cpu, got);
      clearTimeout(timer);
      const s = native().naiveClose(handle);
      resolve({ variant: 'naive', wcs: got, seconds, rate: got / seconds, wcsPerEvent: got / Math.max(1, s.events), cpuPercent: cpuPct, consumerNsPerWc, faultsPerKWc, error: error ?? s.error });
    };
    const callback = (wc: { wrId: bigint; status: number }) => {
      sum = (sum + Number(wc.wrId) + wc.status) | 0;
      if (++got === load.total) setImmediate(finish);
    };
    let handle: BenchHandle;
    try {
      handle = native().naiveCreate({ device: cfg.device, ...gidArg(cfg), cqe: load.depth, callback });
      cpu = cpuStart();
      native().naiveStart(handle, { total: load.total, window: load.window, burst: load.burst, rate: load.rate });
      timer = setTimeout(() => finish(`stalled after ${got} of ${load.total} WCs`), 60_000 + (load.rate ? (load.total / load.rate) * 2000 : 0));
    } catch (err) {
      reject(err);
    }
  });
}

/**
 * The floor of any consumer in a Node.js process: the native drain loop's
 * work, woken by Node's event loop (a uv_poll on the channel fd, as the
 * watcher's) instead of poll(2), calling no JS until the last WC. What it
 * costs over the native loop is the event loop's, before any JavaScript.
 *
 * With `js` (the `loop-js` variant), the floor of any library that hands
 * completions to JS in batches: every poll's WCs go to JS in one call,
 * written into a buffer JS keeps (nothing allocated per call), and JS reads
 * the wr_id and status of each, as runJs's subscriber does. What the fast
 * path costs over it is the library's own work.
 */
export function runLoop(cfg: RunConfig, load: Load, js = false): Promise<Run> {
  const variant = js ? 'loop-js' : 'loop';
  return new Promise((resolve, reject) => {
    let cpu: CpuSample;
    let timer: NodeJS.Timeout | undefined;
    let handle: BenchHandle;
    let done = false;
    let sum = 0;
    let errors = 0;
    let got = 0;
    const wcBuffer = new ArrayBuffer(256 * 12);
    const words = new Uint32Array(wcBuffer, 0, 512);
    const status = new Uint32Array(wcBuffer, 2048, 256);
    const onBatch = (n: number) => {
      for (let i = 0; i < n; i++) {
        sum = (sum + words[2 * i] + words[2 * i + 1]) | 0;
        if (status[i] !== 0) errors++;
      }
      got += n;
    };
    const finish = (error?: string) => {
      if (done) return;
      done = true;
      const seconds = (performance.now() - cpu.wall) / 1000;
      const cpuPct = cpuPercent(cpu);
      const thread = threadNsPer(cpu, 1);
      const faults = faultsPerK(cpu, 1);
      clearTimeout(timer);
      const s = native().loopClose(handle);
      const wcs = s.wcs;
      const failed = js && errors > 0 ? `${errors} failed WCs` : js && got !== wcs ? `JS saw ${got} of ${wcs} WCs` : undefined;
      resolve({ variant, wcs, seconds, rate: wcs / seconds, wcsPerEvent: wcs / Math.max(1, s.events), cpuPercent: cpuPct, consumerNsPerWc: thread / Math.max(1, wcs), faultsPerKWc: faults / Math.max(1, wcs), error: error ?? s.error ?? failed });
    };
    try {
      handle = native().loopCreate({ device: cfg.device, ...gidArg(cfg), cqe: load.depth, callback: () => setImmediate(finish), ...(js ? { onBatch, wcBuffer } : {}) });
      cpu = cpuStart();
      native().loopStart(handle, { total: load.total, window: load.window, burst: load.burst, rate: load.rate });
      timer = setTimeout(() => finish(`stalled before ${load.total} WCs`), 60_000 + (load.rate ? (load.total / load.rate) * 2000 : 0));
    } catch (err) {
      reject(err);
    }
  });
}

export type Variant = 'native' | 'loop' | 'loop-js' | 'fast' | 'operators' | 'naive';

export function runVariant(cfg: RunConfig, v: Variant, load: Load): Promise<Run> {
  if (v === 'native') return Promise.resolve(runNative(cfg, load));
  if (v === 'loop') return runLoop(cfg, load);
  if (v === 'loop-js') return runLoop(cfg, load, true);
  if (v === 'naive') return runNaive(cfg, load);
  return runJs(cfg, v, load);
}

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[s.length >> 1] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

/**
 * Runs every variant `rounds` times, interleaved. Keeps each variant's best
 * (highest rate) round, the machine's interference only ever slowing one,
 * with its consumer CPU per WC (and page faults per WC) replaced by the median over the rounds: the
 * fastest round is not the cheapest per WC (a consumer that keeps up gets
 * fewer WCs per wakeup), and the cheapest would reward luck.
 */
export async function bestOf(cfg: RunConfig, label: string, variants: Variant[], load: (v: Variant) => Load, rounds: number): Promise<Record<string, Run>> {
  const best: Record<string, Run> = {};
  const cpu: Record<string, number[]> = {};
  const faults: Record<string, number[]> = {};
  for (let r = 0; r < rounds; r++) {
    for (const v of variants) {
      const run = await runVariant(cfg, v, load(v));
      if (run.error) cfg.log(`  ${label} ${v}: ${run.error}`);
      if (!best[v] || run.rate > best[v].rate) best[v] = run;
      if (run.consumerNsPerWc !== undefined) (cpu[v] ??= []).push(run.consumerNsPerWc);
      if (run.faultsPerKWc !== undefined) (faults[v] ??= []).push(run.faultsPerKWc);
      cfg.log(`  ${label} round ${r + 1}/${rounds} ${v.padEnd(9)} ${fmtRate(run.rate)} WC/s  ${fmt(run.wcsPerEvent ?? 0, 1)} WC/event  cpu ${fmt(run.cpuPercent ?? 0, 0)}%  consumer ${fmt(run.consumerNsPerWc ?? 0, 0)} ns/WC  ${fmt(run.faultsPerKWc ?? 0, 2)} faults/kWC`);
      await immediate();
    }
  }
  for (const v of Object.keys(best)) {
    if (cpu[v]) best[v] = { ...best[v], consumerNsPerWc: median(cpu[v]), roundsNsPerWc: cpu[v] };
    if (faults[v]) best[v] = { ...best[v], faultsPerKWc: median(faults[v]) };
  }
  return best;
}
