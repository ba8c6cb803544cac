import { map } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import { drainCq, rearm, ackEvents } from '../../../src/operators';
import { expectAcks, expectArms, virtualChannel, virtualCq, wrIdsOf } from '../../../src/testing';
import { CqOverrunError } from '../../../src/core/errors';
import { WcBatch } from '../../../src/core/wc-batch';

describe('rx-verbs/testing: virtual channel and CQ', () => {
  let testScheduler: TestScheduler;

  beforeEach(() => {
    testScheduler = new TestScheduler((actual, expected) => expect(actual).toEqual(expected));
  });

  it('should arm once: the first completion after arming raises one event and disarms', () => {
    testScheduler.run((helpers) => {
      const cq = virtualCq(helpers, { completions: '--a--b--' });
      cq.requestNotify();
      helpers.expectObservable(cq.channel.events$.pipe(map((e) => e.cq === cq))).toBe('--t-----', { t: true });
    });
  });

  it('should raise nothing for completions queued before arming (poll after arming)', () => {
    const cq = virtualCq(undefined);
    cq.addCompletions({ wrId: 1 });
    cq.requestNotify();
    expect(cq.eventsRaised).toBe(0);
    expect(cq.isArmed).toBe(true);
    expect(wrIdsOf(cq.poll())).toEqual([1]);
    cq.addCompletions({ wrId: 2 }); // after the arm: fires
    expect(cq.eventsRaised).toBe(1);
    expect(cq.isArmed).toBe(false);
  });

  it('should fire a solicited-only arm on solicited or error completions only', () => {
    const cq = virtualCq(undefined);
    cq.requestNotify(true);
    cq.addCompletions({ wrId: 1 });
    expect(cq.eventsRaised).toBe(0);
    cq.addCompletions({ wrId: 2, solicited: true });
    expect(cq.eventsRaised).toBe(1);
    cq.requestNotify(true);
    cq.addCompletions({ wrId: 3, status: 5 });
    expect(cq.eventsRaised).toBe(2);
  });

  it('should poll at most max completions as a WcBatch, in order', () => {
    const cq = virtualCq(undefined);
    cq.addCompletions({ wrId: 1 }, { wrId: 2 }, { wrId: 3 });
    const first = cq.poll(2);
    expect(first).toBeInstanceOf(WcBatch);
    expect(wrIdsOf(first)).toEqual([1, 2]);
    expect(wrIdsOf(cq.poll(2))).toEqual([3]);
    expect(cq.depth).toBe(0);
  });

  it("should carry the sender's identity (srcQp, slid, sl, dlidPathBits) of a virtual or batched completion", () => {
    const wc = { wrId: 1, opcode: 128, srcQp: 0x42, slid: 0x1234, sl: 7, dlidPathBits: 1 };
    let cq = virtualCq(undefined);
    testScheduler.run((helpers) => {
      cq = virtualCq(helpers, { completions: 'a-b', values: { a: wc, b: WcBatch.from([{ ...wc, wrId: 2, slid: 0xffff }]) } });
    });
    expect(cq.poll().toArray().map((w) => [w.wrId, w.srcQp, w.slid, w.sl, w.dlidPathBits])).toEqual([
      [1n, 0x42, 0x1234, 7, 1],
      [2n, 0x42, 0xffff, 7, 1],
    ]);
  });

  it('should take marble values as one completion, several, or a WcBatch; bare letters get the next wr_id', () => {
    let cq = virtualCq(undefined);
    testScheduler.run((helpers) => {
      cq = virtualCq(helpers, {
        completions: 'a-b-c-d',
        values: { a: [{ wrId: 10 }, { wrId: 11 }], b: WcBatch.from([{ wrId: 12, status: 4 }]), c: { wrId: 13 } },
      });
    });
    const batch = cq.poll();
    expect(wrIdsOf(batch)).toEqual([10, 11, 12, 13, 1]);
    expect(batch.status[2]).toBe(4);
  });

  it('should count acks and refuse to ack events that were not read', () => {
    const cq = virtualCq(undefined);
    cq.channel.events$.subscribe();
    cq.requestNotify();
    cq.addCompletions({});
    expect(cq.unacked).toBe(1);
    cq.ack(1);
    expect(cq.unacked).toBe(0);
    expect(() => cq.ack(1)).toThrow(new RangeError('cannot ack 1 events: only 0 were delivered and not yet acked'));
    expect(() => cq.ack(0)).toThrow(RangeError);
  });

  it('should keep events pending in the channel while nothing subscribes', () => {
    testScheduler.run((helpers) => {
      const channel = virtualChannel();
      const cq = virtualCq(helpers, { channel, completions: '--a-----' });
      cq.requestNotify();
      const late = '    -----^--';
      const expected = '-----e--';
      helpers.expectObservable(channel.events$.pipe(map(() => 'e')), late).toBe(expected);
      helpers.flush();
      expect(channel.pendingEvents).toBe(0);
    });
  });

  it('should let events$.tryTake() read one event off the channel', () => {
    const cq = virtualCq(undefined);
    cq.requestNotify();
    cq.addCompletions({});
    expect(cq.channel.pendingEvents).toBe(1);
    const event = cq.channel.events$.tryTake();
    expect(event?.cq).toBe(cq);
    expect(cq.channel.pendingEvents).toBe(0);
    expect(cq.unacked).toBe(1);
    expect(cq.channel.events$.tryTake()).toBeUndefined();
  });

  it('should count several CQs on one channel separately', () => {
    const channel = virtualChannel();
    const a = virtualCq(undefined, { channel, context: 'A' });
    const b = virtualCq(undefined, { channel, context: 'B' });
    const seen: unknown[] = [];
    channel.events$.subscribe((e) => seen.push(e.context));
    a.requestNotify();
    b.requestNotify();
    b.addCompletions({});
    a.addCompletions({});
    expect(seen).toEqual(['B', 'A']);
    expect([a.unacked, b.unacked]).toEqual([1, 1]);
  });

  it('should overrun at depth: the completion is lost, and poll/requestNotify throw CqOverrunError', () => {
    const cq = virtualCq(undefined, { cqe: 2 });
    cq.addCompletions({}, {}, {});
    expect(cq.isOverrun).toBe(true);
    expect(() => cq.poll()).toThrow(CqOverrunError);
    expect(() => cq.requestNotify()).toThrow(CqOverrunError);
    expect(() => cq.assertInvariants()).toThrow(/overrun/);
  });

  it('should refuse to close with unacked events (EBUSY), then refuse every verb (EBADF)', () => {
    const cq = virtualCq(undefined);
    cq.channel.events$.subscribe();
    cq.requestNotify();
    cq.addCompletions({});
    expect(() => cq.close()).toThrow(expect.objectContaining({ code: 'EBUSY' }));
    expect(cq.closed).toBe(false);
    cq.ack(1);
    cq.close();
    cq.close(); // idempotent
    expect(cq.closed).toBe(true);
    for (const verb of [() => cq.requestNotify(), () => cq.poll(), () => cq.ack(1)]) {
      expect(verb).toThrow(expect.objectContaining({ code: 'EBADF' }));
    }
  });

  it('should record arms and acks for expectArms / expectAcks, setup arms at frame 0', () => {
    testScheduler.run((helpers) => {
      const cq = virtualCq(helpers, { completions: '---a---b' });
      cq.requestNotify(true);
      helpers.cold('-----x').subscribe(() => cq.requestNotify());
      cq.channel.events$.pipe(ackEvents({ every: 1 })).subscribe();
      expectArms(helpers, cq, 's----a--');
      expectAcks(helpers, cq, '-------1');
    });
  });

  describe('assertInvariants', () => {
    it('should pass for the correct loop', () => {
      let cq = virtualCq(undefined);
      testScheduler.run((helpers) => {
        cq = virtualCq(helpers, { completions: '--a--b--' });
        cq.requestNotify();
        const out$ = cq.channel.events$.pipe(ackEvents({ every: 1 }), rearm(), drainCq(), map(wrIdsOf));
        helpers.expectObservable(out$).toBe('--x--y--', { x: [1], y: [2] });
      });
      expect([cq.eventsRaised, cq.unacked, cq.depth, cq.isArmed]).toEqual([2, 0, 0, true]);
      expect(() => cq.assertInvariants()).not.toThrow();
    });

    it('should name the completions a re-arm-then-poll-once pipeline strands in an armed CQ', () => {
      let cq = virtualCq(undefined);
      testScheduler.run((helpers) => {
        cq = virtualCq(helpers, { name: 'recv', completions: '--(abc)' });
        cq.requestNotify(); // a fires it; the event waits until someone subscribes
        const pollOnce = map((e: { cq: typeof cq }) => e.cq.poll(1)); // wrong: not until empty
        helpers.cold('----x').subscribe(() => {
          cq.channel.events$.pipe(ackEvents({ every: 1 }), rearm(), pollOnce).subscribe();
        });
      });
      expect(cq.isArmed).toBe(true); // armed, so the old check called it covered
      expect(() => cq.assertInvariants()).toThrow(
        /2 completion\(s\) stranded on CQ 'recv' \(wr_id 2, 3\): queued before the last arm at frame 4 and not polled since/,
      );
    });

    it('should name the completion a drain-then-arm pipeline strands', () => {
      let cq = virtualCq(undefined);
      testScheduler.run((helpers) => {
        cq = virtualCq(helpers, { completions: '--a' });
        cq.requestNotify();
        cq.channel.events$
          .pipe(ackEvents({ every: 1 }))
          .subscribe((e) => {
            while (e.cq.poll().length > 0); // drains first ...
            e.cq.addCompletions({ wrId: 7 }); // ... a completion lands in between ...
            e.cq.requestNotify(); // ... and the arm does not fire for it
          });
      });
      const check = () => cq.assertInvariants();
      expect(check).toThrow(/drained at frame 2 while not armed/);
      expect(check).toThrow(/1 completion\(s\) stranded on CQ 'cq\d+' \(wr_id 7\): queued before the last arm at frame 2/);
    });

    it('should say that acks may be held by a live ackEvents subscription', () => {
      const cq = virtualCq(undefined);
      const sub = cq.channel.events$.pipe(ackEvents({ every: 8 }), rearm(), drainCq()).subscribe();
      cq.requestNotify();
      cq.addCompletions({});
      expect(() => cq.assertInvariants()).toThrow(/1 event\(s\) .* never acked \(a live ackEvents\(\) subscription holds its batch/);
      sub.unsubscribe(); // flushes the batch
      expect(() => cq.assertInvariants()).not.toThrow();
    });

    it('should print virtual frames inside TestScheduler.run, and no wall-clock number outside it', () => {
      const outside = virtualCq(undefined);
      outside.poll();
      expect(() => outside.assertInvariants()).toThrow(/- drained while not armed/);
      let inside = virtualCq(undefined);
      testScheduler.run((helpers) => {
        inside = virtualCq(helpers);
        helpers.cold('---x').subscribe(() => inside.poll());
      });
      expect(() => inside.assertInvariants()).toThrow(/- drained at frame 3 while not armed/);
    });

    it('should catch a pipeline that never acks', () => {
      let cq = virtualCq(undefined);
      testScheduler.run((helpers) => {
        cq = virtualCq(helpers, { completions: '--a--' });
        cq.requestNotify();
        cq.channel.events$.pipe(rearm(), drainCq()).subscribe();
      });
      expect(() => cq.assertInvariants()).toThrow(/1 event\(s\) read from the channel were never acked/);
    });

    it('should catch a drain of an unarmed CQ that then waits forever (no rearm)', () => {
      let cq = virtualCq(undefined);
      testScheduler.run((helpers) => {
        cq = virtualCq(helpers, { completions: '--a--b--' });
        cq.requestNotify();
        cq.channel.events$.pipe(ackEvents({ every: 1 }), drainCq()).subscribe();
      });
      expect(() => cq.assertInvariants()).toThrow(/drained at frame 2 while not armed/);
      expect(() => cq.assertInvariants()).toThrow(/1 completion\(s\) stranded on CQ 'cq\d+' \(wr_id 2\): queued while the CQ is not armed/);
    });

    it('should accept a drain while an event raised after the arm is still on its way', () => {
      const cq = virtualCq(undefined);
      cq.requestNotify();
      cq.addCompletions({ wrId: 1 }); // fires: the event waits in the channel
      expect(wrIdsOf(cq.poll())).toEqual([1]);
      expect(cq.poll().length).toBe(0); // unarmed, but an event will make someone poll
      cq.channel.events$.pipe(ackEvents({ every: 1 }), rearm(), drainCq()).subscribe();
      expect(() => cq.assertInvariants()).not.toThrow();
    });
  });
});
