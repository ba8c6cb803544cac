/** Terminal output helpers for the CLI: a live progress line and tables. */

/**
 * A progress line: redrawn in place on a TTY (at most 10 times a second),
 * a plain line per second elsewhere (logs stay readable).
 */
export class Progress {
  private last = 0;
  private shown = false;
  private readonly tty: boolean;

  constructor(private readonly enabled: boolean, private readonly stream: NodeJS.WriteStream = process.stderr) {
    this.tty = !!stream.isTTY;
    this.last = Date.now();
  }

  /** Redraws with `line()` if it is time to (the text is built only then). */
  update(line: () => string): void {
    if (!this.enabled) return;
    const now = Date.now();
    if (now - this.last < (this.tty ? 100 : 1000)) return;
    this.last = now;
    this.stream.write(this.tty ? `\r\x1b[K${line()}` : `${line()}\n`);
    this.shown = true;
  }

  /** Ends the progress line. */
  done(): void {
    if (this.enabled && this.shown && this.tty) this.stream.write('\n');
  }
}

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
