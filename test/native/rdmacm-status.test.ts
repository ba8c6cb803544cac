/**
 * What the public API does where rdma_cm cannot be used (docs/ARCHITECTURE.md, Connections):
 * rdmacmStatus() says so and why, listen() throws and connect() rejects
 * with a CmUnavailableError carrying that reason. On a machine whose kernel
 * has an RDMA CM (the rxe guests) the status says available and a channel
 * opens; the connections themselves are proven across two guests
 * (test/rxe/cm-pair.js).
 */
import { firstValueFrom } from 'rxjs';
import { connect, connect$, createCmChannel, listen, openCmContext, rdmacmStatus } from '../../src/cm';
import { CmUnavailableError } from '../../src/core/cm-errors';

/** An address no soft device answers on (TEST-NET-1): librdmacm's. */
const HOST = '192.0.2.1';

function expectUnavailable(err: unknown, reason: string): void {
  expect(err).toBeInstanceOf(CmUnavailableError);
  expect(err).toMatchObject({ name: 'CmUnavailableError', code: 'ENODEV', reason });
  expect((err as Error).message).toBe(`rdma_cm is not available here: ${reason}`);
  // The native refusal underneath, kept for who wants the errno.
  expect((err as Error).cause).toMatchObject({ syscall: 'rdma_create_event_channel' });
}

describe('rdma_cm availability', () => {
  it('rdmacmStatus says whether a connection can be made here; where not, listen throws and connect rejects with CmUnavailableError naming what is missing', async () => {
    const status = rdmacmStatus();
    if (status.available) {
      // The kernel has an RDMA CM: the channel a connection would use opens.
      createCmChannel('rdmacm').close();
      return;
    }
    // librdmacm is missing (or the build had no headers for it), or it
    // loads and the kernel has no RDMA CM (no rdma_ucm, no RDMA device).
    const reason = status.reason!;
    expect(reason).toMatch(/librdmacm|the kernel's RDMA CM \(\/dev\/infiniband\/rdma_cm\)/);
    const caught = (fn: () => unknown): unknown => {
      try {
        fn();
      } catch (err) {
        return err;
      }
      throw new Error('did not throw');
    };
    expectUnavailable(caught(() => createCmChannel('rdmacm')), reason);
    expectUnavailable(caught(() => listen({ host: HOST, port: 7471 })), reason);
    expectUnavailable(caught(() => openCmContext(HOST)), reason);
    expectUnavailable(await connect({ host: HOST, port: 7471 }).catch((err: unknown) => err), reason);
    expectUnavailable(await firstValueFrom(connect$({ host: HOST, port: 7471, provider: 'rdmacm' })).catch((err: unknown) => err), reason);
  });
});
