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
