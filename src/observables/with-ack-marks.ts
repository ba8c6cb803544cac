import type { CqEvent } from '../core/types';
import { markOwed } from '../core/event-acks';
import type { HotSourceDriver } from './hot-source';

/**
 * A channel's `events$` driver that marks every event it delivers to push
 * subscribers as owed an ack. The native channel and the testing kit's
 * virtual one both use it, so marble tests see the native behaviour.
 */
export function withAckMarks<E extends CqEvent>(driver: HotSourceDriver<E>): HotSourceDriver<E> {
  return {
    start: () => driver.start(),
    stop: () => driver.stop(),
    pull: () => driver.pull(),
    delivered: markOwed,
  };
}
