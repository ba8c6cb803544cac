import { map } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import { ackEvents, batchCompletions, drainCq, failOnError, rearm } from '../../../src/operators';
import { expectAcks, expectArms, VirtualCq, virtualCq, wrIdsOf } from '../../../src/testing';
import { WorkCompletionError } from '../../../src/core/errors';

/** The explicit completion loop of docs/ARCHITECTURE.md, The hot path, marble-tested with the kit. */
describe('sample pipeline: ackEvents -> rearm -> drainCq -> batchCompletions', () => {
  let testScheduler: TestScheduler;

  beforeEach(() => {
    testScheduler = new TestScheduler((actual, expected) => expect(actual).toEqual(expected));
  });

  it('should arm before each drain, batch each wakeup, ack in batches and flush acks on unsubscribe', () => {
    let cq: VirtualCq | undefined;
    testScheduler.run((helpers) => {
      const { expectObservable } = helpers;
      cq = virtualCq(helpers, {
        completions: '   --a--(bc)----d---',
        values: { a: { wrId: 1 }, b: { wrId: 2 }, c: { wrId: 3 }, d: { wrId: 4 } },
      });
      cq.requestNotify(); // the initial arm, as in rdma-core's loop
      const result = cq.channel.events$.pipe(
        ackEvents({ every: 3 }),
        rearm(),
        drainCq({ max: 4 }),
        batchCompletions(),
        map(wrIdsOf),
      );
      const unsub = '    ----------------!';
      const expected = ' --x--y-------z----';
      expectObservable(result, unsub).toBe(expected, { x: [1], y: [2, 3], z: [4] });
      expectArms(helpers, cq, 'a-a--(aa)----a----');
      expectAcks(helpers, cq, '-----3----------1-');
    });
    cq!.assertInvariants();
  });

  it('should pick up a completion that lands between the drain and the next event (poll-after-arm)', () => {
    let cq: VirtualCq | undefined;
    testScheduler.run((helpers) => {
      cq = virtualCq(helpers, { completions: '--a--', values: { a: { wrId: 1 } } });
      cq.requestNotify();
      const result = cq.channel.events$.pipe(
        ackEvents({ every: 1 }),
        rearm(),
        drainCq({ max: 1 }),
        map((batch) => {
          // The device completes another WR while we handle this one: the
          // arm made by rearm() fires for it, so a new event follows.
          if (wrIdsOf(batch)[0] === 1) cq!.addCompletions({ wrId: 2 });
          return batch;
        }),
        batchCompletions(),
        map(wrIdsOf),
      );
      helpers.expectObservable(result).toBe('--x--', { x: [1, 2] });
      expectAcks(helpers, cq, '--(11)');
    });
    cq!.assertInvariants();
  });

  it('should stop at the first failed completion with failOnError, acks flushed', () => {
    let cq: VirtualCq | undefined;
    testScheduler.run((helpers) => {
      cq = virtualCq(helpers, {
        completions: '--a--b--',
        values: { a: { wrId: 1 }, b: [{ wrId: 2 }, { wrId: 3, status: 10 }] },
      });
      cq.requestNotify();
      const result = cq.channel.events$.pipe(ackEvents({ every: 8 }), rearm(), drainCq(), batchCompletions(), failOnError());
      const errors: unknown[] = [];
      result.pipe(map(wrIdsOf)).subscribe({ error: (e) => errors.push(e) });
      helpers.flush();
      expect(errors[0]).toBeInstanceOf(WorkCompletionError);
      expect((errors[0] as WorkCompletionError).status).toBe('REM_ACCESS_ERR');
    });
    expect(cq!.unacked).toBe(0);
  });
});
