/**
 * rx-verbs/testing: marble-test rx-verbs pipelines without hardware or the
 * native addon. A virtual channel and CQ with the native semantics, driven by
 * marble diagrams inside `TestScheduler.run` — both ways of consuming a CQ:
 * the channel's `events$` with the operators, and the fast path
 * `cq.completions$` — plus expectations on arms and
 * acks and checks of the completion-loop rules; and a virtual connection
 * manager (`virtualCm`) that the package's `listen()` / `connect$()` run on,
 * for marble tests of reconnect, back-off and failover logic, whose
 * connections' QPs move bytes in virtual time (SEND, RDMA READ), so the
 * message layer (`connectMessages$()`) runs on it too.
 */
export { VirtualChannel, virtualChannel } from './virtual-channel';
export type { VirtualChannelOptions } from './virtual-channel';
export { VirtualCq, virtualCq } from './virtual-cq';
export type { VirtualCqOptions, VirtualWc, VirtualCompletions } from './virtual-cq';
export { expectArms, expectAcks, wrIdsOf } from './expectations';
export { VirtualCm, virtualCm } from './virtual-cm';
export type { VirtualCmOptions } from './virtual-cm';
export { VirtualCmChannel } from './virtual-cm-channel';
export { VirtualCmId } from './virtual-cm-id';
export type { VirtualIdState } from './virtual-cm-id';
export { VirtualQp } from './virtual-qp';
export type { VirtualQpCap, VirtualSendWr, VirtualRecvWr, VirtualSge } from './virtual-qp';
export { VirtualSrq } from './virtual-srq';
export { VirtualPd, VirtualMr, VirtualAddressSpace } from './virtual-memory';
export type { VirtualResources, VirtualResourceOptions } from './virtual-resources';
export { VirtualPeer } from './virtual-peer';
export type { PeerAnswer, PeerBehaviour, VirtualPeerOptions } from './virtual-peer';
export { VirtualClient } from './virtual-client';
export type { VirtualClientOptions, VirtualClientOutcome } from './virtual-client';
