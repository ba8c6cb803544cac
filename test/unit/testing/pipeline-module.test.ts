import { map } from 'rxjs';
import { TestScheduler } from 'rxjs/testing';
import { expectAcks, expectArms, VirtualCq, virtualCq, wrIdsOf } from '../../../src/testing';
// The same module the native test (test/integration/pipeline-module.test.ts) runs on soft0.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { completionPipeline } = require('../../../examples/lib/completion-pipeline');

describe('examples/lib/completion-pipeline on the testing kit', () => {
  let testScheduler: TestScheduler;
  beforeEach(() => {
    testScheduler = new TestScheduler((actual, expected) => expect(actual).toEqual(expected));
  });

  it('re-arms before draining, batches each wakeup and acks in batches', () => {
    let cq: VirtualCq | undefined;
    testScheduler.run((helpers) => {
      cq = virtualCq(helpers, { completions: '-a--b---(cd)--e-' });
      cq.requestNotify();
      const out$ = completionPipeline(cq.channel, { ackEvery: 2 }).pipe(map(wrIdsOf));
      helpers.expectObservable(out$, '^-------------------!').toBe('-x--y---z-----w-', {
        x: [1],
        y: [2],
        z: [3, 4],
        w: [5],
      });
      expectArms(helpers, cq, 'aa--a---(aa)--a-');
      expectAcks(helpers, cq, '----2---2-----------1');
    });
    cq!.assertInvariants();
  });

  it('never loses a completion that lands while the pipeline is busy', () => {
    let cq: VirtualCq | undefined;
    testScheduler.run((helpers) => {
      cq = virtualCq(helpers, { completions: '-a-b-c-d-e-f-g-h-i-j|' });
      cq.requestNotify();
      const seen: number[] = [];
      completionPipeline(cq.channel, { ackEvery: 3, pollMax: 1 }).subscribe((b: Parameters<typeof wrIdsOf>[0]) => seen.push(...wrIdsOf(b)));
      helpers.flush();
      expect(seen).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
    });
    expect(cq!.unacked).toBeLessThan(3);
  });
});
