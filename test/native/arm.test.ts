import { firstValueFrom, timeout, take, toArray } from 'rxjs';
import { makePair, region, waitFor, pollN, itSoft, Pair } from '../support/device';
import { scaled } from '../support/slow';
import { wcs, expectQuietAfter, roundTrip, throughMarker } from '../support/verbs-checks';
import type { CqEvent, Cq, WcBatch } from '../../src';

/**
 * Reads the channel's events (with tryGetEvent; not acked) up to a marker:
 * cqA is armed and a marker goes through a's send queue (completing on cqA,
 * after everything a posted before), so its event is queued behind every
 * event the earlier work raised. Returns the events before it (and any that
 * came with it, duplicates included) other than cqA's, which it acks.
 * Reading for some milliseconds instead proves nothing: a slow device had
 * simply not raised its event yet.
 */
async function eventsUpToMarker(p: Pair): Promise<CqEvent<Cq>[]> {
  p.cqA.requestNotify();
  expect(await throughMarker(p.a)).toEqual([]);
  const out: CqEvent<Cq>[] = [];
  let markerEvents = 0;
  const read = () => {
    for (let e = p.channel.tryGetEvent(); e; e = p.channel.tryGetEvent()) {
      if (e.cq === p.cqA) markerEvents++;
      else out.push(e);
    }
    return markerEvents > 0;
  };
  expect(await waitFor(read)).toBe(true);
  p.cqA.ack(markerEvents);
  return out;
}

/** Sends `n` unsignaled messages a -> b (receives posted first); waits for the sender side to finish via a signaled last one. */
async function sendToB(p: Pair, n: number, opts: { solicited?: boolean; wrBase?: number } = {}): Promise<void> {
  const src = region(p.pd, 8, undefined, 1);
  const dst = region(p.pd, 8 * n);
  for (let i = 0; i < n; i++) p.b.postRecv({ wrId: (opts.wrBase ?? 0) + i, sg: { mr: dst, offset: 8 * i, length: 8 } });
  p.a.postSend(
    Array.from({ length: n }, (_, i) => ({ wrId: 900 + i, sg: { mr: src }, solicited: opts.solicited, signaled: i === n - 1 })),
  );
  // The sender's completion comes after the receiver's (the ACK follows the responder's work).
  const [s] = await wcs(p.cqA, 1);
  expect(s).toMatchObject({ wrId: BigInt(900 + n - 1), status: 'SUCCESS' });
}

describe('req_notify (arming)', () => {
  it('arms once: two completions after one arm raise one event, and nothing more without a re-arm', async () => {
    const p = makePair();
    try {
      p.cqB.requestNotify();
      await sendToB(p, 2);
      const events = await eventsUpToMarker(p);
      expect(events).toHaveLength(1);
      expect(events[0].cq).toBe(p.cqB);
      expect((await pollN(p.cqB, 2)).length).toBe(2);
      p.cqB.ack(1);
      // Not re-armed: a third completion raises nothing (but is there to poll).
      await sendToB(p, 1, { wrBase: 10 });
      expect(await eventsUpToMarker(p)).toHaveLength(0);
      expect(p.cqB.poll().toArray().map((w) => w.wrId)).toEqual([10n]);
      // Re-armed: the next one raises exactly one event again.
      p.cqB.requestNotify();
      await sendToB(p, 1, { wrBase: 20 });
      const again = await eventsUpToMarker(p);
      expect(again).toHaveLength(1);
      p.cqB.ack(1);
      expect(p.cqB.stats).toMatchObject({ events: 2, acked: 2, arms: 2 });
    } finally {
      p.close();
    }
  });

  it('completions already queued when arming raise nothing; a poll after arming finds them', async () => {
    const p = makePair();
    try {
      await sendToB(p, 1); // queued on cqB, unarmed
      p.cqB.requestNotify();
      expect(await eventsUpToMarker(p)).toHaveLength(0);
      expect(p.cqB.poll().toArray().map((w) => w.wrId)).toEqual([0n]); // poll after arming: nothing lost
      // The arm is still pending: the next completion fires it.
      await sendToB(p, 1, { wrBase: 5 });
      const events = await eventsUpToMarker(p);
      expect(events).toHaveLength(1);
      p.cqB.ack(1);
      expect(p.cqB.poll().toArray().map((w) => w.wrId)).toEqual([5n]);
    } finally {
      p.close();
    }
  });

  it('solicited-only: an unsolicited SEND raises nothing, a solicited one raises one event', async () => {
    const p = makePair();
    try {
      p.cqB.requestNotify(true);
      await sendToB(p, 1, { solicited: false });
      expect(await eventsUpToMarker(p)).toHaveLength(0);
      await sendToB(p, 1, { solicited: true, wrBase: 1 });
      const events = await eventsUpToMarker(p);
      expect(events).toHaveLength(1);
      expect(events[0].cq).toBe(p.cqB);
      p.cqB.ack(1);
      expect((await pollN(p.cqB, 2)).toArray().map((w) => w.wrId)).toEqual([0n, 1n]);
    } finally {
      p.close();
    }
  });

  itSoft('solicited-only: an error completion raises an event (injected, then a real LOC_LEN_ERR)', async () => {
    const p = makePair();
    try {
      p.cqB.requestNotify(true);
      p.ctx.faults.errorCompletion(p.cqB, { wrId: 77, status: 'LOC_PROT_ERR', opcode: 'RECV' });
      const events = await eventsUpToMarker(p);
      expect(events).toHaveLength(1);
      p.cqB.ack(1);
      expect(p.cqB.poll().at(0)).toMatchObject({ wrId: 77n, status: 'LOC_PROT_ERR' });
      // A real error on the receiver: a receive too small for an unsolicited SEND.
      p.cqB.requestNotify(true);
      const src = region(p.pd, 64, undefined, 1);
      const dst = region(p.pd, 8);
      p.b.postRecv({ wrId: 78, sg: { mr: dst } });
      p.a.postSend({ wrId: 79, sg: { mr: src }, solicited: false });
      // a's SEND fails too (the responder refused it): once it has, its
      // marker is flushed behind it.
      expect((await wcs(p.cqA, 1))[0]).toMatchObject({ wrId: 79n });
      const real = await eventsUpToMarker(p);
      expect(real).toHaveLength(1);
      p.cqB.ack(1);
      expect(p.cqB.poll().at(0)).toMatchObject({ wrId: 78n, status: 'LOC_LEN_ERR' });
    } finally {
      p.close();
    }
  });

  itSoft('the arm race: a completion landing just before the arm raises no event; poll-after-arm gets it, waiting for an event would hang', async () => {
    const p = makePair();
    try {
      p.ctx.faults.completionBeforeArm(p.cqB, { wrId: 4242, status: 'SUCCESS', opcode: 'RECV', byteLen: 8, qpNum: p.b.qpNum });
      // Nothing is there yet: a consumer drains (empty) ...
      expect(p.cqB.poll().length).toBe(0);
      // ... then arms; the completion lands in the window before the arm takes effect.
      p.cqB.requestNotify();
      // The consumer that waits for an event would hang forever: none comes,
      // even once the device has demonstrably moved on (a marker behind it).
      expect(await eventsUpToMarker(p)).toEqual([]);
      expect(p.cqB.stats.events).toBe(0);
      // The consumer that polls after arming loses nothing.
      const after = p.cqB.poll().toArray();
      expect(after).toHaveLength(1);
      expect(after[0]).toMatchObject({ wrId: 4242n, status: 'SUCCESS', opcode: 'RECV' });
      // The arm itself took effect: the next real completion raises an event.
      const ev = firstValueFrom(p.channel.events$.pipe(timeout({ first: scaled(2000) })));
      await sendToB(p, 1, { wrBase: 7 });
      expect((await ev).cq).toBe(p.cqB);
      p.cqB.ack(1);
      expect(p.cqB.poll().toArray().map((w) => w.wrId)).toEqual([7n]);
    } finally {
      p.close();
    }
  });

  itSoft('the arm race: completions$ (arm, then poll) picks up the completion that raced the arm', async () => {
    const p = makePair();
    try {
      p.ctx.faults.completionBeforeArm(p.cqB, { wrId: 5151, status: 'SUCCESS', opcode: 'RECV', qpNum: p.b.qpNum });
      const seen: bigint[] = [];
      const sub = p.cqB.completions$.subscribe((b: WcBatch) => seen.push(...b.wrId));
      try {
        expect(await waitFor(() => seen.length >= 1, 2000)).toBe(true);
        expect(seen).toEqual([5151n]);
        await sendToB(p, 2, { wrBase: 1 });
        expect(await waitFor(() => seen.length >= 3, 2000)).toBe(true);
        // Once more through the loop: nothing else was on its way.
        expect(await roundTrip(p.ctx, p.cqB, () => seen)).toEqual([5151n, 1n, 2n]);
      } finally {
        sub.unsubscribe();
      }
    } finally {
      p.close();
    }
  });

  itSoft('duplicate events are delivered twice and are harmless for completions$: every WC exactly once', async () => {
    const p = makePair({ cap: { maxRecvWr: 256, maxSendWr: 256 }, cqe: 512 });
    try {
      p.ctx.faults.duplicateEvents(true);
      // The fault is real: one arm + one completion gives two events.
      p.cqB.requestNotify();
      await sendToB(p, 1, { wrBase: 0 });
      const dup = await eventsUpToMarker(p);
      expect(dup).toHaveLength(2);
      expect(dup.every((e) => e.cq === p.cqB)).toBe(true);
      p.cqB.ack(2);
      expect(p.cqB.poll().toArray().map((w) => w.wrId)).toEqual([0n]);
      expect(p.cqB.poll().length).toBe(0);

      const seen: bigint[] = [];
      const sub = p.cqB.completions$.subscribe((b: WcBatch) => seen.push(...b.wrId));
      try {
        const eventsBefore = p.cqB.stats.events;
        for (let round = 0; round < 20; round++) {
          await sendToB(p, 10, { wrBase: 1000 + round * 10 });
        }
        expect(await waitFor(() => seen.length >= 200, 5000)).toBe(true);
        // Once more through the loop (the marker's event comes twice too):
        // every event queued before it has been read.
        const expected = Array.from({ length: 200 }, (_, i) => BigInt(1000 + i));
        expect(await roundTrip(p.ctx, p.cqB, () => seen)).toEqual(expected);
        const delivered = p.cqB.stats.events - eventsBefore;
        expect(delivered).toBeGreaterThanOrEqual(2);
        expect(delivered % 2).toBe(0); // every event came twice
      } finally {
        sub.unsubscribe();
      }
      await expectQuietAfter(p.a, p.cqB);
    } finally {
      p.close();
    }
  });

  it('events$ with take(): one event per arm, as many events as arms', async () => {
    const p = makePair();
    try {
      const got = firstValueFrom(p.channel.events$.pipe(take(3), toArray(), timeout({ first: scaled(3000) })));
      for (let i = 0; i < 3; i++) {
        p.cqB.requestNotify();
        await sendToB(p, 2, { wrBase: 10 * i });
        await waitFor(() => p.cqB.stats.events === i + 1, 2000);
        expect((await pollN(p.cqB, 2)).length).toBe(2);
      }
      const events = await got;
      expect(events).toHaveLength(3);
      p.cqB.ack(3);
      expect(p.cqB.stats).toMatchObject({ events: 3, arms: 3 });
    } finally {
      p.close();
    }
  });
});
