import type { Takeable } from '../core/types';
import { checkFinite } from '../core/validate';

/**
 * A spin budget must be a finite number of microseconds, >= 0.
 * @throws TypeError for a non-number, RangeError for a number out of range.
 */
export function checkSpinUs(spinUs: number): void {
  checkFinite(spinUs, 'spinUs', 0);
}

/**
 * Polls `source.tryTake()` for at most `spinUs` microseconds (a busy loop on
 * `process.hrtime.bigint()`) and returns the first item, or `undefined` when
 * the time ran out. Always tries once, even with `spinUs` 0.
 *
 * The spin half of a hybrid poller: spin while a completion is likely to be
 * near (the NIC or the soft device thread fills the CQ in parallel, and
 * `tryTake()` on a native source polls it), then arm and park (see
 * `HotSource.take({ spinUs })`). Spinning blocks the event loop for up to
 * `spinUs`: keep it short (single-digit to tens of microseconds).
 *
 * @param source any Takeable.
 * @param spinUs the spin budget in microseconds (finite, >= 0).
 * @throws RangeError for a bad `spinUs`; the source's terminal error.
 */
export function spinTake<T>(source: Takeable<T>, spinUs: number): T | undefined {
  checkSpinUs(spinUs);
  const first = source.tryTake();
  if (first !== undefined || spinUs === 0) return first;
  const deadline = process.hrtime.bigint() + BigInt(Math.ceil(spinUs * 1000));
  do {
    const item = source.tryTake();
    if (item !== undefined) return item;
  } while (process.hrtime.bigint() < deadline);
  return undefined;
}
