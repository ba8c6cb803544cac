import { firstValueFrom, lastValueFrom, map, mergeMap, Observable, toArray } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import { connect, connect$, listen } from '../../../src';
import { splitErrors } from '../../../src/operators';
import { CqOverrunError, DeviceRemovedError } from '../../../src/core';
import { WcBatch } from '../../../src/core/wc-batch';
import { expectAcks, expectArms, virtualChannel, virtualCm, virtualCq, wrIdsOf } from '../../../src/testing';
import { endedAs, seeEnd } from '../../support/ended';

/**
 * The testing kit's fast path: `virtualCq.completions$` with the rules of the
 * native `cq.completions$` (docs/ARCHITECTURE.md, The hot path, Hot sources), so code written against it is
 * marble-tested unchanged.
 */

/** A user's pipeline, written against the fast path: successful wr_ids, failed ones to a sink. */
function settled(cq: { completions$: Observable<WcBatch> }, failed: (wrIds: number[]) => void): Observable<number[]> {
  return cq.completions$.pipe(
    splitErrors((batch) => failed(wrIdsOf(batch))),
    map(wrIdsOf),
  );
}

describe('rx-verbs/testing: virtualCq.completions$ (the fast path)', () => {
  let testScheduler: TestScheduler;

  beforeEach(() => {
    testScheduler = new TestScheduler((actual, expected) => expect(actual).toEqual(expected));
  });

  it('should run a pipeline written against cq.completions$ unchanged: arm on first use, then event -> ack -> re-arm -> poll, one batch per wake-up', () => {
    const failures: number[][] = [];
    let cq = virtualCq(undefined);
    testScheduler.run((helpers) => {
      cq = virtualCq(helpers, { completions: '--a--(bc)--d', values: { a: { wrId: 1 }, b: { wrId: 2 }, c: { wrId: 3, status: 5 }, d: { wrId: 4 } } });
      cq.completions({ ackEvery: 1 });
      helpers.expectObservable(settled(cq, (ids) => failures.push(ids))).toBe('--x--y-----z', { x: [1], y: [2], z: [4] });
      // Armed when first used, then once per wake-up; b and c land in one frame: one event, one batch.
      expectArms(helpers, cq, 'a-a--a-----a');
      expectAcks(helpers, cq, '--1--1-----1');
    });
    expect(failures).toEqual([[3]]);
    cq.assertInvariants();
  });

  it('should ack in batches of ackEvery (default 64), the rest when the CQ closes', () => {
    let cq = virtualCq(undefined);
    testScheduler.run((helpers) => {
      cq = virtualCq(helpers, { completions: '-a-b-c' });
      const out$ = cq.completions({ ackEvery: 2 }).pipe(map(wrIdsOf));
      helpers.expectObservable(out$).toBe('-x-y-z', { x: [1], y: [2], z: [3] });
      expectAcks(helpers, cq, '---2--');
    });
    expect(cq.unacked).toBe(1);
    cq.assertInvariants(); // the fast path's own batch is not a broken rule
    const acks: number[] = [];
    cq.acks$.subscribe((n) => acks.push(n));
    cq.close();
    expect(acks).toEqual([2, 1]);
    expect(cq.unacked).toBe(0);
  });

  it('should keep its events off channel.events$, which still gets those of an explicit CQ on the same channel', () => {
    testScheduler.run((helpers) => {
      const channel = virtualChannel();
      const fast = virtualCq(helpers, { channel, completions: '-a---', name: 'fast' });
      const explicit = virtualCq(helpers, { channel, completions: '---a-', name: 'explicit' });
      explicit.requestNotify();
      helpers.expectObservable(fast.completions$.pipe(map(wrIdsOf))).toBe('-x---', { x: [1] });
      helpers.expectObservable(channel.events$.pipe(map((e) => e.cq.name))).toBe('---e-', { e: 'explicit' });
    });
  });

  it("should leave a fast-path CQ's events to it when channel.events$.tryTake() meets them", () => {
    const channel = virtualChannel();
    const fast = virtualCq(undefined, { channel, name: 'fast' });
    const explicit = virtualCq(undefined, { channel, name: 'explicit' });
    fast.completions({ ackEvery: 1 }).subscribe().unsubscribe(); // used once: its events are its own from now on
    explicit.requestNotify();
    fast.addCompletions({ wrId: 1 }); // fires the arm made on first use
    explicit.addCompletions({ wrId: 2 });
    expect(channel.pendingEvents).toBe(2);
    expect(channel.events$.tryTake()?.cq).toBe(explicit);
    expect(channel.pendingEvents).toBe(0);
    expect(fast.unacked).toBe(0); // read and acked by its fast path
    expect(wrIdsOf(fast.completions$.tryTake()!)).toEqual([1]);
    explicit.ack(1);
  });

  it('should read nothing and arm nothing while nothing subscribes; a late subscriber gets what queued, at once', () => {
    let cq = virtualCq(undefined);
    testScheduler.run((helpers) => {
      cq = virtualCq(helpers, { completions: '-ab---c' });
      const source = cq.completions$;
      const sub = '                          ----^--';
      helpers.expectObservable(source.pipe(map(wrIdsOf)), sub).toBe('----x-y', { x: [1, 2], y: [3] });
      expectArms(helpers, cq, '----a-a');
    });
    cq.assertInvariants();
  });

  it('should stop re-arming when the last subscriber leaves; events raised meanwhile wait in the channel', () => {
    let cq = virtualCq(undefined);
    testScheduler.run((helpers) => {
      cq = virtualCq(helpers, { completions: '-a--b--c' });
      helpers.expectObservable(cq.completions$.pipe(map(wrIdsOf)), '^--!').toBe('-x--', { x: [1] });
      expectArms(helpers, cq, 'aa');
    });
    // The arm made at a's wake-up fired at b: its event waits unread, c raised none.
    expect(cq.isArmed).toBe(false);
    expect(cq.channel.pendingEvents).toBe(1);
    expect(wrIdsOf(cq.completions$.tryTake()!)).toEqual([2, 3]);
  });

  it('should hand each batch to exactly one place: tryTake() polls the CQ directly, take() waits for the next wake-up', async () => {
    const cq = virtualCq(undefined, { cqe: 8 });
    const source = cq.completions({ pollMax: 2 });
    cq.addCompletions({ wrId: 1 }, { wrId: 2 }, { wrId: 3 });
    expect(wrIdsOf(source.tryTake()!)).toEqual([1, 2]);
    expect(wrIdsOf(source.tryTake()!)).toEqual([3]);
    expect(source.tryTake()).toBeUndefined();
    const next = source.take(); // parks: arms, and the next completion's wake-up resolves it
    await Promise.resolve();
    expect(cq.isArmed).toBe(true);
    cq.addCompletions({ wrId: 4 }, { wrId: 5 });
    expect(wrIdsOf((await next)!)).toEqual([4, 5]);
    cq.assertInvariants();
  });

  it("should pause above the high-water mark as a native source does: no re-arm until it is drained", () => {
    let cq = virtualCq(undefined);
    testScheduler.run((helpers) => {
      cq = virtualCq(helpers, { completions: '-a-b-c' });
      const source = cq.completions({ highWaterMark: 1, lowWaterMark: 0 });
      const hold = source.retain();
      // First use, a's wake-up, b's: b goes over the mark, so nothing re-arms at c.
      expectArms(helpers, cq, 'aa-a');
      testScheduler.schedule(() => {
        expect(source.isPaused).toBe(true);
        expect(source.pending).toBe(2); // a, then b (read already: kept); c stayed in the CQ
        expect(cq.depth).toBe(1);
        hold.unsubscribe();
      }, 6);
    });
    expect(wrIdsOf(cq.completions$.tryTake()!)).toEqual([1]);
    expect(wrIdsOf(cq.completions$.tryTake()!)).toEqual([2]);
    expect(wrIdsOf(cq.completions$.tryTake()!)).toEqual([3]);
  });

  it('should error with CqOverrunError after what it had read when the CQ overruns', () => {
    testScheduler.run((helpers) => {
      const cq = virtualCq(helpers, { cqe: 2, completions: '-a--(bcd)' });
      helpers.expectObservable(cq.completions$.pipe(map(wrIdsOf))).toBe('-x--#', { x: [1] }, expect.any(CqOverrunError));
    });
  });

  it('should end for a virtual connection that loses its device, as the native CQs do', () => {
    testScheduler.run((helpers) => {
      const cm = virtualCm(helpers, { deviceRemoval: '10ms x' });
      const server = { host: '10.0.0.2', port: 7471 };
      cm.peer(server);
      const conn$ = connect$({ ...server, cm });
      const removed = new DeviceRemovedError(server);
      helpers.expectObservable(conn$.pipe(mergeMap((c) => c.recvCq.completions$))).toBe('10ms #', undefined, removed);
    });
  });

  it('should refuse an ackEvery or pollMax that is not an integer >= 1', () => {
    expect(() => virtualCq(undefined).completions({ ackEvery: 0 })).toThrow(new RangeError('ackEvery must be an integer >= 1, got 0'));
    expect(() => virtualCq(undefined).completions({ pollMax: 1.5 })).toThrow(RangeError);
  });

  describe('first touched after the CQ ended (born terminated: docs/ARCHITECTURE.md, Hot sources)', () => {
    it('should be born completed after close(), as when touched before it', async () => {
      const early = virtualCq(undefined);
      const earlySource = early.completions$;
      early.close();
      const late = virtualCq(undefined);
      late.close();
      expect(await seeEnd(earlySource)).toEqual(endedAs({ complete: true }));
      expect(await seeEnd(late.completions$)).toEqual(endedAs({ complete: true }));
    });

    it('should keep the overrun error of a CQ that overran, then closed', async () => {
      const late = virtualCq(undefined, { cqe: 1 });
      late.addCompletions({}, {});
      late.close();
      expect(await seeEnd(late.completions$)).toEqual(endedAs({ errorName: 'CqOverrunError' }));
    });

    it('should see the end of the other virtual sources touched after close: channel and CM channel events$', async () => {
      const channel = virtualChannel();
      channel.close();
      expect(await seeEnd(channel.events$)).toEqual(endedAs({ complete: true }));
      const cmChannel = virtualCm(undefined).createChannel();
      cmChannel.close();
      expect(await seeEnd(cmChannel.events$)).toEqual(endedAs({ complete: true }));
    });

    it("should end a closed listener's requests$ and replay a closed connection's end to a late disconnected$ subscriber", async () => {
      const cm = virtualCm(undefined, { latency: 0 });
      const addr = { host: '10.0.0.2', port: 7471 };
      const listener = listen({ ...addr, cm });
      const accepted = firstValueFrom(listener.requests$).then((r) => r.accept());
      const client = await connect({ ...addr, cm });
      const server = await accepted;
      client.close();
      server.close();
      listener.close();
      expect(await lastValueFrom(client.disconnected$.pipe(toArray()))).toEqual([{ by: 'local' }]);
      expect(await lastValueFrom(server.disconnected$.pipe(toArray()))).toHaveLength(1);
      expect(await seeEnd(listener.requests$)).toEqual(endedAs({ complete: true }));
      expect(await seeEnd(client.recvCq.completions$)).toEqual(endedAs({ complete: true }));
      expect(cm.openIds).toBe(0);
    });
  });
});
