import type { NativeCq, NativeQp, NativeSrq } from '../native/binding';
import type { Cq } from './cq';
import type { Qp } from './qp';
import type { Srq } from './srq';

/**
 * The TS object wrapping each native CQ, QP and SRQ, so that wakeups and async
 * events, which name native objects, reach their wrappers. Weak: an entry
 * goes with its native object. Filled by the Cq, Qp and Srq constructors.
 * @internal
 */
export const cqOwners = new WeakMap<NativeCq, Cq>();
/** @internal */
export const qpOwners = new WeakMap<NativeQp, Qp>();
/** @internal */
export const srqOwners = new WeakMap<NativeSrq, Srq>();
