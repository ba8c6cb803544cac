/** Tables for terminal output: what the demo and the benchmarks print. */

/**
 * A bordered table: the first column left-aligned, the others right-aligned,
 * with an optional header row and a title line above it.
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
