import { spawn } from 'child_process';
import * as path from 'path';
import { scaled } from '../support/slow';

/**
 * The pair part's message-layer script (test/rxe/messages-pair.js) with
 * both sides in one process on soft0: many connections, random sizes to a
 * few MiB (eager and rendezvous both ways), every byte checked; and a
 * client gone mid-rendezvous, after which the server has every buffer back
 * and its descriptors as before.
 */
const SCRIPT = path.join(__dirname, '..', 'rxe', 'messages-pair.js');

function run(args: string[], env: Record<string, string>): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [SCRIPT, ...args], { env: { ...process.env, MSG_TIMEOUT_MS: String(scaled(100_000)), ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    child.on('close', (code) => resolve({ code, out }));
  });
}

describe('the message layer pair script, in one process on soft0', () => {
  it('8 connections, 1,000 requests of random sizes to 4 MiB: every byte checked, lent 0, fds back', async () => {
    const r = await run(['both'], { MSG_REQUESTS: '1000', MSG_MAX: String(4 << 20) });
    expect(r.out).toMatch(/^messages-pair clients: ok: 1000 requests over 8 connections/m);
    expect(r.out).toMatch(/^messages-pair server: ok: 1000 requests served .* lent 0; .*fds (\d+) -> \1$/m);
    expect(r.code).toBe(0);
  });

  it('a client gone mid-rendezvous: its request fails typed, the server has every buffer back', async () => {
    const r = await run(['both', 'killed'], { MSG_MAX: String(16 << 20) });
    expect(r.out).toMatch(/^messages-pair killed: ok: the request ended MessagesClosedError$/m);
    expect(r.out).toMatch(/^messages-pair server: ok: .* lent 0; .*fds (\d+) -> \1$/m);
    expect(r.code).toBe(0);
  });
});
