import { map } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import { ackEvents, drainCq, rearm } from '../../../src/operators';
import { expectAcks, expectArms, VirtualCq, virtualCq, wrIdsOf } from '../../../src/testing';

/**
 * VirtualCq.spuriousEvent(): an event with nothing behind it, as real
 * channels deliver (readiness is not a promise of a completion). The
 * completion loop must take it in its stride: ack it, re-arm, drain nothing.
 */
describe('VirtualCq.spuriousEvent()', () => {
  let testScheduler: TestScheduler;

  beforeEach(() => {
    testScheduler = new TestScheduler((actual, expected) => expect(actual).toEqual(expected));
  });

  it('raises one event on the channel whether or not the CQ is armed, and consumes no arm', () => {
    let cq: VirtualCq | undefined;
    testScheduler.run((helpers) => {
      cq = virtualCq(helpers);
      const events: unknown[] = [];
      cq.channel.events$.subscribe((e) => {
        events.push(e.cq);
        e.cq.ack(1);
      });
      cq.spuriousEvent(); // not armed
      expect(events).toEqual([cq]);
      expect(cq.isArmed).toBe(false);
      cq.requestNotify();
      cq.spuriousEvent(); // armed: still armed after it
      expect(events).toEqual([cq, cq]);
      expect(cq.isArmed).toBe(true);
      expect(cq.depth).toBe(0);
    });
    expect(cq!.eventsRaised).toBe(2);
    cq!.assertInvariants();
  });

  it('goes through rearm -> ackEvents -> drainCq as an ack and a re-arm, emitting nothing, and real completions still flow', () => {
    let cq: VirtualCq | undefined;
    testScheduler.run((helpers) => {
      const { cold, expectObservable } = helpers;
      cq = virtualCq(helpers, { completions: '-----a', values: { a: { wrId: 7 } } });
      cq.requestNotify();
      const target = cq;
      cold('--x').subscribe(() => target.spuriousEvent());
      const out$ = cq.channel.events$.pipe(ackEvents({ every: 1 }), rearm(), drainCq(), map(wrIdsOf));
      expectObservable(out$).toBe('-----x', { x: [7] });
      expectArms(helpers, cq, 'a-a--a');
      expectAcks(helpers, cq, '--1--1');
    });
    expect(cq!.eventsRaised).toBe(2);
    expect(cq!.unacked).toBe(0);
    cq!.assertInvariants();
  });

  it('must be acked like any event: a loop that skips acking empty events breaks the invariants', () => {
    let cq: VirtualCq | undefined;
    testScheduler.run((helpers) => {
      cq = virtualCq(helpers);
      cq.requestNotify();
      const target = cq;
      // Acks only events that brought completions: wrong.
      cq.channel.events$.subscribe((e) => {
        const batch = e.cq.poll();
        if (batch.length > 0) e.cq.ack(1);
      });
      helpers.cold('-x').subscribe(() => target.spuriousEvent());
    });
    expect(cq!.unacked).toBe(1);
    expect(() => cq!.assertInvariants()).toThrow(/1 event\(s\) read from the channel were never acked/);
  });
});
