/**
 * The report page's charts as Vega-Lite specs, built from a Results object:
 * each chart draws only what the run measured (a missing figure is left out
 * or named "not measured", never drawn as 0).
 */
import type { TopLevelSpec } from 'vega-lite';
import { fmt } from './format';
import { BUCKETS_PER_DECADE } from './histogram';
import type { Results } from './report';

/** One chart of the page: its spec, and what the page says about it. */
export interface Chart {
  /** Stable id: the page's figure is `chart-<id>` (the test looks for it). */
  id: string;
  title: string;
  /** What is drawn and how it was measured, one sentence or two. */
  caption: string;
  spec: TopLevelSpec;
}

/** Why a chart is missing from a page: the run did not produce its figures. */
export interface MissingChart {
  id: string;
  title: string;
  why: string;
}

const WIDTH = 620;
/** The targets chart's plot width; its labels take the rest of WIDTH. */
const BAR_WIDTH = 340;

// A fixed colour per variant, so that one variant looks the same in every
// chart of the page and of every page.
const LATENCY_VARIANTS = ['native-event', 'rxv-fast-event', 'rxv-operators-event', 'native-busy-poll', 'rxv-spin', 'native-spin', 'native-event-loop', 'native-event-loop-js', 'native-event-loop-js-calls'];
const THROUGHPUT_VARIANTS = ['native', 'fast', 'operators', 'naive', 'loop', 'loop-js'];
const PALETTE = ['#4c78a8', '#f58518', '#54a24b', '#b279a2', '#e45756', '#72b7b2', '#9d755d', '#bab0ac'];
const variantColor = (known: string[], seen: string[]) => {
  const domain = [...known.filter((v) => seen.includes(v)), ...seen.filter((v) => !known.includes(v))];
  return { domain, range: domain.map((v) => PALETTE[(known.includes(v) ? known.indexOf(v) : known.length + seen.indexOf(v)) % PALETTE.length]) };
};

/** Round-trip latency per variant: a log-bucket histogram, one row per variant, with p50 and p99 marked. */
export function latencyChart(r: Results): Chart | MissingChart {
  const id = 'latency';
  const title = 'Latency distribution per variant';
  const l = r.latency;
  if (!l) return { id, title, why: 'the latency suite did not run' };
  const variants = Object.values(l.variants).filter((s) => s.histogram && s.histogram.length > 0);
  if (variants.length === 0) return { id, title, why: 'these results keep no latency distribution (saved before histograms were recorded)' };
  // One row per variant, stacked on the same x domain (set here, so every
  // row's scale is the same whatever the layout does); the last row carries
  // the x axis for all.
  const buckets = variants.flatMap((s) => (s.histogram ?? []).filter((b) => b.lowUs > 0));
  const xDomain = [Math.min(...buckets.map((b) => b.lowUs)), Math.max(...buckets.map((b) => b.highUs))];
  const yMax = Math.max(...variants.flatMap((s) => (s.histogram ?? []).map((b) => (b.count / s.samples) * 100)));
  const names = variants.map((s) => s.variant);
  const color = variantColor(LATENCY_VARIANTS, names);
  const row = (s: (typeof variants)[number], last: boolean) => {
    const x = { scale: { type: 'log' as const, domain: xDomain, nice: false }, axis: last ? { title: 'round trip (us, log scale)', grid: true } : { title: null, labels: false, ticks: false, grid: true } };
    return {
      title: { text: `${s.variant}: p50 ${fmt(s.p50, 1)} us, p99 ${fmt(s.p99, 1)} us`, anchor: 'start' as const, fontSize: 12, fontWeight: 'normal' as const, offset: 4 },
      width: WIDTH,
      height: 70,
      layer: [
        {
          data: { values: (s.histogram ?? []).filter((b) => b.lowUs > 0).map((b) => ({ variant: s.variant, lowUs: b.lowUs, highUs: b.highUs, share: (b.count / s.samples) * 100 })) },
          mark: { type: 'rect' as const },
          encoding: {
            x: { field: 'lowUs', type: 'quantitative' as const, ...x },
            x2: { field: 'highUs' },
            y: { field: 'share', type: 'quantitative' as const, scale: { type: 'sqrt' as const, domain: [0, yMax] }, axis: { title: '% of trips', tickCount: 3 } },
            color: { field: 'variant', type: 'nominal' as const, scale: color, legend: null },
          },
        },
        {
          data: { values: [{ kind: 'p50', us: s.p50 }, { kind: 'p99', us: s.p99 }] },
          mark: { type: 'rule' as const, color: '#222' },
          encoding: {
            x: { field: 'us', type: 'quantitative' as const, ...x },
            strokeDash: { field: 'kind', type: 'nominal' as const, scale: { domain: ['p50', 'p99'], range: [[1, 0], [4, 3]] }, legend: { title: 'percentile', orient: 'top' as const } },
          },
        },
      ],
    };
  };
  return {
    id,
    title,
    caption:
      `RC ping-pong round trips against a native echo peer, ${variants[0].samples} per variant, merged from interleaved chunks; ` +
      `buckets ${fmt(100 * (10 ** (1 / BUCKETS_PER_DECADE) - 1), 0)}% wide. Each row is one variant's share of round trips per bucket, on a square-root scale so that the tail shows. ` +
      `Solid line: p50; dashed: p99. Spin: take({ spinUs: ${l.spinUs} }).`,
    spec: {
      vconcat: variants.map((s, i) => row(s, i === variants.length - 1)),
      spacing: 10,
      resolve: { legend: { strokeDash: 'shared' } },
    },
  };
}

const unpaced = (r: Results) => (r.throughput?.configs ?? []).filter((c) => c.rate === 0);

/** Depth-by-variant points of one measure of the unpaced throughput runs; points the run did not measure are left out. */
function perDepth(r: Results, measure: (run: { rate: number; consumerNsPerWc?: number }) => number | undefined) {
  const points: { depth: number; variant: string; value: number }[] = [];
  for (const c of unpaced(r)) {
    for (const [variant, run] of Object.entries(c.runs)) {
      const value = measure(run);
      if (value !== undefined && Number.isFinite(value) && value > 0) points.push({ depth: c.depth, variant, value });
    }
  }
  return points;
}

function depthChart(r: Results, id: string, title: string, caption: string, yTitle: string, yLog: boolean, measure: Parameters<typeof perDepth>[1]): Chart | MissingChart {
  if (!r.throughput) return { id, title, why: 'the throughput suite did not run' };
  const points = perDepth(r, measure);
  if (points.length === 0) return { id, title, why: 'the run measured no unpaced throughput configuration' };
  const depths = [...new Set(points.map((p) => p.depth))].sort((a, b) => a - b);
  const variants = [...new Set(points.map((p) => p.variant))];
  return {
    id,
    title,
    caption,
    spec: {
      width: WIDTH,
      height: 260,
      data: { values: points },
      mark: { type: 'line', point: { size: 60, filled: true } },
      encoding: {
        x: { field: 'depth', type: 'quantitative', scale: { type: 'log', base: 2, domain: [depths[0], depths[depths.length - 1]], nice: false }, axis: { title: 'CQ depth (log scale)', values: depths, format: 'd' } },
        y: { field: 'value', type: 'quantitative', scale: yLog ? { type: 'log' } : { zero: true }, axis: { title: yTitle, format: '~s' } },
        color: { field: 'variant', type: 'nominal', scale: variantColor(THROUGHPUT_VARIANTS, variants), legend: { title: 'variant', orient: 'right' } },
      },
    },
  };
}

/** Wall-clock throughput of each variant against CQ depth (producer unlimited, best round). */
export function throughputChart(r: Results): Chart | MissingChart {
  const caption = 'WC/s of each variant with the producer unlimited, the best of interleaved rounds; native is the C++ event-mode drain loop, loop the same drain woken by Node\'s event loop with no JS (the floor of a Node.js process), loop-js that drain handing every poll\'s WCs to JS in one call (the floor of a library that delivers completions to JS), naive the one-callback-per-WC binding.';
  return depthChart(r, 'throughput', 'Throughput against CQ depth', caption, 'completions per second (best round)', false, (run) => run.rate);
}

/** CPU the consumer's thread spent per WC, against CQ depth. */
export function cpuChart(r: Results): Chart | MissingChart {
  const caption = "CPU time of the consumer's thread per completion (the JS thread; the drain loop's thread for native), the median of the same rounds as the throughput chart.";
  return depthChart(r, 'cpu', 'JS-thread CPU per WC against CQ depth', caption, 'consumer-thread CPU per WC (ns, log scale)', true, (run) => run.consumerNsPerWc);
}

/** The goal a target's text states (`>= 0.5`, `< 10`, `~0 (< 0.05)`), or undefined where it states none. */
export function goalOf(target: string): number | undefined {
  const m = /(<=|>=|<|>)\s*(-?\d+(?:\.\d+)?)/.exec(target);
  return m ? Number(m[2]) : undefined;
}

/** A target's floors (Results['targets']), as the chart names them. */
const FLOORS = [
  ['floor', 'Node-loop floor'],
  ['jsFloor', 'JS floor'],
  ['postsFloor', 'JS floor with 2 posts'],
  ['verbsFloor', 'verbs floor'],
] as const;

/** Targets as one bar each (the measured value) with the goal drawn as a rule and the floors as ticks; unmeasured targets say so. */
export function targetsChart(r: Results): Chart | MissingChart {
  const id = 'targets';
  const title = 'Targets: measured against the goal';
  if (r.targets.length === 0) return { id, title, why: 'the run judged no target' };
  const status = { domain: ['met', 'not met', 'not measured'], range: ['#2e7d32', '#c62828', '#9e9e9e'] };
  const rows = r.targets.map((t) => {
    const goal = goalOf(t.target);
    const measured = t.value !== undefined && Number.isFinite(t.value);
    // The floors the run measured for this target: how far any library could get, beside what ours got.
    const floors = FLOORS.flatMap(([key, floor]) => (t[key] !== undefined && Number.isFinite(t[key]) ? [{ floor, value: t[key] as number }] : []));
    const top = Math.max(measured ? Math.abs(t.value as number) : 0, goal !== undefined ? Math.abs(goal) : 0, ...floors.map((f) => Math.abs(f.value))) || 1;
    const why = (t.why ?? '').replace(/^not measured:?\s*/, '');
    const beside = floors.map((f) => `; ${f.floor} ${fmt(f.value, 3)}`).join('');
    const label = measured
      ? `${fmt(t.value as number, 3)} (goal ${t.target}): ${t.met ? 'met' : 'not met'}${beside}`
      : `not measured${why ? `: ${why}` : ''} (goal ${t.target})`;
    return { name: t.name, goal, value: measured ? t.value : null, status: measured ? (t.met ? 'met' : 'not met') : 'not measured', label, top, floors };
  });
  return {
    id,
    title,
    caption:
      'One row per target, each on its own scale from 0: the bar is what the run measured, the dashed rule the goal, a blue diamond each floor the run measured for it ' +
      "(Node-loop floor: the native baseline's work woken by Node's event loop, no JS; JS floor: that work handing the completions to JS; with 2 posts: and two Node-API calls per completion; " +
      'verbs floor: the same work on the raw verbs pipeline), named with its value in the label; a target the run did not measure has no bar.',
    spec: {
      vconcat: rows.map((row) => ({
        width: BAR_WIDTH,
        height: 18,
        data: { values: [row] },
        layer: [
          {
            mark: { type: 'bar', height: 14 },
            encoding: {
              x: { field: 'value', type: 'quantitative', scale: { domain: [0, row.top * 1.15], nice: false }, axis: { title: row.name, tickCount: 4, titleFontWeight: 'normal', titleFontSize: 12 } },
              color: { field: 'status', type: 'nominal', scale: status, legend: { title: 'status', orient: 'top' } },
            },
          },
          ...(row.goal === undefined ? [] : [{ mark: { type: 'rule' as const, strokeDash: [4, 3], strokeWidth: 2, color: '#222' }, encoding: { x: { field: 'goal', type: 'quantitative' as const } } }]),
          ...(row.floors.length === 0
            ? []
            : [{ data: { values: row.floors }, mark: { type: 'point' as const, shape: 'diamond', filled: true, size: 90, color: '#1565c0' }, encoding: { x: { field: 'value', type: 'quantitative' as const } } }]),
          // The label stands in a column right of the plot, clear of the bar and the rule.
          { mark: { type: 'text', align: 'left', baseline: 'middle', fontSize: 11 }, encoding: { x: { value: BAR_WIDTH + 10 }, text: { field: 'label', type: 'nominal' } } },
        ],
      })),
      spacing: 8,
      resolve: { scale: { color: 'shared' }, legend: { color: 'shared' } },
    },
  };
}

/** Every chart of the page, in page order. */
export function charts(r: Results): (Chart | MissingChart)[] {
  return [targetsChart(r), latencyChart(r), throughputChart(r), cpuChart(r)];
}
