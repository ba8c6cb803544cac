/**
 * Registered memory that JS takes away (issue 16, item 4) and memory freed
 * while the soft device copies outside its lock (item 6). Every reproducer
 * runs in a child process (test/fixtures/registered-memory.js, loading the
 * addon under test) so a crash is a failed test, not a dead runner. The
 * fixture runs on the device under test (test/fixtures/device.js): the
 * post-time checks and allocMemory are the library's and run everywhere;
 * detach detection at execution time and the copy outside the lock are the
 * soft device's (a real device pinned the region at registration, so a
 * WRITE lands in memory the region still holds): soft only.
 */
import { execFile } from 'child_process';
import * as path from 'path';
import { itSoft } from '../support/device';

const FIXTURE = path.join(__dirname, '..', 'fixtures', 'registered-memory.js');

interface Child {
  code: number | null;
  signal: NodeJS.Signals | null;
  out: Record<string, unknown>;
  stderr: string;
}

function run(scenario: string, size: number): Promise<Child> {
  return new Promise((resolve) => {
    const child = execFile(process.execPath, ['--expose-gc', FIXTURE, scenario, String(size)], { timeout: 60_000 }, (_err, stdout, stderr) => {
      let out: Record<string, unknown> = {};
      try {
        out = JSON.parse(stdout);
      } catch {
        // no JSON: the assertions on code/signal below say why
      }
      resolve({ code: child.exitCode, signal: child.signalCode, out, stderr });
    });
  });
}

/** Runs a scenario and asserts the child neither crashed nor failed. */
async function clean(scenario: string, size: number): Promise<Record<string, unknown>> {
  const r = await run(scenario, size);
  expect({ signal: r.signal, code: r.code, stderr: r.code ? r.stderr : '' }).toEqual({ signal: null, code: 0, stderr: '' });
  return r.out;
}

const MiB = 1 << 20;
const REMOTE_FAIL = [{ wrId: 1, status: 'REM_ACCESS_ERR', opcode: 'RDMA_WRITE' }];

describe('registered memory that JS takes away', () => {
  itSoft('an 8 MiB region transferred and collected: the WRITE fails with REM_ACCESS_ERR, no crash', async () => {
    const out = await clean('transfer-then-write', 8 * MiB);
    expect(out).toEqual({ wcs: REMOTE_FAIL, touched: 0, bufferLength: 0 });
  });

  itSoft('a 4 KiB region transferred and collected: buffers allocated since stay untouched', async () => {
    // Before the fix the WRITE landed in a Uint8Array that reused the block.
    const out = await clean('transfer-then-write', 4096);
    expect(out).toEqual({ wcs: REMOTE_FAIL, touched: 0, bufferLength: 0 });
  });

  it('a detached region in a local scatter/gather list fails the post with EFAULT and badWr', async () => {
    const out = await clean('detached-local', 4096);
    expect(out.send).toMatchObject({ name: 'Error', code: 'EFAULT', badWr: 1 });
    expect(String((out.send as { message: string }).message)).toMatch(/work request 1: .*detached/);
    expect(out.recv).toMatchObject({ name: 'Error', code: 'EFAULT', badWr: 0 });
  });

  itSoft('a receive on memory detached after posting: the device refuses it (LOC_PROT_ERR), nothing written', async () => {
    const out = await clean('detached-receive', 4096);
    expect(out.wcs).toEqual([
      { wrId: 7, status: 'LOC_PROT_ERR', opcode: 'RECV' },
      { wrId: 8, status: 'REM_OP_ERR', opcode: 'SEND' },
    ]);
  });

  it('resizable and growable buffers (and views on them) are refused with a TypeError; resize(0) after is harmless', async () => {
    const out = await clean('resizable', 8 * MiB);
    const errors = out.errors as Record<string, { name: string; message: string }>;
    for (const key of ['arrayBuffer', 'view', 'dataView', 'native']) {
      expect(errors[key]).toMatchObject({ name: 'TypeError', message: expect.stringMatching(/resizable ArrayBuffer/) });
    }
    expect(errors.growable).toMatchObject({ name: 'TypeError', message: expect.stringMatching(/growable SharedArrayBuffer/) });
    expect(out.sharedOk).toBe(true);
  });

  it('pd.allocMemory: page-aligned, survives transfer and collection of its handle, freed once both are gone', async () => {
    const out = await clean('alloc-survives', 8 * MiB);
    expect(out).toMatchObject({
      aligned: true,
      length: 8 * MiB,
      first: [{ wrId: 1, status: 'SUCCESS' }],
      dataVisible: true,
      afterCollect: [
        { wrId: 2, status: 'SUCCESS' },
        { wrId: 3, status: 'SUCCESS' },
      ],
      mappedWhileRegistered: true,
      mappedAfterBoth: false,
      handleAfterClose: true,
      mappedAfterHandle: false,
    });
    const [zero, fraction, text] = out.badSize as { name: string }[];
    expect([zero.name, fraction.name, text.name]).toEqual(['RangeError', 'RangeError', 'TypeError']);
  });

  itSoft('deregistering memory or destroying the responder during a 64 MiB copy waits for it; no crash', async () => {
    const out = await clean('dereg-during-copy', 64 * MiB);
    const statuses = out.statuses as string[];
    expect(statuses).toHaveLength(6);
    // Closed before the device reached it: a protection error; during or
    // after the copy: success. Never anything else.
    for (const s of statuses) expect(['SUCCESS', 'REM_ACCESS_ERR', 'LOC_PROT_ERR']).toContain(s);
  });
});
