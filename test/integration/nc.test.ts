import { createHash, randomBytes } from 'crypto';
import { PassThrough } from 'stream';
import { runNc } from '../../src/cli/nc/run';

/**
 * `rx-verbs nc` in one process on soft0 (the soft CM lives in one process;
 * across hosts the rxe pair part runs the command itself): a listener and
 * a connector, each with its own input and output, as two terminals.
 */
const sha = (b: Uint8Array) => createHash('sha256').update(b).digest('hex');

function end() {
  const input = new PassThrough();
  const output = new PassThrough();
  const parts: Buffer[] = [];
  output.on('data', (d: Buffer) => parts.push(d));
  const lines: string[] = [];
  return { input, output, report: (l: string) => lines.push(l), got: () => Buffer.concat(parts), lines };
}

describe('rx-verbs nc (soft0, both roles in one process)', () => {
  it('pipes each side\'s input to the other\'s output, both ways; the ends of both inputs end the session with status 0', async () => {
    const a = end();
    const b = end();
    let listening!: (port: number) => void;
    const ready = new Promise<number>((resolve) => (listening = resolve));
    const listener = runNc({ mode: 'listen', host: '127.0.0.1', port: 0, verbose: true, onListening: (p) => listening(p) }, a);
    const port = await ready;
    const connector = runNc({ mode: 'connect', host: '127.0.0.1', port, verbose: true }, b);
    const toA = randomBytes(3 << 20);
    const toB = randomBytes(1 << 20);
    b.input.end(toA);
    a.input.end(toB);
    const [sa, sb] = await Promise.all([listener, connector]);
    expect([sa, sb]).toEqual([0, 0]);
    expect(sha(a.got())).toBe(sha(toA));
    expect(sha(b.got())).toBe(sha(toB));
    expect(a.lines[0]).toMatch(/^listening on 127\.0\.0\.1 \d+$/);
    expect(b.lines).toContain(`connected to 127.0.0.1 ${port}`);
  });

  it('a connect to nothing reports why and exits 1', async () => {
    const b = end();
    const status = await runNc({ mode: 'connect', host: '127.0.0.1', port: 1, verbose: false }, b);
    expect(status).toBe(1);
    expect(b.lines.join('\n')).toMatch(/nobody listens|rejected|refused/i);
  });
});

describe('rx-verbs nc on the command line', () => {
  const { execFile } = require('child_process') as typeof import('child_process');
  const path = require('path') as typeof import('path');
  const MAIN = path.join(__dirname, '..', '..', 'dist', 'cli', 'main.js');
  const cli = (...args: string[]) =>
    new Promise<{ code: number; stdout: string; stderr: string }>((resolve) =>
      execFile(process.execPath, [MAIN, 'nc', ...args], { timeout: 30_000 }, (err, stdout, stderr) =>
        resolve({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout, stderr }),
      ),
    );

  it('--help says both forms; usage errors exit 2 with one line', async () => {
    const help = await cli('--help');
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/rx-verbs nc \[-v\] HOST PORT \| rx-verbs nc -l -p PORT/);
    for (const [args, message] of [
      [['-l'], /-l needs -p PORT/],
      [['127.0.0.1'], /connect with HOST PORT/],
      [['-p', '7000'], /goes with -l\/--listen/],
      [['127.0.0.1', 'http'], /PORT must be 1\.\.65535/],
    ] as const) {
      const r = await cli(...args);
      expect(r.code).toBe(2);
      expect(r.stderr.trim()).toMatch(message);
    }
  });
});
