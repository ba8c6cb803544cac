import { binding, NativeDeviceInfo, SoftDeviceOptions } from '../native/binding';
import { Context } from './context';
import { copyOptions, describe } from '../core/validate';

/** A device as listed by {@link listDevices}. */
export type DeviceInfo = NativeDeviceInfo;

export type { SoftDeviceOptions };

const SOFT_DEVICE_KEYS = ['name', 'ports', 'maxCqe', 'maxQpWr', 'maxSge', 'maxInline', 'addresses'] as const;

/**
 * Lists RDMA devices: real ones through rdma-core (none where it is absent),
 * then the embedded soft devices (`soft0` always).
 */
export function listDevices(): DeviceInfo[] {
  return binding().listDevices();
}

/**
 * Opens a device (`ibv_open_device`). Without a name: the env variable
 * `RX_VERBS_DEVICE`, else the first real device, else `soft0`.
 * @throws Error with code `ENODEV` when no such device exists.
 */
export function openDevice(name?: string): Context {
  if (name !== undefined && typeof name !== 'string') {
    throw new TypeError(`device name must be a string, got ${typeof name}`);
  }
  const chosen = name ?? defaultDeviceName();
  return new Context(binding().openDevice(chosen));
}

/** The device {@link openDevice} picks without a name. */
export function defaultDeviceName(): string {
  const fromEnv = process.env.RX_VERBS_DEVICE;
  if (fromEnv) return fromEnv;
  const real = listDevices().find((d) => d.provider !== 'soft');
  return real ? real.name : 'soft0';
}

/**
 * Creates another embedded soft device in this process (they can connect to
 * each other and to `soft0`, within one process).
 * @throws Error with code `EEXIST` when the name is taken.
 */
export function createSoftDevice(options: SoftDeviceOptions): void {
  if (typeof options !== 'object' || options === null) throw new TypeError(`options must be an object, got ${describe(options)}`);
  binding().createSoftDevice(copyOptions(options, SOFT_DEVICE_KEYS, 'options'));
}

/** Whether this build includes the rdma-core (ibverbs) provider. */
export function hasIbverbs(): boolean {
  return binding().hasIbverbs();
}
