/** A live progress line for long-running commands. */

/**
 * A progress line: redrawn in place on a TTY (at most 10 times a second),
 * a plain line per second elsewhere (logs stay readable).
 */
export class Progress {
  private last = 0;
  private shown = false;
  private readonly tty: boolean;

  /**
   * @param enabled false: every call is a no-op (`--quiet`, `--json`).
   * @param stream where the line goes; stderr, so stdout stays the result.
   */
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
