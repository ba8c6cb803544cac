export { HotSource } from './hot-source';
export type { HotSourceDriver, HotSourceOptions } from './hot-source';
export type { BufferOptions, OverflowStrategy } from './buffer-options';
export { toTakeable } from './to-takeable';
export type { TakeableObservable, ToTakeableOptions } from './to-takeable';
export { spinTake } from './spin-take';
