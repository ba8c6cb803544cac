/** Number formatting shared by the benchmark suites' progress lines and tables. */

export function fmt(v: number, digits: number): string {
  return Number.isFinite(v) ? v.toFixed(digits) : String(v);
}

export function fmtRate(v: number): string {
  if (!Number.isFinite(v)) return String(v);
  if (v >= 1e6) return `${(v / 1e6).toFixed(2)}M`;
  if (v >= 1e3) return `${(v / 1e3).toFixed(1)}k`;
  return v.toFixed(0);
}

/** A table with a header row; numbers right-aligned. */

/**
 * A bordered table: the first column left-aligned, the others right-aligned,
 * with an optional header row and a title line above it. The same layout as
 * the CLI's tables; the bench keeps its own copy because it runs against the
 * package's public entry points only.
 */
export function formatTable(rows: readonly (readonly string[])[], header?: readonly string[], title?: string): string {
  const all = header ? [header, ...rows] : rows;
  const widths = all[0].map((_, i) => Math.max(...all.map((r) => (r[i] ?? '').length)));
  const line = `+${widths.map((w) => '-'.repeat(w + 2)).join('+')}+`;
  const fmtRow = (r: readonly string[]) =>
    `| ${widths.map((w, i) => (i === 0 ? (r[i] ?? '').padEnd(w) : (r[i] ?? '').padStart(w))).join(' | ')} |`;
  const body = header ? [line, fmtRow(header), line, ...rows.map(fmtRow), line] : [line, ...rows.map(fmtRow), line];
  return (title === undefined ? body : [title, ...body]).join('\n');
}
