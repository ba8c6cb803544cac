/**
 * The leaf every layer shares: the interfaces of a CQ and its events, the
 * Takeable pull, work-completion batches, rdma-core's names and the typed
 * errors. It imports nothing from the project, so the testing kit, the
 * observables and the operators use it without the addon.
 */
export * from './constants';
export * from './errors';
export { WcBatch, WC_BYTES } from './wc-batch';
export type { WorkCompletion, WorkCompletionInit } from './wc-batch';
export type { CqLike, CqEvent, Takeable } from './types';
export { ThreadBound } from './thread-bound';
export { readGrh, GRH_BYTES } from './grh';
export type { Grh } from './grh';
export * from './cm';
export * from './cm-errors';
export * from './message-errors';
export * from './stream-errors';
