import { catchError, concat, defer, map, mergeMap, of, repeat, retry, take, takeUntil, timer } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import { connect$, listen } from '../../../src';
import {
  ConnectionRejectedError,
  ConnectTimeoutError,
  DeviceRemovedError,
  UnreachableError,
  AddressResolutionError,
} from '../../../src/core';
import { virtualCm } from '../../../src/testing';

const text = (data: Uint8Array) => Buffer.from(data).toString();
const server = { host: '10.0.0.2', port: 7471 };
const backup = { host: '10.0.0.3', port: 7471 };

/** Marble tests of connection logic written with plain RxJS over connect$, on the virtual CM. */
describe('virtual CM', () => {
  let testScheduler: TestScheduler;

  beforeEach(() => {
    testScheduler = new TestScheduler((actual, expected) => expect(actual).toEqual(expected));
  });

  it('should connect to a scripted peer in four hops with its private data', () => {
    testScheduler.run((helpers) => {
      const cm = virtualCm(helpers);
      cm.peer(server, { answer: { answer: 'accept', privateData: Buffer.from('welcome') } });
      const out$ = connect$({ ...server, cm, privateData: 'hello' }).pipe(map((c) => `${c.qp.state} ${text(c.privateData)}`));
      helpers.expectObservable(out$).toBe('----(c|)', { c: 'RTS welcome' });
    });
  });

  it('should marble-test a retry-with-backoff connector: refused twice, then accepted', () => {
    let cm: ReturnType<typeof virtualCm> | undefined;
    const failures: string[] = [];
    testScheduler.run((helpers) => {
      cm = virtualCm(helpers);
      //                          nobody listens until frame 30
      cm.peer(server, { script: 'n-----------------------------a' }, helpers);
      const connector$ = defer(() => connect$({ ...server, cm: cm! })).pipe(
        retry({
          count: 5,
          delay: (err: ConnectionRejectedError, n) => {
            failures.push(`${err.code} noListener=${err.noListener}`);
            return timer(10 * 2 ** (n - 1));
          },
        }),
        map(() => 'c'),
      );
      // attempt 1 at 0 fails at 4; attempt 2 at 14 fails at 18; attempt 3 at 38 connects at 42
      helpers.expectObservable(connector$).toBe('42ms (c|)');
    });
    expect(failures).toEqual(['ERR_CM_REJECTED noListener=true', 'ERR_CM_REJECTED noListener=true']);
    // The failed attempts released their ids; only the connection's is open.
    expect(cm!.openIds).toBe(1);
  });

  it('should fail over to a backup when the primary is unreachable', () => {
    testScheduler.run((helpers) => {
      const cm = virtualCm(helpers);
      cm.peer(server, { answer: 'unreachable' });
      cm.peer(backup, { answer: 'accept' });
      const out$ = connect$({ ...server, cm }).pipe(
        catchError((err: UnreachableError) => {
          expect(err.code).toBe('ERR_CM_UNREACHABLE');
          return connect$({ ...backup, cm });
        }),
        map((c) => c.peerAddress?.host),
      );
      helpers.expectObservable(out$).toBe('8ms (h|)', { h: '10.0.0.3' });
    });
  });

  it('should reconnect after each disconnect by the peer', () => {
    let cm: ReturnType<typeof virtualCm> | undefined;
    testScheduler.run((helpers) => {
      cm = virtualCm(helpers);
      cm.peer(server, { disconnects: '20ms d 15ms d' }, helpers);
      const sessions$ = defer(() => connect$({ ...server, cm: cm! })).pipe(
        mergeMap((conn) =>
          concat(
            of('u'),
            conn.disconnected$.pipe(
              map((d) => {
                expect(d.by).toBe('peer');
                // The QP went to the error state so outstanding work flushes.
                expect(conn.qp.state).toBe('ERR');
                conn.close();
                return 'd';
              }),
            ),
          ),
        ),
        repeat({ delay: 5 }),
        take(4),
      );
      // up at 4; the peer disconnects at 20, heard at 21; again up at 30; down at 37
      helpers.expectObservable(sessions$).toBe('4ms u 16ms d 8ms u 6ms (d|)');
    });
    expect(cm!.openIds).toBe(0);
  });

  it('should time out on a silent peer with ConnectTimeoutError and release everything', () => {
    let cm: ReturnType<typeof virtualCm> | undefined;
    testScheduler.run((helpers) => {
      cm = virtualCm(helpers);
      cm.peer(server, { answer: 'silent' });
      helpers.expectObservable(connect$({ ...server, cm, timeoutMs: 100 })).toBe('100ms #', undefined, new ConnectTimeoutError(100, server));
    });
    expect(cm!.openIds).toBe(0);
  });

  it('should fail address resolution for a host nobody has, after the resolve timeout (2 s)', () => {
    testScheduler.run((helpers) => {
      const cm = virtualCm(helpers);
      const out$ = connect$({ host: '10.9.9.9', port: 1, cm }).pipe(
        catchError((err: AddressResolutionError) => of(err.code)),
      );
      helpers.expectObservable(out$).toBe('2000ms (e|)', { e: 'ERR_CM_ADDRESS' });
    });
  });

  it('should cancel an attempt on unsubscribe and release its id', () => {
    let cm: ReturnType<typeof virtualCm> | undefined;
    testScheduler.run((helpers) => {
      cm = virtualCm(helpers);
      cm.peer(server, { answer: 'silent' });
      helpers.expectObservable(connect$({ ...server, cm }), '---!').toBe('---');
    });
    expect(cm!.openIds).toBe(0);
  });

  it('should hand a listener the requests of scripted clients at their frames, and answer them', () => {
    let clients: ReturnType<ReturnType<typeof virtualCm>['clients']> = [];
    testScheduler.run((helpers) => {
      const cm = virtualCm(helpers);
      const listener = listen({ ...server, cm });
      listener.requests$.subscribe((request) => {
        if (text(request.privateData) === 'mallory') request.reject({ privateData: 'go away' });
        else void request.accept({ privateData: 'welcome' });
      });
      clients = cm.clients(helpers, server, '--a---b--c', {
        a: { privateData: 'alice' },
        b: { privateData: 'bob' },
        c: { privateData: 'mallory' },
      });
      // each request reaches the listener three hops after its client starts
      helpers.expectObservable(listener.requests$.pipe(map((r) => text(r.privateData)))).toBe('-----a---b--c', {
        a: 'alice',
        b: 'bob',
        c: 'mallory',
      });
    });
    expect(clients.map((c) => c.outcome)).toEqual(['connected', 'connected', 'rejected']);
    expect(clients.map((c) => text(c.answer!))).toEqual(['welcome', 'welcome', 'go away']);
  });

  it('should buffer unanswered requests up to 1024 and reject the rest at once', () => {
    let clients: ReturnType<ReturnType<typeof virtualCm>['client']>[] = [];
    let listener: ReturnType<typeof listen> | undefined;
    testScheduler.run((helpers) => {
      const cm = virtualCm(helpers);
      listener = listen({ ...server, cm }) as never;
      clients = Array.from({ length: 1030 }, () => cm.client(server));
      helpers.flush();
    });
    expect(listener!.requests$.pending).toBe(1024);
    expect(clients.filter((c) => c.outcome === 'rejected')).toHaveLength(6);
    expect(clients.filter((c) => c.outcome === 'pending')).toHaveLength(1024);
  });

  it('should end the connection, the listener and the CQ channel with DeviceRemovedError at the removal frame', () => {
    testScheduler.run((helpers) => {
      const cm = virtualCm(helpers, { deviceRemoval: '10ms x' });
      const listener = listen({ host: '10.0.0.1', port: 1, cm });
      cm.peer(server);
      const conn$ = connect$({ ...server, cm });
      const removed = new DeviceRemovedError(server);
      helpers.expectObservable(conn$.pipe(mergeMap((c) => c.disconnected$))).toBe('10ms #', undefined, removed);
      helpers.expectObservable(conn$.pipe(mergeMap((c) => c.resources.channel.events$))).toBe('10ms #', undefined, removed);
      helpers.expectObservable(listener.requests$).toBe('10ms #', undefined, new DeviceRemovedError());
    });
  });
  it('should hand over an accepted connection with accept$ in the frame it is established, and withdraw the accept on unsubscribe', () => {
    let clients: ReturnType<ReturnType<typeof virtualCm>['clients']> = [];
    let cm: ReturnType<typeof virtualCm> | undefined;
    testScheduler.run((helpers) => {
      cm = virtualCm(helpers);
      const listener = listen({ ...server, cm });
      // requests reach the listener at 3 and 13
      clients = cm.clients(helpers, server, 'a---------b');
      const accepted$ = listener.requests$.pipe(
        take(2),
        // the first is accepted; the second's accept is given up a frame after it went
        mergeMap((request, i) => (i === 0 ? request.accept$() : request.accept$().pipe(takeUntil(timer(1))))),
        map((c) => c.qp.state),
      );
      // accepted at 3: the client's answer (ESTABLISHED) two hops later
      helpers.expectObservable(accepted$).toBe('-----c--------|', { c: 'RTS' });
      timer(20).subscribe(() => listener.close());
    });
    // The withdrawn one was released: its client heard DISCONNECTED, only the first connection's id is open.
    expect(clients.map((c) => c.outcome)).toEqual(['connected', 'disconnected']);
    expect(cm!.openIds).toBe(1);
  });
});
