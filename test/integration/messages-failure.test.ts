import { firstValueFrom } from 'rxjs';
import { acceptMessages, connectMessages, listen, MessagesClosedError } from '../../src';

/**
 * How the message layer ends when a work request fails under it (not a
 * clean close): docs/ARCHITECTURE.md, The message layer, and the layer's own rule say a clean end
 * completes `messages$` and `requests$` and a failure errors them, so a
 * consumer of the sources learns that something went wrong.
 */
const HOST = '127.0.0.1';

describe('the message layer ended by a failed completion (soft0)', () => {
  it('errors messages$ and requests$ (a failure), and fails what is pending with MessagesClosedError', async () => {
    const listener = listen({ host: HOST, port: 0 });
    const accepted = firstValueFrom(listener.requests$).then((r) => acceptMessages(r));
    const client = await connectMessages({ host: HOST, port: listener.address!.port, rnrRetryCount: 0 });
    const server = await accepted;
    try {
      const end = (source: typeof server.messages$ | typeof server.requests$) =>
        new Promise<string>((resolve) => source.subscribe({ complete: () => resolve('complete'), error: (e: Error) => resolve(`error ${e.name}`) }));
      const messagesEnd = end(server.messages$);
      const requestsEnd = end(server.requests$);
      const pending = server.request('never answered').catch((e: unknown) => e);
      // A receive of the layer's completes in error (a length error would be the peer's protocol violation instead).
      server.connection.context.faults.errorCompletion(server.connection.recvCq, { wrId: 0, status: 'LOC_QP_OP_ERR', opcode: 'RECV' });
      expect(await pending).toBeInstanceOf(MessagesClosedError);
      expect(await messagesEnd).toBe('error MessagesClosedError');
      expect(await requestsEnd).toBe('error MessagesClosedError');
    } finally {
      client.close();
      server.close();
      listener.close();
    }
  });
});
