/**
 * CM channels and processes: a watched channel keeps the process alive only
 * while ref'd, worker threads run connections and tear them down when
 * terminated, and a machine without librdmacm gets a clear error. Each case
 * runs in a child process (test/fixtures/cm-child.js). Soft CM: skipped on
 * rxe0 (test/skips.txt).
 */
import { expectCleanExit, runFixture } from '../support/fixture-child';
import { CHILD_HANG_MS, itSoft } from '../support/device';
import { binding } from '../../src/native/binding';

interface Report {
  connected?: boolean;
  exited?: boolean;
  timer?: boolean;
  workerOk?: boolean;
  liveOk?: boolean;
  mainOk?: boolean;
  peerGone?: boolean;
  status?: { available: boolean; reason?: string };
  created?: boolean;
  error?: { name: string; code: string; syscall: string; message: string };
  listened?: boolean;
  listenError?: { name: string; code: string; reason: string };
}

describe('CM channels in a process', () => {
  itSoft('a watched CM channel that is unref()d does not keep the process alive', async () => {
    const r = await runFixture<Report>('cm-child.js', ['unref'], CHILD_HANG_MS);
    expectCleanExit(r);
    expect(r.report).toEqual({ connected: true, exited: true });
  }, CHILD_HANG_MS + 5000);

  itSoft('a watched, ref()d CM channel keeps it alive until closed', async () => {
    const r = await runFixture<Report>('cm-child.js', ['ref'], CHILD_HANG_MS);
    expectCleanExit(r);
    expect(r.report).toEqual({ connected: true, timer: true });
  }, CHILD_HANG_MS + 5000);

  itSoft('connections work inside worker threads; a worker terminated with live connections tears them down, and its peer here gets DISCONNECTED', async () => {
    const r = await runFixture<Report>('cm-child.js', ['worker'], CHILD_HANG_MS);
    expectCleanExit(r);
    expect(r.report).toEqual({ workerOk: true, liveOk: true, peerGone: true, mainOk: true });
  }, CHILD_HANG_MS + 5000);

  it('without librdmacm the rdma_cm provider says what is missing (ENODEV naming the library); listen() throws CmUnavailableError with that reason', async () => {
    const r = await runFixture<Report>('cm-child.js', ['no-rdmacm', 'librdmacm-absent.so.1'], CHILD_HANG_MS);
    expectCleanExit(r);
    expect(r.report!.status!.available).toBe(false);
    expect(r.report!.status!.reason).toMatch(/librdmacm/);
    expect(r.report!.error).toMatchObject({ name: 'Error', code: 'ENODEV', syscall: 'rdma_create_event_channel' });
    expect(r.report!.listenError).toEqual({ name: 'CmUnavailableError', code: 'ENODEV', reason: r.report!.status!.reason });
    // A build without librdmacm's headers never loads the library: it says
    // that instead (a newcomer's build on a machine without rdma-core).
    const missing = binding().rdmacmStatus().reason ?? '';
    if (/built without librdmacm headers/.test(missing)) {
      expect(r.report!.error!.message).toMatch(/built without librdmacm headers \(rdma\/rdma_cma\.h\): install librdmacm-dev/);
    } else {
      expect(r.report!.error!.message).toMatch(/librdmacm-absent\.so\.1/);
    }
  }, CHILD_HANG_MS + 5000);
});
