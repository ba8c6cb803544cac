import { ownedSource } from '../../../src/observables/owned-source';
import type { HotSourceDriver } from '../../../src/observables/hot-source';
import { endedAs, seeEnd } from '../../support/ended';

/** A driver that would hand out items forever: a born-ended source must never ask it. */
function eager(): HotSourceDriver<number> & { calls: string[] } {
  const calls: string[] = [];
  return { calls, start: () => calls.push('start'), stop: () => calls.push('stop'), pull: () => (calls.push('pull'), 1) };
}

describe('ownedSource: a source made on first use is born as its owner stands', () => {
  it('should be born completed for a closed owner, never starting or pulling its driver', async () => {
    const driver = eager();
    expect(await seeEnd(ownedSource({ closed: true }, driver))).toEqual(endedAs({ complete: true }));
    expect(driver.calls).toEqual([]);
  });

  it("should be born errored with a failed owner's error, closed or not", async () => {
    class CqBroke extends Error {
      override name = 'CqBroke';
    }
    for (const closed of [true, false]) {
      const driver = eager();
      expect(await seeEnd(ownedSource({ closed, failure: new CqBroke() }, driver))).toEqual(endedAs({ errorName: 'CqBroke' }));
      expect(driver.calls).toEqual([]);
    }
  });

  it('should be live for an open owner', () => {
    const driver = eager();
    const source = ownedSource({ closed: false }, driver);
    expect(source.terminated).toBeUndefined();
    expect(source.tryTake()).toBe(1);
  });
});
