/**
 * The bench report page (`npm run bench -- --report`): rendered from a saved
 * quick run (test/fixtures/bench-results.json; the benchmarks never run
 * here) and opened in headless Chromium, which lays the page out and says
 * what it drew.
 */
import { spawnSync } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { goalOf, targetsChart } from '../../bench/suites/charts';
import { logHistogram } from '../../bench/suites/histogram';
import { main } from '../../bench/suites/main';
import { renderPage } from '../../bench/suites/page';
import { fmtRate } from '../../bench/suites/format';
import { formatResults, targets, type Results } from '../../bench/suites/report';

const FIXTURE = path.join(__dirname, '..', 'fixtures', 'bench-results.json');
const fixture = (): Results => JSON.parse(fs.readFileSync(FIXTURE, 'utf8')) as Results;

/** Debian's chromium (CI installs it: .ci/run), or undefined. */
function findChromium(): string | undefined {
  for (const name of ['chromium', 'chromium-browser']) {
    const r = spawnSync('sh', ['-c', `command -v ${name}`], { encoding: 'utf8' });
    if (r.status === 0 && r.stdout.trim()) return r.stdout.trim();
  }
  return undefined;
}

/** What the browser reports about each figure once the page is laid out. */
interface Drawn {
  charts: Record<string, { svg: boolean; width?: number; height?: number; marks?: Record<string, number>; axisTitles?: string[]; texts?: string[] }>;
  /** Attributes whose value points off the page (http:, https: or protocol-relative). */
  externals: string[];
}

// Runs in the page: counts, per figure, the marks Vega drew that have a size
// on screen (an empty mark group draws nothing), and the axis titles laid out.
// Added to a copy of the page only; the page itself has no script.
const PROBE = `
(() => {
  const out = { charts: {}, externals: [] };
  for (const fig of document.querySelectorAll('figure')) {
    const svg = fig.querySelector('svg');
    const entry = { svg: !!svg };
    if (svg) {
      const box = svg.getBoundingClientRect();
      entry.width = box.width;
      entry.height = box.height;
      entry.marks = {};
      for (const g of svg.querySelectorAll('g.role-mark')) {
        const kind = [...g.classList].find((c) => c.startsWith('mark-')).slice(5);
        let drawn = 0;
        for (const el of g.children) {
          const b = el.getBBox();
          if (b.width > 0 || b.height > 0) drawn++;
        }
        entry.marks[kind] = (entry.marks[kind] || 0) + drawn;
      }
      entry.axisTitles = [...svg.querySelectorAll('g.role-axis-title text')].filter((t) => t.getBBox().width > 0).map((t) => t.textContent);
      entry.texts = [...svg.querySelectorAll('g.mark-text.role-mark text')].map((t) => t.textContent);
    }
    out.charts[fig.id] = entry;
  }
  for (const el of document.querySelectorAll('*')) {
    if (el.id === 'rx-probe' || el.id === 'rx-probe-out') continue;
    for (const a of el.attributes) {
      if (!a.name.startsWith('xmlns') && /(^|[\\s(])(https?:)?\\/\\//i.test(a.value)) out.externals.push(el.tagName + ' ' + a.name + '=' + a.value);
    }
  }
  const pre = document.createElement('pre');
  pre.id = 'rx-probe-out';
  pre.textContent = encodeURIComponent(JSON.stringify(out));
  document.body.appendChild(pre);
})();
`;

/** Opens `html` in headless Chromium with the probe added, and returns what it found. */
/**
 * The environment for chromium: ours without the sanitizer run's preload
 * and options (`npm run test:asan` runs this file with libasan preloaded,
 * which chromium is not built for: it hangs).
 */
function browserEnv(): NodeJS.ProcessEnv {
  const env = { ...process.env };
  for (const k of ['LD_PRELOAD', 'ASAN_OPTIONS', 'UBSAN_OPTIONS', 'LSAN_OPTIONS']) delete env[k];
  return env;
}

function drawnInChromium(chromium: string, html: string): Drawn {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rxv-report-'));
  try {
    const file = path.join(dir, 'probed.html');
    fs.writeFileSync(file, html.replace('</body>', `<script id="rx-probe">${PROBE}</script>\n</body>`));
    const r = spawnSync(
      chromium,
      ['--headless', '--disable-gpu', '--no-sandbox', '--no-first-run', '--disable-extensions', `--user-data-dir=${path.join(dir, 'profile')}`, '--window-size=1200,3000', '--dump-dom', `file://${file}`],
      { encoding: 'utf8', timeout: 90_000, maxBuffer: 64 << 20, env: browserEnv() },
    );
    const m = /<pre id="rx-probe-out">([^<]*)<\/pre>/.exec(r.stdout ?? '');
    if (!m) throw new Error(`chromium printed no probe result (status ${r.status}${r.error ? `, ${r.error.message}` : ''})\n${(r.stderr ?? '').slice(-2000)}`);
    return JSON.parse(decodeURIComponent(m[1])) as Drawn;
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

describe('bench report page', () => {
  let page: string;
  beforeAll(async () => {
    page = await renderPage(fixture());
  }, 60_000);

  it('is self-contained: no script, no stylesheet or image to fetch, no external reference', () => {
    expect(page).toMatch(/^<!DOCTYPE html>/);
    expect(page).not.toMatch(/<script/i);
    expect(page).not.toMatch(/<link\b/i);
    expect(page).not.toMatch(/@import|url\(/i);
    expect(page).not.toMatch(/\b(src|href)\s*=\s*["']?\s*(https?:)?\/\//i);
    // Four charts, each an inline SVG.
    for (const id of ['targets', 'latency', 'throughput', 'cpu']) {
      expect(page).toMatch(new RegExp(`<figure id="chart-${id}" class="chart">[\\s\\S]*?<svg[\\s\\S]*?</svg>\\s*</figure>`));
    }
  });

  it('holds the printed tables and the run metadata, from the same results', () => {
    const r = fixture();
    for (const caption of ['1. Throughput, WC/s', '2. Event rate', '3. Latency', '5. Memory', '6. Operators', '7. Stall', '8. Messages of 64 B', '8b. Rendezvous', 'Targets']) {
      expect(page).toMatch(new RegExp(`<caption>${caption.replace(/[.,()]/g, '\\$&')}`));
    }
    expect(page).toContain(`<dt>date</dt><dd>${String(r.meta.date)}</dd>`);
    // A figure as formatResults prints it: the native event p50 of the latency table.
    expect(page).toContain(`<td>native-event</td><td class="num">${r.latency!.variants['native-event'].p50.toFixed(1)}</td>`);
  });

  it('table 1b: each variant\'s page faults per 1,000 WCs and their cost at the fault cost the run measured; none in results saved before faults were counted', () => {
    expect(formatResults(fixture())).not.toMatch(/1b\. Page faults/);
    const r = fixture();
    const t = r.throughput!;
    t.machine = { pageFaultNs: 12_000, syscallNs: 1_100 };
    t.configs[0].runs.fast.faultsPerKWc = 1.5;
    t.configs[0].runs.native.faultsPerKWc = 0;
    const text = formatResults(r);
    expect(text).toMatch(/1b\. Page faults of the whole process per 1,000 WCs .* at 12\.0 us a fault, measured here \(an empty system call: 1\.10 us\)/);
    // Depth 256 unpaced: 1.5 faults per 1,000 WCs at 12 us is 18 ns per WC; a variant without a count shows none.
    const row = text.split('\n').find((l) => /^\| 256 +\| +max \|.*ns\/WC/.test(l));
    expect(row).toBeDefined();
    expect(row!.split('|').map((c) => c.trim())).toEqual(['', '256', 'max', '0.00 (0.0 ns/WC)', '1.50 (18.0 ns/WC)', '']);
  });

  it('table 8: each message variant with its ratios to the raw pipeline and the native pair, rendezvous against Buffer.copy, the steady-state counts; the targets carry their verbs floor', () => {
    const r = fixture();
    const m = r.messages!;
    const text = formatResults(r);
    const cells = (label: string) => {
      const row = text.split('\n').find((l) => l.startsWith(`| ${label} `));
      expect(row).toBeDefined();
      return row!.split('|').map((c) => c.trim()).slice(1, -1);
    };
    const layer = cells('layer (send / messages$)');
    expect(layer[1]).toBe(fmtRate(m.rate.layer.rate));
    expect(layer.slice(6)).toEqual([m.rateToRaw, m.p50ToRaw, m.rateToNative, m.p50ToNative].map((x) => x.toFixed(2)));
    expect(cells('raw verbs (completions$ + posts)').slice(6, 8)).toEqual(['1.00', '1.00']);
    expect(cells('native C++ pair, same wire format').slice(8)).toEqual(['1.00', '1.00']);
    expect(cells('wire format, least JS (floor)').slice(6, 8)).toEqual([m.protocolRateToRaw, m.protocolP50ToRaw].map((x) => x.toFixed(2)));
    // Rendezvous: one row per size, the layer one in flight and pipelined, the raw READ and Buffer.copy.
    for (const x of m.rendezvous) {
      expect(cells(`${x.bytes >> 20} MiB`).slice(2)).toEqual(
        [x.layerBytesPerSecond / 1e9, x.pipelinedBytesPerSecond / 1e9, x.readBytesPerSecond / 1e9, x.copyBytesPerSecond / 1e9, x.ratio, x.pipelinedRatio, x.readRatio].map((v) => v.toFixed(2)),
      );
    }
    expect(text).toContain(`8c. Steady state, both sides after their warm-up, over ${fmtRate(m.steady.messages)} messages: ${m.steady.registrations} registrations`);
    // The targets: the two small-message ones with their floor, judged on the figures above.
    const rate = cells('messages 64 B rate, layer / raw verbs').slice(1);
    expect(rate).toEqual(['>= 0.8', m.rateToRaw.toFixed(3), m.rateToRaw >= 0.8 ? 'yes' : 'NO', '', '', '', m.protocolRateToRaw.toFixed(3)]);
    expect(cells('messages 64 B round trip p50, layer / raw verbs')[7]).toBe(m.protocolP50ToRaw.toFixed(3));
    // Rendezvous: judged at the worst size, with the raw READ's ratio there as its floor.
    const worst = m.rendezvous.reduce((w, x) => (x.ratio < w.ratio ? x : w));
    const big = cells('rendezvous 1-16 MiB / Buffer.copy, worst size');
    expect([big[2], big[7]]).toEqual([worst.ratio.toFixed(3), worst.readRatio.toFixed(3)]);
    expect(cells('registrations in steady state (messages)').slice(1, 4)).toEqual(['none (< 1)', m.steady.registrations.toFixed(3), m.steady.registrations === 0 ? 'yes' : 'NO']);
    // The same judgement from the results alone (what --report-from relies on).
    expect(targets(r).filter((t) => t.verbsFloor !== undefined).map((t) => t.name)).toEqual([
      'messages 64 B rate, layer / raw verbs',
      'messages 64 B round trip p50, layer / raw verbs',
      'rendezvous 1-16 MiB / Buffer.copy, worst size',
    ]);
  });

  it('judges throughput against naive by CPU per WC, with the JS floor beside it: a wall-clock ratio judges nothing', () => {
    const r = fixture();
    const t = r.throughput!;
    // Wall clock says 50x (the shared producer had a good day); CPU per WC says 3x.
    Object.assign(t, { ratioToNaive: 50, operatorsRatioToNaive: 50, consumerCpuNaiveOverFast: 3, consumerCpuNaiveOverOperators: 2.5, consumerCpuNaiveOverLoopJsThere: 8.5 });
    for (const c of t.configs) c.naiveCpuOverLoopJs = 8;
    const judged = targets(r);
    expect(judged.map((x) => x.name)).not.toContain('throughput fast path / naive');
    expect(judged.find((x) => x.name === 'throughput fast path / naive, by CPU per WC')).toEqual({
      name: 'throughput fast path / naive, by CPU per WC',
      target: '>= 10',
      value: 3,
      met: false,
      jsFloor: 8.5,
    });
    expect(judged.find((x) => x.name === 'throughput operators / naive, by CPU per WC')).toMatchObject({ value: 2.5, met: false, jsFloor: 8 });
    // One target per measure: the CPU ratio is not judged twice under two names.
    expect(judged.filter((x) => x.value === 3)).toHaveLength(1);
  });

  it('the page shows the floors beside each target they bound: CPU per WC <= 1.5x native with the JS floor (loop-js) and the Node-loop floor', () => {
    const r = fixture();
    Object.assign(r.throughput!, { consumerCpuFastOverNative: 2.2, consumerCpuLoopOverNativeThere: 1.62, consumerCpuLoopJsOverNativeThere: 1.85 });
    r.targets = targets(r);
    const cpu = r.targets.find((x) => x.name === 'consumer CPU per WC fast path / native loop');
    expect(cpu).toMatchObject({ value: 2.2, met: false, floor: 1.62, jsFloor: 1.85 });
    const chart = targetsChart(r);
    if (!('spec' in chart)) throw new Error('no targets chart');
    const rows = (chart.spec as { vconcat: { data: { values: { name: string; label: string }[] }; layer: { mark: { type: string }; data?: { values: unknown[] } }[] }[] }).vconcat;
    const row = rows.find((x) => x.data.values[0].name === cpu!.name)!;
    expect(row.data.values[0].label).toBe('2.200 (goal <= 1.5): not met; Node-loop floor 1.620; JS floor 1.850');
    expect(row.layer.find((l) => l.mark.type === 'point')?.data?.values).toEqual([
      { floor: 'Node-loop floor', value: 1.62 },
      { floor: 'JS floor', value: 1.85 },
    ]);
    // A target without a floor draws none.
    const idle = rows.find((x) => x.data.values[0].name === 'idle CPU (% of a core)')!;
    expect(idle.layer.some((l) => l.mark.type === 'point')).toBe(false);
  });

  it('--report-from judges saved results by the rules of today: an old wall-clock judgement is not drawn', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rxv-report-'));
    try {
      const old = fixture();
      old.targets = [{ name: 'throughput fast path / naive', target: '>= 10', value: 1.38, met: false }];
      const saved = path.join(dir, 'old.json');
      fs.writeFileSync(saved, JSON.stringify(old));
      const out = path.join(dir, 'page.html');
      expect(await main(['--report-from', saved, '--report', out])).toBe(0);
      const html = fs.readFileSync(out, 'utf8');
      expect(html).not.toMatch(/throughput fast path \/ naive</);
      expect(html).toContain('throughput fast path / naive, by CPU per WC');
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);

  it('renders in headless Chromium: every chart has drawn marks and its axis titles', () => {
    const chromium = findChromium();
    if (!chromium) {
      throw new Error(`chromium is not installed: this test opens the page in Debian's headless chromium (apt-get install -y chromium; .ci/run installs it)${process.env.CI ? '' : ' - install it to run this test'}`);
    }
    const r = fixture();
    const drawn = drawnInChromium(chromium, page);
    expect(drawn.externals).toEqual([]);
    for (const id of ['targets', 'latency', 'throughput', 'cpu']) {
      const c = drawn.charts[`chart-${id}`];
      expect(c?.svg).toBe(true);
      expect(c.width).toBeGreaterThan(100);
      expect(c.height).toBeGreaterThan(100);
    }

    // Latency: one histogram per variant, with a p50 and a p99 rule each.
    const variants = Object.keys(r.latency!.variants);
    const lat = drawn.charts['chart-latency'];
    expect(lat.marks!.rect).toBeGreaterThanOrEqual(variants.length);
    expect(lat.marks!.rule).toBe(2 * variants.length);
    expect(lat.axisTitles).toEqual(expect.arrayContaining(['round trip (us, log scale)', '% of trips']));

    // Throughput and CPU per WC: one line per variant, one point per unpaced depth and variant.
    const unpaced = r.throughput!.configs.filter((c) => c.rate === 0);
    const runVariants = Object.keys(unpaced[0].runs);
    for (const [id, yTitle] of [
      ['throughput', 'completions per second (best round)'],
      ['cpu', 'consumer-thread CPU per WC (ns, log scale)'],
    ]) {
      const c = drawn.charts[`chart-${id}`];
      expect(c.marks!.line).toBe(runVariants.length);
      expect(c.marks!.symbol).toBe(unpaced.length * runVariants.length);
      expect(c.axisTitles).toEqual(expect.arrayContaining(['CQ depth (log scale)', yTitle]));
    }

    // Targets: a bar for each measured one, a goal rule for each, and the unmeasured ones say so (no bar, not 0).
    const t = drawn.charts['chart-targets'];
    const measured = r.targets.filter((x) => x.value !== undefined);
    const unmeasured = r.targets.filter((x) => x.value === undefined);
    expect(unmeasured.length).toBeGreaterThan(0);
    expect(t.marks!.rect).toBe(measured.length);
    expect(t.marks!.rule).toBe(r.targets.filter((x) => goalOf(x.target) !== undefined).length);
    // Each floor a target carries is drawn beside it, and named in its label.
    const floors = r.targets.flatMap((x) => [x.floor, x.jsFloor, x.postsFloor, x.verbsFloor].filter((f) => f !== undefined));
    expect(floors.length).toBeGreaterThan(0);
    expect(t.marks!.symbol).toBe(floors.length);
    expect(t.texts!.filter((x) => x.includes('verbs floor'))).toHaveLength(r.targets.filter((x) => x.verbsFloor !== undefined).length);
    expect(t.axisTitles).toEqual(r.targets.map((x) => x.name));
    expect(t.texts!.filter((x) => x.startsWith('not measured'))).toHaveLength(unmeasured.length);
  }, 120_000);

  it('says why a chart is missing when the results lack its figures (an older file, a partial run)', async () => {
    const r = fixture();
    for (const v of Object.values(r.latency!.variants)) delete v.histogram;
    delete r.throughput;
    const html = await renderPage(r);
    expect(html).toMatch(/<figure id="chart-latency" class="missing-chart">[\s\S]*?Not drawn: these results keep no latency distribution/);
    expect(html).toMatch(/<figure id="chart-throughput" class="missing-chart">[\s\S]*?Not drawn: the throughput suite did not run/);
    expect(html).toMatch(/<figure id="chart-targets" class="chart">/);
  });

  it('--report-from writes the page from saved results; a file that is missing or holds none is refused in one line, exit status 2', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rxv-report-'));
    const stderr = jest.spyOn(process.stderr, 'write').mockImplementation(() => true);
    try {
      const out = path.join(dir, 'sub', 'page.html');
      expect(await main(['--report-from', FIXTURE, '--report', out])).toBe(0);
      expect(fs.readFileSync(out, 'utf8')).toBe(page);
      const bad = path.join(dir, 'bad.json');
      fs.writeFileSync(bad, '{"hello": 1}');
      stderr.mockClear();
      expect(await main(['--report-from', bad, '--report', out])).toBe(2);
      expect(String(stderr.mock.calls[0]?.[0])).toMatch(/^bench: .*bad\.json does not hold bench results/);
      stderr.mockClear();
      expect(await main(['--report-from', path.join(dir, 'missing.json')])).toBe(2);
      expect(String(stderr.mock.calls[0]?.[0])).toMatch(/^bench: cannot read results from .*missing\.json: ENOENT/);
    } finally {
      stderr.mockRestore();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);

  it('--depths takes CQ depths only: anything else is refused in one line, exit status 2, before anything runs', async () => {
    const stderr = jest.spyOn(process.stderr, 'write').mockImplementation(() => true);
    try {
      for (const bad of ['0', '64,x', '64,,256', '1.5', '70000']) {
        stderr.mockClear();
        expect(await main(['--only', 'throughput', '--depths', bad])).toBe(2);
        expect(stderr.mock.calls).toHaveLength(1);
        expect(String(stderr.mock.calls[0]?.[0])).toMatch(/^bench: --depths must be CQ depths \(integers in \[1, 65536\]\) separated by commas, got /);
      }
    } finally {
      stderr.mockRestore();
    }
  });
});

describe('bench helpers behind the page', () => {
  it('logHistogram: contiguous log-spaced buckets from the smallest sample to the largest, every sample counted once', () => {
    const us = [12, 12.5, 40, 41, 1000, 0];
    const h = logHistogram(us);
    expect(h.reduce((n, b) => n + b.count, 0)).toBe(us.length);
    for (let i = 1; i < h.length; i++) expect(h[i].lowUs).toBe(h[i - 1].highUs);
    expect(h[0].lowUs).toBeLessThanOrEqual(12);
    expect(h[h.length - 1].highUs).toBeGreaterThan(1000);
    // The zero sample counts in the lowest bucket, with the two at 12 us.
    expect(h[0].count).toBe(3);
    expect(logHistogram([])).toEqual([]);
  });

  it('goalOf reads the goal from the target text, and nothing from a text without one', () => {
    expect(goalOf('>= 0.5')).toBe(0.5);
    expect(goalOf('<= 1.5')).toBe(1.5);
    expect(goalOf('~0 (< 0.05)')).toBe(0.05);
    expect(goalOf('< 10')).toBe(10);
    expect(goalOf('as low as possible')).toBeUndefined();
  });
});
