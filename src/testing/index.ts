/**
 * rx-verbs/testing: marble-test rx-verbs pipelines without hardware or the
 * native addon. A virtual channel and CQ with the native semantics, driven by
 * marble diagrams inside `TestScheduler.run`, plus expectations on arms and
 * acks and checks of the completion-loop rules.
 */
export { VirtualChannel, virtualChannel } from './virtual-channel';
export { VirtualCq, virtualCq } from './virtual-cq';
export type { VirtualCqOptions, VirtualWc, VirtualCompletions } from './virtual-cq';
export { expectArms, expectAcks, wrIdsOf } from './expectations';
