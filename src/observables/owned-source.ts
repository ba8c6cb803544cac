import { HotSource, HotSourceDriver, HotSourceOptions } from './hot-source';

/** How the object a hot source belongs to stands when the source is made. */
export interface SourceOwnerState {
  /** The object is closed: closing completes its sources. */
  readonly closed: boolean;
  /**
   * The error the object failed with (a CQ that overran, a device that
   * died), if it did: its sources error with it, closed or not — a close
   * never turns a failure into a clean end.
   */
  readonly failure?: unknown;
}

/**
 * A hot source of an object, for the objects that make theirs on first use
 * (`cq.completions$`, `channel.events$`, `context.asyncEvents$`,
 * `cmChannel.events$`, the testing kit's CQs). A source touched for the first
 * time after its object ended is born ended as it would have been had it been
 * touched before — errored with the object's failure, else completed — so
 * that its first subscriber, `tryTake()` and `take()` see the end at once
 * instead of waiting forever for items that cannot come (docs/ARCHITECTURE.md, Hot sources).
 *
 * @param owner the object's state now (see {@link SourceOwnerState}).
 * @param driver the native side (see {@link HotSourceDriver}).
 * @param options the bounded buffer (see {@link HotSource}).
 * @throws RangeError / TypeError for bad options, as {@link HotSource} does.
 */
export function ownedSource<T>(owner: SourceOwnerState, driver: HotSourceDriver<T>, options?: HotSourceOptions<T>): HotSource<T> {
  const source = new HotSource<T>(driver, options);
  if (owner.failure !== undefined) source.error(owner.failure);
  else if (owner.closed) source.complete();
  return source;
}
