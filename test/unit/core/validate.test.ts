import { checkFinite, checkInt, optInt } from '../../../src/core/validate';
import { ackEvents, batchCompletions, drainCq } from '../../../src/operators';
import { CountingCompletion, credits } from '../../../src/completion';
import { HotSource } from '../../../src/observables/hot-source';
import { virtualCm, virtualCq } from '../../../src/testing';

/** The error a call throws, as `Name: message`. */
function thrown(call: () => unknown): string {
  try {
    call();
  } catch (err) {
    return `${(err as Error).name}: ${(err as Error).message}`;
  }
  return 'nothing thrown';
}

describe('the shared rule book (core/validate)', () => {
  it('words an integer range by its bounds: [min, max], >= min, or >= min or Infinity', () => {
    expect(thrown(() => checkInt(256, 'sl', 0, 15))).toBe('RangeError: sl must be an integer in [0, 15], got 256');
    expect(thrown(() => checkInt(0, 'every', 1))).toBe('RangeError: every must be an integer >= 1, got 0');
    expect(thrown(() => checkInt(2 ** 53, 'every', 1))).toBe(`RangeError: every must be an integer >= 1, got ${2 ** 53}`);
    expect(thrown(() => checkInt(1.5, 'maxSize', 1, Infinity))).toBe('RangeError: maxSize must be an integer >= 1 or Infinity, got 1.5');
    expect(checkInt(Infinity, 'maxSize', 1, Infinity)).toBe(Infinity);
    expect(thrown(() => checkInt(Infinity, 'every', 1))).toBe('RangeError: every must be an integer >= 1, got Infinity');
    expect(optInt(undefined, 'port', 1, 255, 1)).toBe(1);
    expect(thrown(() => checkFinite(NaN, 'maxWait', 0))).toBe('RangeError: maxWait must be a finite number >= 0, got NaN');
  });

  it('refuses a value that is not a number with a TypeError, in every layer that counts', () => {
    const notANumber = '4' as unknown as number;
    const calls: Array<[string, () => unknown]> = [
      ['ackEvents', () => ackEvents({ every: notANumber })],
      ['drainCq', () => drainCq({ max: notANumber })],
      ['batchCompletions', () => batchCompletions({ maxSize: notANumber })],
      ['batchCompletions maxWait', () => batchCompletions({ maxWait: notANumber })],
      ['CountingCompletion', () => new CountingCompletion(notANumber)],
      ['credits', () => credits({ capacity: notANumber })],
      ['HotSource', () => new HotSource({ start: () => undefined, stop: () => undefined, pull: () => undefined }, { highWaterMark: notANumber })],
      ['virtualCq', () => virtualCq(undefined, { cqe: notANumber })],
      ['virtualCm', () => virtualCm(undefined, { latency: notANumber })],
    ];
    for (const [name, call] of calls) {
      expect([name, thrown(call)]).toEqual([name, expect.stringMatching(/^TypeError: .* must be a number, got the string "4"$/)]);
    }
  });
});
