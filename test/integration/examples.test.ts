import { execFile } from 'child_process';
import * as path from 'path';

/** Runs an example program as a user would (`node examples/<file>`), inside the package. */
function runExample(file: string, args: string[] = []): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = execFile(
      process.execPath,
      [path.join(__dirname, '..', '..', 'examples', file), ...args],
      { timeout: 30000, env: { ...process.env, RX_VERBS_DEVICE: process.env.RX_VERBS_TEST_DEVICE ?? 'soft0' } },
      (_err, stdout, stderr) => resolve({ code: child.exitCode, stdout, stderr }),
    );
  });
}

describe('examples', () => {
  it('01-first-steps: a channel as an Observable delivers the send and the receive', async () => {
    const r = await runExample('01-first-steps.js');
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('bob got: "hello from alice"');
    expect(r.stdout).toMatch(/completion: SEND SUCCESS wr_id=2/);
    expect(r.stdout).toMatch(/"acked":1/);
  });

  it('02-rpc: every call gets its own answer, flow-controlled by credits', async () => {
    const r = await runExample('02-rpc.js', ['3000']);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^3000 calls, 0 wrong/m);
  });

  it('03-bulk-write: bulk writes complete and the immediate data notifies the target', async () => {
    const r = await runExample('03-bulk-write.js', ['16']);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^16 MiB in 64 writes/m);
    expect(r.stdout).toContain('target notified by immediate data: true');
  });

  it('04-hybrid-poller: measures the round trip in event mode and with spin-then-park', async () => {
    const r = await runExample('04-hybrid-poller.js', ['300']);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/round trip p50: event mode [\d.]+ us, spin 50 us then park [\d.]+ us/);
  });

  it('06-rpc-over-cm: many clients on the message layer over rdma_cm, one completion channel on the server, every answer checked', async () => {
    const r = await runExample('06-rpc-over-cm/client.js', ['--clients', '8', '--calls', '400']);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^8 clients, 3200 calls, 0 wrong$/m);
    expect(r.stdout).toMatch(/^server: 8 clients, 3200 calls answered on one completion channel$/m);
  });

  it('06-rpc-over-cm: the server file alone runs the same in one process', async () => {
    const r = await runExample('06-rpc-over-cm/server.js');
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^8 clients, 8000 calls, 0 wrong$/m);
  });

  it('07-srq-server: 1,000 QPs on one SRQ, one CQ on one completion channel, every message verified', async () => {
    const r = await runExample('07-srq-server.js', ['1000', '3']);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^1000 connections on one SRQ of \d+ receives, one CQ, one completion channel$/m);
    expect(r.stdout).toMatch(/^3000 messages, 0 wrong, 0 send errors$/m);
  });

  it('08-atomic-counter: a fetch-and-add counter and a compare-and-swap lock shared by 6 worker threads (each with its own context) lose no increment', async () => {
    const r = await runExample('08-atomic-counter.js', ['6', '40']);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^6 worker threads x 40 rounds: counter 240, total under the lock 240, lock free$/m);
    expect(r.stdout).toMatch(/^no increment lost$/m);
  });

  it('09-kv-service: GET/PUT/DELETE from several clients, values up to 3 MiB by rendezvous, every value checked', async () => {
    const r = await runExample('09-kv-service/server.js');
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^4 clients, 144 requests \(56 PUT, 72 GET, 16 DELETE\), 0 wrong$/m);
    expect(r.stdout).toMatch(/^1 more client read all 28 keys twice: 12 values, 16 deleted, 0 wrong$/m);
    expect(r.stdout).toMatch(/^a value past the server's limit: refused before sending \(RangeError\)$/m);
    // The 32 PUTs and 48 GET replies past 8 KiB went by rendezvous; the reader's second
    // round found its 8 large values already registered (one registration each, then hits).
    expect(r.stdout).toMatch(/^kv server: 12 keys, 12\.3 MiB; by rendezvous 32 values in, 48 out; 40 registrations, 8 cache hits$/m);
  });
});
