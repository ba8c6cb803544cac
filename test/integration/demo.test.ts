import { spawn } from 'child_process';
import * as path from 'path';
import { scaled } from '../support/slow';

const root = path.join(__dirname, '..', '..');

/** Runs `npm start` as the README says (no arguments) and collects what it printed. */
function npmStart(): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const env = { ...process.env };
    delete env.RX_VERBS_DEVICE; // the README's run: the default device
    const child = spawn('npm', ['start'], { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** The value column of the summary table row named `key`. */
function row(table: string, key: string): string | undefined {
  const m = table.match(new RegExp(`^\\|\\s*${key}\\s*\\|\\s*(.*?)\\s*\\|$`, 'm'));
  return m?.[1];
}

describe('npm start (the demo the README shows)', () => {
  it('moves 20,000 messages through the pipeline and verifies every one: 0 corrupt, 0 errors, exit 0', async () => {
    const r = await npmStart();
    if (r.code !== 0) throw new Error(`npm start exited ${r.code}\n${r.stdout}\n${r.stderr.slice(-3000)}`);
    expect(row(r.stdout, 'messages')).toBe('20000');
    expect(row(r.stdout, 'verified')).toBe('20000 (0 corrupt, 0 errors)');
    expect(row(r.stdout, 'device')).toBe('soft0');
    // The channel really delivered: events, acks and arms happened.
    for (const key of ['completion events', 'ack calls', 'arms', 'channel wakeups']) {
      expect(Number(row(r.stdout, key))).toBeGreaterThan(0);
    }
    expect(row(r.stdout, 'throughput')).toMatch(/^\d+(\.\d+)? MB\/s$/);
    // Where the time went: the three parts add up to the run's seconds.
    const seconds = Number(row(r.stdout, 'seconds'));
    const parts = ['time in the pipeline', 'time filling payloads', 'time verifying payloads'].map((key) => {
      const m = /^(\d+\.\d{3}) s \((\d+\.\d)%\)$/.exec(row(r.stdout, key) ?? '');
      if (!m) throw new Error(`no '${key}' row in\n${r.stdout}`);
      return Number(m[1]);
    });
    expect(parts[0]).toBeGreaterThan(0);
    expect(Math.abs(parts.reduce((a, b) => a + b, 0) - seconds)).toBeLessThanOrEqual(0.003);
  }, scaled(120000));
});
