import type { NativeCq, NativeQp } from '../native/binding';
import type { Cq } from './cq';
import type { Qp } from './qp';

/**
 * The TS object wrapping each native CQ and QP, so that wakeups and async
 * events, which name native objects, reach their wrappers. Weak: an entry
 * goes with its native object. Filled by the Cq and Qp constructors.
 * @internal
 */
export const cqOwners = new WeakMap<NativeCq, Cq>();
/** @internal */
export const qpOwners = new WeakMap<NativeQp, Qp>();
