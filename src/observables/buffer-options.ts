/**
 * The bounded-buffer options every hot source and `toTakeable()` share, and
 * their validation (a number out of range is a RangeError; a non-number, a
 * missing callback or an unknown strategy a TypeError: docs/ARCHITECTURE.md,
 * Errors and bad input).
 */
import { checkInt } from '../core/validate';

/**
 * What to do when an item arrives and the buffer already holds
 * `highWaterMark` items:
 * - `'pause'`: keep the item (never lose one) and stop the driver — stop
 *   reading and re-arming, so the CQ holds the rest — until the buffer is
 *   down to `lowWaterMark`. Bounded by CQ depth: gate posts with `credits()`
 *   so the CQ cannot overrun while paused.
 * - `'error'`: fail the source with a `BufferOverflowError`; what was read
 *   (the arriving item included) stays takeable, ahead of the error.
 * - `'dropOldest'` / `'dropNewest'`: drop the oldest buffered / the arriving
 *   item and hand it to `onDropped` (a dropped completion loses its wr_id:
 *   free its buffer there).
 */
export type OverflowStrategy = 'pause' | 'error' | 'dropOldest' | 'dropNewest';

/** Options of a bounded buffer between a producer and its consumers. */
export interface BufferOptions<T> {
  /** Items buffered before the overflow strategy acts (integer >= 1, default 1024). */
  highWaterMark?: number;
  /** With `'pause'`: resume once the buffer is down to this many (integer in [0, highWaterMark), default floor(hwm / 2)). */
  lowWaterMark?: number;
  /** The overflow strategy (default `'pause'` for hot sources). */
  overflow?: OverflowStrategy;
  /** Receives each dropped item; required by `'dropOldest'` and `'dropNewest'`. */
  onDropped?: (item: T) => void;
}

/** Options after defaults and validation. */
export interface ResolvedBufferOptions<T> {
  readonly highWaterMark: number;
  readonly lowWaterMark: number;
  readonly overflow: OverflowStrategy;
  readonly onDropped: ((item: T) => void) | undefined;
}

const STRATEGIES: ReadonlyArray<OverflowStrategy> = ['pause', 'error', 'dropOldest', 'dropNewest'];

/** Applies defaults and validates; throws RangeError / TypeError on bad input. */
export function resolveBufferOptions<T>(
  options: BufferOptions<T> = {},
  defaultOverflow: OverflowStrategy = 'pause',
): ResolvedBufferOptions<T> {
  const highWaterMark = checkInt(options.highWaterMark ?? 1024, 'highWaterMark', 1);
  const lowWaterMark = checkInt(options.lowWaterMark ?? Math.floor(highWaterMark / 2), 'lowWaterMark', 0, highWaterMark - 1);
  const overflow = options.overflow ?? defaultOverflow;
  if (!STRATEGIES.includes(overflow)) {
    throw new TypeError(`overflow must be one of ${STRATEGIES.join(', ')}, got ${String(overflow)}`);
  }
  const onDropped = options.onDropped;
  if (onDropped !== undefined && typeof onDropped !== 'function') {
    throw new TypeError('onDropped must be a function');
  }
  if ((overflow === 'dropOldest' || overflow === 'dropNewest') && !onDropped) {
    throw new TypeError(`overflow '${overflow}' requires an onDropped callback (a dropped item is otherwise lost silently)`);
  }
  return { highWaterMark, lowWaterMark, overflow, onDropped };
}
