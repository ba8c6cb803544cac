import { createHash, randomBytes } from 'crypto';
import { map, mergeMap, timer } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import type { Message } from '../../../src';
import { virtualMessagePair } from '../../support/virtual-messages';

/**
 * Flow control and large messages of the message layer over the virtual
 * CM, frame by frame: credits that come back when the consumer releases,
 * and rendezvous READs. The client connects with `rnrRetryCount: 0`, so a
 * SEND without a receive would fail the connection (RNR_RETRY_EXC_ERR, see
 * test/unit/testing/virtual-qp.test.ts): the credits never let one go.
 */
const sha = (b: Uint8Array) => createHash('sha256').update(b).digest('hex');

describe('flow over the virtual CM', () => {
  let testScheduler: TestScheduler;

  beforeEach(() => {
    testScheduler = new TestScheduler((actual, expected) => expect(actual).toEqual(expected));
  });

  it('stalls on credits (depth 2) and sends in the frames the consumer\'s releases bring them back', async () => {
    let sends: Promise<void>[] = [];
    let pair: ReturnType<typeof virtualMessagePair> | undefined;
    testScheduler.run((helpers) => {
      pair = virtualMessagePair(helpers, { server: { depth: 2 } });
      const p = pair;
      const held: Message[] = [];
      timer(6).subscribe(() => {
        p.server.messages$.subscribe((m) => held.push(m));
        sends = ['a', 'b', 'c', 'd', 'e', 'f'].map((text) => p.client.send(text));
      });
      // The consumer releases one message at each of these frames. The
      // client is stuck on the server's reserve, so each release goes back
      // at once (a CREDIT, a hop away) although the threshold is 2: a
      // receive kept unannounced could be the one the client waits for.
      helpers.hot('----------r-r---r-r---r-r').subscribe(() => held.shift()!.release());
      // two go at 6; then one a hop after each release's CREDIT; closed at 30
      const arrivals = '7ms (ab) 1ms c 1ms d 3ms e 1ms f 9ms |';
      helpers.expectObservable(timer(6).pipe(mergeMap(() => p.server.messages$.pipe(map((m) => m.text()))))).toBe(arrivals);
      timer(30).subscribe(() => {
        // The client owes back the receives the server's six CREDITs took
        // (its threshold at depth 2 is 2): one CREDIT of its own, which the
        // server then lets rest.
        expect(p.client.stats).toMatchObject({ sent: 6, creditMessages: 1 });
        expect(p.client.stats.creditStalls).toBeGreaterThanOrEqual(2);
        expect(p.server.stats).toMatchObject({ received: 6, creditMessages: 6, lent: 0 });
        p.close();
      });
    });
    await expect(Promise.all(sends)).resolves.toHaveLength(6);
  });

  it('sends a large message by rendezvous: the peer READs it two hops after the descriptor, then DONE settles the send', async () => {
    const data = randomBytes(100_000);
    let sent: Promise<void> | undefined;
    let pair: ReturnType<typeof virtualMessagePair> | undefined;
    testScheduler.run((helpers) => {
      pair = virtualMessagePair(helpers, { server: { maxEager: 1024 } });
      const p = pair;
      timer(6).subscribe(() => (sent = p.client.send(data)));
      // descriptor at 7, READ reaches the client at 8, its bytes land at 9
      const got$ = timer(6).pipe(
        mergeMap(() => p.server.messages$),
        map((m) => {
          const out = `${m.rendezvous} ${m.length} ${sha(m.data)}`;
          m.release();
          return out;
        }),
      );
      helpers.expectObservable(got$).toBe('9ms m 10ms |', { m: `true ${data.length} ${sha(data)}` });
      timer(20).subscribe(() => {
        expect(p.client.stats).toMatchObject({ rendezvousSent: 1, registrations: 1 });
        expect(p.server.stats).toMatchObject({ rendezvousReceived: 1, receiveBuffers: 1, lent: 0 });
        p.close();
      });
    });
    await expect(sent).resolves.toBeUndefined();
  });

  it('answers with a large reply by rendezvous, in virtual time', () => {
    testScheduler.run((helpers) => {
      const p = virtualMessagePair(helpers, { server: { maxEager: 64 } });
      timer(6).subscribe(() => p.server.serve((q) => Buffer.alloc(5000, q.text())));
      // asked at 6, served at 7: the descriptor reaches the client at 8, its READ's bytes at 10
      const reply$ = timer(6).pipe(
        mergeMap(() => p.client.request$('z')),
        map((m) => {
          const out = `${m.rendezvous} ${m.length} ${m.data.every((b) => b === 0x7a)}`;
          m.release();
          return out;
        }),
      );
      helpers.expectObservable(reply$).toBe('10ms (r|)', { r: 'true 5000 true' });
      timer(20).subscribe(() => p.close());
    });
  });
});
