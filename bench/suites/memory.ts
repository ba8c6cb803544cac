/** Suite 5: RSS and heap over millions of completions, and allocations per completion on the batch path. */
import { PerformanceObserver } from 'perf_hooks';
import { fmt, fmtRate } from './format';
import { RunConfig, gc, immediate, runJs } from './rig';

export const MB = 1024 * 1024;

/** Counts GCs (entries arrive asynchronously: read after yielding to the loop). */
export class GcCounter {
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
export async function allocations(cfg: RunConfig) {
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
export function leastSquares2(x: number[][], y: number[]): [number, number] {
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

export async function memory(cfg: RunConfig) {
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
  // Steady state: the RSS change over the second half of the run (after the
  // heap and allocator reached their working size), as measured: never
  // scaled to a count of WCs that did not run.
  const late = checkpoints.filter((c) => c.wcs >= run.wcs / 2);
  const lateRssMB = late.length >= 2 ? late[late.length - 1].rssMB - late[0].rssMB : NaN;
  const lateWcs = late.length >= 2 ? late[late.length - 1].wcs - late[0].wcs : 0;
  cfg.log('allocations per WC (fast path, GC-free segments):');
  const alloc = await allocations(cfg);
  return {
    wcs: run.wcs,
    before,
    after,
    rssGrowthMB: rssGrowth,
    heapGrowthMB: heapGrowth,
    /** RSS change (MB) over the second half of the run, and over how many WCs it was measured. */
    rssSecondHalfMB: lateRssMB,
    secondHalfWcs: lateWcs,
    checkpoints,
    allocations: alloc,
  };
}
