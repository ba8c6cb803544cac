/** Suites 1 and 2: throughput at several CQ depths and producer rates, and the one-WC-per-event rate. */
import { fmtRate } from './format';
import { Load, Run, RunConfig, Variant, bestOf, native, scaled } from './rig';

export interface ThroughputConfig {
  depth: number;
  rate: number;
  runs: Record<string, Run>;
  fastToNative: number;
  operatorsToNative: number;
  fastToNaive: number;
  operatorsToNaive: number;
  /** Consumer-thread CPU per WC: fast path / native loop (what the pipeline costs over the native loop on the same thread). */
  fastCpuOverNative: number;
  /**
   * Consumer-thread CPU per WC: the loop consumer / native loop, the floor of
   * any consumer in a Node.js process (the event loop's cost, no JS). Absent
   * from results saved before it was measured.
   */
  loopCpuOverNative?: number;
  /** Consumer-thread CPU per WC: fast path / the loop consumer (what the library adds over that floor). */
  fastCpuOverLoop?: number;
  /**
   * Consumer-thread CPU per WC: the loop consumer handing every poll's WCs
   * to JS (loop-js) / native loop: the floor of any library that delivers
   * completions to JS in batches. Absent from results saved before it was
   * measured, as are the two below.
   */
  loopJsCpuOverNative?: number;
  /** Consumer-thread CPU per WC: naive / loop-js (the most any JS library could be cheaper than naive). */
  naiveCpuOverLoopJs?: number;
  /** Consumer-thread CPU per WC: fast path / loop-js (the library's own work over that floor). */
  fastCpuOverLoopJs?: number;
  /** Consumer-thread CPU per WC: naive / fast path (how much cheaper the pipeline is, independent of the shared producer and device threads). */
  naiveCpuOverFast: number;
  naiveCpuOverOperators: number;
}

export async function throughput(cfg: RunConfig) {
  const q = cfg.quick;
  const depths = cfg.depths ?? (q ? [256, 4096] : [64, 256, 1024, 4096]);
  const paced = cfg.depths ? [] : q ? [{ depth: 1024, rate: 200_000 }] : [{ depth: 1024, rate: 100_000 }, { depth: 1024, rate: 400_000 }];
  const total = scaled(cfg, q ? 150_000 : 1_000_000, 1000);
  const pacedSeconds = (q ? 0.4 : 2) * (cfg.scale ?? 1);
  // Five rounds: the CPU per WC is their median (bestOf).
  const rounds = q ? 2 : 5;
  // What a page fault and a system call cost here: the price of the faults
  // each variant's row shows, and of the calls every wakeup makes.
  const machine = native().machineCosts();
  cfg.log(`throughput: a first-touch page fault costs ${(machine.pageFaultNs / 1000).toFixed(1)} us here, an empty system call ${(machine.syscallNs / 1000).toFixed(2)} us`);
  const configs: ThroughputConfig[] = [];
  const all = [...depths.map((depth) => ({ depth, rate: 0 })), ...paced];
  for (const { depth, rate } of all) {
    cfg.log(`throughput: depth ${depth}, ${rate ? `${fmtRate(rate)} WC/s offered` : 'producer unlimited'}`);
    const n = rate ? Math.max(1000, Math.round(rate * pacedSeconds)) : total;
    const load = (v: Variant): Load => ({ depth, window: depth, burst: Math.min(32, depth), rate, total: v === 'naive' && !rate ? Math.round(n / 3) : n });
    const runs = await bestOf(cfg, `d${depth}${rate ? `@${fmtRate(rate)}` : ''}`, ['native', 'loop', 'loop-js', 'fast', 'operators', 'naive'], load, rate ? 1 : rounds);
    configs.push({
      depth,
      rate,
      runs,
      fastToNative: runs.fast.rate / runs.native.rate,
      operatorsToNative: runs.operators.rate / runs.native.rate,
      fastToNaive: runs.fast.rate / runs.naive.rate,
      operatorsToNaive: runs.operators.rate / runs.naive.rate,
      fastCpuOverNative: (runs.fast.consumerNsPerWc ?? NaN) / (runs.native.consumerNsPerWc ?? NaN),
      loopCpuOverNative: (runs.loop.consumerNsPerWc ?? NaN) / (runs.native.consumerNsPerWc ?? NaN),
      fastCpuOverLoop: (runs.fast.consumerNsPerWc ?? NaN) / (runs.loop.consumerNsPerWc ?? NaN),
      loopJsCpuOverNative: (runs['loop-js'].consumerNsPerWc ?? NaN) / (runs.native.consumerNsPerWc ?? NaN),
      naiveCpuOverLoopJs: (runs.naive.consumerNsPerWc ?? NaN) / (runs['loop-js'].consumerNsPerWc ?? NaN),
      fastCpuOverLoopJs: (runs.fast.consumerNsPerWc ?? NaN) / (runs['loop-js'].consumerNsPerWc ?? NaN),
      naiveCpuOverFast: (runs.naive.consumerNsPerWc ?? NaN) / (runs.fast.consumerNsPerWc ?? NaN),
      naiveCpuOverOperators: (runs.naive.consumerNsPerWc ?? NaN) / (runs.operators.consumerNsPerWc ?? NaN),
    });
  }
  const unpaced = configs.filter((c) => c.rate === 0);
  const worstCpu = unpaced.reduce((w, c) => (c.fastCpuOverNative > w.fastCpuOverNative ? c : w));
  const worstNaive = unpaced.reduce((w, c) => (c.naiveCpuOverFast < w.naiveCpuOverFast ? c : w));
  return {
    // Headline: the fast path (cq.completions$) at the worst unpaced depth.
    ratioToNative: Math.min(...unpaced.map((c) => c.fastToNative)),
    ratioToNaive: Math.min(...unpaced.map((c) => c.fastToNaive)),
    operatorsRatioToNative: Math.min(...unpaced.map((c) => c.operatorsToNative)),
    operatorsRatioToNaive: Math.min(...unpaced.map((c) => c.operatorsToNaive)),
    consumerCpuFastOverNative: Math.max(...unpaced.map((c) => c.fastCpuOverNative)),
    // The floors at the depth where the fast path is furthest from native.
    consumerCpuLoopOverNativeThere: worstCpu.loopCpuOverNative,
    consumerCpuLoopJsOverNativeThere: worstCpu.loopJsCpuOverNative,
    consumerCpuNaiveOverFast: worstNaive.naiveCpuOverFast,
    // What naive / fast could be at most there: naive over the JS floor.
    consumerCpuNaiveOverLoopJsThere: worstNaive.naiveCpuOverLoopJs,
    consumerCpuNaiveOverOperators: Math.min(...unpaced.map((c) => c.naiveCpuOverOperators)),
    /** The machine's page-fault and system-call costs (ns), measured before the first depth. Absent from results saved before. */
    machine,
    configs,
  };
}


export async function eventRate(cfg: RunConfig) {
  const total = scaled(cfg, cfg.quick ? 4000 : 40_000, 100);
  cfg.log('event rate: one WC in flight (one WC per event)');
  const load = (v: Variant): Load => ({ depth: 64, window: 1, burst: 1, rate: 0, total: v === 'naive' ? total / 2 : total });
  const runs = await bestOf(cfg, 'events', ['native', 'loop', 'loop-js', 'fast', 'operators', 'naive'], load, cfg.quick ? 2 : 3);
  return {
    ratioToNative: runs.fast.rate / runs.native.rate,
    operatorsRatioToNative: runs.operators.rate / runs.native.rate,
    naiveRatioToNative: runs.naive.rate / runs.native.rate,
    eventsPerSecond: Object.fromEntries(Object.entries(runs).map(([k, r]) => [k, r.rate])),
    runs,
  };
}
