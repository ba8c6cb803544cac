/**
 * The report page (`npm run bench -- --report`): one self-contained HTML file
 * with the charts of bench/suites/charts.ts rendered to SVG in Node by Vega,
 * the tables formatResults prints, and the run's metadata. It has no script
 * and no external reference, so it opens anywhere, offline.
 */
import * as vega from 'vega';
import * as vegaLite from 'vega-lite';
import { Chart, charts, MissingChart } from './charts';
import { formatResults, Results, ResultsWriter } from './report';

/** Escapes text for HTML element content and quoted attribute values. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

// Fonts the browser has everywhere; Vega measures text without a canvas in
// Node, so a plain sans-serif keeps its estimates close to what is drawn.
const VEGA_CONFIG = {
  font: 'sans-serif',
  axis: { labelFontSize: 11, titleFontSize: 12 },
  legend: { labelFontSize: 11, titleFontSize: 12 },
  view: { stroke: '#ddd' },
};

/** Renders one Vega-Lite spec to an SVG string, headless (no canvas, no DOM). */
export async function renderSvg(spec: vegaLite.TopLevelSpec): Promise<string> {
  const compiled = vegaLite.compile({ ...spec, config: VEGA_CONFIG } as vegaLite.TopLevelSpec).spec;
  const view = new vega.View(vega.parse(compiled), { renderer: 'none' });
  try {
    return await view.toSVG();
  } finally {
    view.finalize();
  }
}

/** The tables of formatResults as HTML: the first column is a label, the others figures. */
const HTML_WRITER: ResultsWriter = {
  table: (title, header, rows) => {
    const cells = (tag: string, row: string[]) => row.map((c, i) => `<${tag}${i === 0 ? '' : ' class="num"'}>${escapeHtml(c)}</${tag}>`).join('');
    return [
      `<div class="scroll"><table><caption>${escapeHtml(title.trim())}</caption>`,
      `<thead><tr>${cells('th', header)}</tr></thead>`,
      `<tbody>${rows.map((r) => `<tr>${cells('td', r)}</tr>`).join('')}</tbody></table></div>`,
    ].join('\n');
  },
  line: (text) => `<p>${escapeHtml(text.trim())}</p>`,
  join: (parts) => parts.join('\n'),
};

const STYLE = `
body { font: 14px/1.45 sans-serif; color: #222; margin: 24px auto; max-width: 1000px; padding: 0 16px; }
h1 { font-size: 22px; } h2 { font-size: 18px; margin-top: 32px; border-bottom: 1px solid #ddd; }
figure { margin: 16px 0 28px; } figcaption { color: #555; margin: 4px 0 8px; max-width: 760px; }
figure svg { max-width: 100%; height: auto; }
.scroll { overflow-x: auto; }
table { border-collapse: collapse; margin: 20px 0; font-size: 13px; }
caption { text-align: left; font-weight: bold; padding-bottom: 4px; }
th, td { border: 1px solid #ccc; padding: 2px 8px; text-align: left; white-space: nowrap; }
th { background: #f3f3f3; } .num { text-align: right; font-variant-numeric: tabular-nums; }
.missing { color: #777; font-style: italic; }
dl { display: grid; grid-template-columns: max-content auto; gap: 2px 16px; } dt { color: #555; } dd { margin: 0; }
`;

function figure(c: Chart | MissingChart, svg?: string): string {
  if (!('spec' in c) || svg === undefined) {
    const why = 'why' in c ? c.why : '';
    return `<figure id="chart-${c.id}" class="missing-chart"><h3>${escapeHtml(c.title)}</h3><p class="missing">Not drawn: ${escapeHtml(why)}.</p></figure>`;
  }
  return `<figure id="chart-${c.id}" class="chart"><h3>${escapeHtml(c.title)}</h3><figcaption>${escapeHtml(c.caption)}</figcaption>\n${svg}\n</figure>`;
}

function metaList(meta: Record<string, unknown>): string {
  const show = (v: unknown) => (Array.isArray(v) ? v.map((x) => (typeof x === 'number' ? x.toFixed(2) : String(x))).join(' ') : String(v));
  return `<dl>${Object.entries(meta)
    .map(([k, v]) => `<dt>${escapeHtml(k)}</dt><dd>${escapeHtml(show(v))}</dd>`)
    .join('')}</dl>`;
}

/**
 * The whole page for `results`: metadata, every chart (or why it is missing),
 * then the tables. Deterministic for the same results, so a page can be
 * rebuilt from saved JSON (`--report-from`).
 */
export async function renderPage(results: Results): Promise<string> {
  const figures: string[] = [];
  for (const c of charts(results)) figures.push(figure(c, 'spec' in c ? await renderSvg(c.spec) : undefined));
  const m = results.meta;
  const title = `rx-verbs bench (${m.quick ? 'quick' : 'full'}) on ${String(m.device)}${m.date ? `, ${String(m.date)}` : ''}`;
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>${escapeHtml(title)}</title>
<style>${STYLE}</style>
</head>
<body>
<h1>${escapeHtml(title)}</h1>
<p>Every ratio compares variants measured in the same process and run; on a shared machine the ratios mean more than the absolute figures.</p>
<h2>Run</h2>
${metaList(m)}
<h2>Charts</h2>
${figures.join('\n')}
<h2>Tables</h2>
${formatResults(results, HTML_WRITER)}
</body>
</html>
`;
}
