import { firstValueFrom, lastValueFrom, toArray } from 'rxjs';
import { connect, createCmChannel, listen, Connection } from '../../src';
import { endedAs, seeEnd } from '../support/ended';

/**
 * docs/ARCHITECTURE.md, Hot sources ("born terminated"), for the connection manager's sources on soft0 (soft CM): a
 * source of a closed CM object, first touched after the close, sees the end
 * at once, as it does when touched before.
 */
const HOST = '127.0.0.1';

describe('CM sources first touched after their object closed (soft0)', () => {
  it('cmChannel.events$ after close(): born completed', async () => {
    const channel = createCmChannel('soft');
    channel.close();
    expect(await seeEnd(channel.events$)).toEqual(endedAs({ complete: true }));
  });

  it('cmChannel.events$ touched before close(): completes the same way', async () => {
    const channel = createCmChannel('soft');
    const source = channel.events$;
    channel.close();
    expect(await seeEnd(source)).toEqual(endedAs({ complete: true }));
  });

  it('listener.requests$ first subscribed after close(): ended', async () => {
    const listener = listen({ host: HOST, port: 0 });
    listener.close();
    expect(await seeEnd(listener.requests$)).toEqual(endedAs({ complete: true }));
  });

  it('connection.disconnected$ subscribed after close(): a late subscriber sees { by: local } and the end', async () => {
    const listener = listen({ host: HOST, port: 0 });
    const accepted = firstValueFrom(listener.requests$).then((r) => r.accept());
    let client: Connection | undefined;
    let server: Connection | undefined;
    try {
      client = await connect({ host: HOST, port: listener.address!.port });
      server = await accepted;
      client.close();
      expect(await lastValueFrom(client.disconnected$.pipe(toArray()))).toEqual([{ by: 'local' }]);
      server.close();
      expect(await lastValueFrom(server.disconnected$.pipe(toArray()))).toHaveLength(1);
    } finally {
      client?.close();
      server?.close();
      listener.close();
    }
  });
});
