/**
 * rx-verbs: RDMA completion channels as RxJS streams.
 * @packageDocumentation
 */
export * from './verbs';
export * from './observables';
export * from './cm';
export * from './operators';
export * from './completion';
export * from './messages';
export * from './streams';
