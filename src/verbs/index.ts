export { listDevices, openDevice, createSoftDevice, defaultDeviceName, hasIbverbs } from './device';
export type { DeviceInfo, SoftDeviceOptions } from './device';
export { Context } from './context';
export type { CreateCqOptions, AsyncEvent, Faults, InjectedWc } from './context';
export { Pd } from './pd';
export type { CreateQpOptions } from './pd';
export { Mr } from './mr';
export { Qp } from './qp';
export { Srq } from './srq';
export type { CreateSrqOptions, SrqAttr } from './srq';
export { UdQp } from './ud-qp';
export { Ah } from './ah';
export type { AhOptions } from './ah';
export type { Endpoint, ConnectOptions, QpCapOptions, QpAttributes } from './qp';
export { Cq } from './cq';
export type { CompletionsOptions } from './cq';
export { CompletionChannel } from './channel';
export type { SendWr, RecvWr, Sge, RawSge, SgEntry } from './work-request';
// The verbs surface hands out core's types (Cq.poll returns a WcBatch, ...),
// so its barrel carries them too.
export * from '../core';
