import { firstValueFrom, map, mergeMap, timer } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import {
  acceptMessages,
  connectMessages,
  DeviceRemovedError,
  IncomingRequest,
  listen,
  Message,
  MessagesClosedError,
  RequestTimeoutError,
} from '../../../src';
import { virtualCm } from '../../../src/testing';
import { SERVER, virtualMessagePair } from '../../support/virtual-messages';

/**
 * Request/response of the message layer (src/messages) over the virtual CM,
 * in virtual time: the same MessageConnection that runs on soft0, its
 * SENDs and READs carried by the virtual QPs, one frame per hop. Both sides
 * are established by frame 5.
 */
const textOf = (m: Message) => {
  const text = m.text();
  m.release();
  return text;
};

describe('requests over the virtual CM', () => {
  let testScheduler: TestScheduler;

  beforeEach(() => {
    testScheduler = new TestScheduler((actual, expected) => expect(actual).toEqual(expected));
  });

  it('answers a request one hop each way: asked at 6, served at 7, the reply at 8', () => {
    let pair: ReturnType<typeof virtualMessagePair> | undefined;
    testScheduler.run((helpers) => {
      pair = virtualMessagePair(helpers);
      const p = pair;
      const served: number[] = [];
      timer(6).subscribe(() =>
        p.server.serve((q) => {
          served.push(testScheduler.now());
          // A handler that takes its time: the reply goes when it is ready.
          return q.text() === 'slow' ? timer(10).pipe(map(() => 'done')) : q.text().toUpperCase();
        }),
      );
      const ask = (at: number, q: string) => timer(at).pipe(mergeMap(() => p.client.request$(q)), map(textOf));
      helpers.expectObservable(ask(6, 'ping')).toBe('8ms (r|)', { r: 'PING' });
      helpers.expectObservable(ask(6, 'slow')).toBe('18ms (r|)', { r: 'done' });
      timer(30).subscribe(() => {
        expect(served).toEqual([7, 7]);
        expect(p.client.stats).toMatchObject({ sent: 2, received: 2, lent: 0, lateReplies: 0 });
        p.close();
      });
    });
    expect(pair!.cm.openIds).toBe(0);
  });

  it('times a request out at its frame with RequestTimeoutError, and drops the late reply with its buffer', () => {
    testScheduler.run((helpers) => {
      const p = virtualMessagePair(helpers);
      const held: IncomingRequest[] = [];
      timer(6).subscribe(() => p.server.requests$.subscribe((q) => held.push(q)));
      // The server answers at frame 30, long after the client gave up at 6 + 10.
      helpers.hot('30ms a').subscribe(() => {
        const q = held.shift()!;
        void q.reply('too late');
        q.release();
      });
      const request$ = timer(6).pipe(mergeMap(() => p.client.request$('q', { timeoutMs: 10 })));
      helpers.expectObservable(request$).toBe('16ms #', undefined, new RequestTimeoutError(10));
      timer(40).subscribe(() => {
        expect(p.client.stats).toMatchObject({ lateReplies: 1, lent: 0, received: 1 });
        expect(p.server.stats.lent).toBe(0);
        p.close();
      });
    });
  });

  it('cancels a request on unsubscribe: the reply, small or large, is dropped; a large one is never READ', async () => {
    let replies: Promise<void>[] = [];
    let pair: ReturnType<typeof virtualMessagePair> | undefined;
    testScheduler.run((helpers) => {
      pair = virtualMessagePair(helpers, { server: { maxEager: 64 } });
      const p = pair;
      const held: IncomingRequest[] = [];
      timer(6).subscribe(() => p.server.requests$.subscribe((q) => held.push(q)));
      helpers.hot('20ms a').subscribe(() => {
        replies = held.splice(0).map((q) => {
          const reply = q.reply(q.text() === 'big' ? Buffer.alloc(1000, 7) : 'small');
          q.release();
          return reply;
        });
      });
      // Both requests go at 6 and are given up at 10.
      helpers.expectObservable(timer(6).pipe(mergeMap(() => p.client.request$('small'))), '^ 9ms !').toBe('');
      helpers.expectObservable(timer(6).pipe(mergeMap(() => p.client.request$('big'))), '^ 9ms !').toBe('');
      timer(30).subscribe(() => {
        expect(p.client.stats).toMatchObject({ lateReplies: 2, lent: 0, rendezvousReceived: 0, receiveBuffers: 0 });
        p.close();
      });
    });
    // The large reply's sender was told (DONE, cancelled) that nobody will READ it: its reply() settled.
    await expect(Promise.all(replies)).resolves.toEqual([undefined, undefined]);
    expect(pair!.server.stats.rendezvousSent).toBe(1);
  });

  it('fails a pending request with MessagesClosedError one hop after the peer disconnects', () => {
    testScheduler.run((helpers) => {
      const p = virtualMessagePair(helpers);
      const held: IncomingRequest[] = [];
      timer(6).subscribe(() => p.server.requests$.subscribe((q) => held.push(q)));
      helpers.hot('10ms a').subscribe(() => p.server.close());
      const request$ = timer(6).pipe(mergeMap(() => p.client.request$('never answered')));
      helpers.expectObservable(request$).toBe('11ms #', undefined, new MessagesClosedError('The peer disconnected'));
      helpers.expectObservable(timer(6).pipe(mergeMap(() => p.client.messages$))).toBe('11ms |');
      timer(12).subscribe(() => {
        expect(p.client.closed).toBe(true);
        p.close();
      });
    });
  });

  it('fails pending requests on both sides with MessagesClosedError (cause DeviceRemovedError) at the removal frame', () => {
    const errors: unknown[] = [];
    testScheduler.run((helpers) => {
      const p = virtualMessagePair(helpers, { cm: { deviceRemoval: '10ms x' } });
      timer(6).subscribe(() => {
        p.client.request$('a').subscribe({ error: (e: unknown) => errors.push(e) });
        p.server.request$('b').subscribe({ error: (e: unknown) => errors.push(e) });
      });
      helpers.expectObservable(timer(6).pipe(mergeMap(() => p.server.requests$.pipe(map((q) => textOf(q)))))).toBe('7ms a 2ms #', { a: 'a' }, expect.any(MessagesClosedError));
      timer(11).subscribe(() => p.close());
    });
    expect(errors).toHaveLength(2);
    for (const e of errors) {
      expect(e).toBeInstanceOf(MessagesClosedError);
      expect((e as Error).cause).toBeInstanceOf(DeviceRemovedError);
    }
  });
  it('runs the Promise API (connectMessages, acceptMessages, request) on the virtual CM too, in real time', async () => {
    const cm = virtualCm(undefined, { latency: 0 });
    const listener = listen({ ...SERVER, cm });
    const accepted = firstValueFrom(listener.requests$).then((r) => acceptMessages(r, { messages: { depth: 4 } }));
    const client = await connectMessages({ ...SERVER, cm, rnrRetryCount: 0, messages: { depth: 4 } });
    const server = await accepted;
    // The server answers a little later, so requests pile up on it: the
    // client keeps at most requestWindow(4) = 3 of them awaiting replies.
    let open = 0;
    let most = 0;
    server.serve(async (q) => {
      most = Math.max(most, ++open);
      await new Promise((resolve) => setTimeout(resolve, 2));
      open--;
      return `re: ${q.text()}`;
    });
    // Each reply is released as it comes: held, they would keep the client's receives (and the server's credits).
    const replies = await Promise.all(Array.from({ length: 20 }, (_, i) => client.request(`q${i}`).then(textOf)));
    expect(replies).toEqual(Array.from({ length: 20 }, (_, i) => `re: q${i}`));
    expect(most).toBe(3);
    client.close();
    server.close();
    listener.close();
    expect(cm.openIds).toBe(0);
  });
});
