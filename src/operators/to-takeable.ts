/**
 * `toTakeable` as an operator: the same function as the creation form in
 * `src/observables/to-takeable.ts`, which has both overloads
 * (`toTakeable(source$, options?)` and `toTakeable(options?)(source$)`).
 * Re-exported here so the operators folder lists every operator.
 */
export { toTakeable } from '../observables/to-takeable';
export type { TakeableObservable, ToTakeableOptions } from '../observables/to-takeable';
