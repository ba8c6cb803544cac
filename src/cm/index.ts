/**
 * Connections between hosts (docs/ARCHITECTURE.md, Connections): `listen()` / `connect()` over
 * rdma_cm (librdmacm, or the soft CM of soft devices), CM event channels
 * as hot sources, and connections whose QPs and CQs are ordinary verbs
 * objects.
 */
export { listen, Listener } from './listen';
export { connect, connect$ } from './connect';
export { Connection } from './connection';
export type { Disconnect } from './connection';
export { ConnectionRequest } from './request';
export { CmChannel } from './cm-channel';
export { CmId } from './cm-id';
export { rdmacmStatus, softCmAddresses, cmProviderFor, createCmChannel, NativeCmPort, openCmContext, releaseCmContext } from './native-port';
export { shutdownCm } from './shutdown';
export type { CmProvider, VerbsResources, VerbsResourceOptions } from './native-port';
export type { ConnectionOptions, ListenOptions, AcceptOptions, CmCommonOptions } from './options';
