/**
 * The connection API's own argument checks (addresses, private data, layers,
 * timeouts), on top of the shared ones in core/validate: TypeError /
 * RangeError saying what was expected, before anything is sent.
 */
import { isIP } from 'net';
import { isUint8Array } from 'util/types';
import { CM_PRIVATE_DATA_MAX } from '../core/cm';
import type { ConnectionLayer, ConnectionResources } from '../core/cm';
import { checkInt, describe } from '../core/validate';

/** A numeric IPv4 or IPv6 address (the CM resolves no names). */
export function checkHost(value: unknown, what = 'host'): string {
  if (typeof value !== 'string') throw new TypeError(`${what} must be a numeric IPv4 or IPv6 address string, got ${describe(value)}`);
  if (isIP(value) === 0) throw new TypeError(`${what} must be a numeric IPv4 or IPv6 address (no names are resolved), got ${describe(value)}`);
  return value;
}

/** A TCP-space port: 1-65535, or 0 where `allowZero` (listen on any free port). */
export function checkPort(value: unknown, allowZero: boolean): number {
  return checkInt(value, 'port', allowZero ? 0 : 1, 65535);
}

/**
 * Private data as a fresh copy of at most the limit of `kind` bytes
 * (docs/ARCHITECTURE.md, Connections: 56 to connect, 196 to accept, 148 to reject).
 */
export function checkPrivateData(
  value: unknown,
  kind: keyof typeof CM_PRIVATE_DATA_MAX,
  layer?: Pick<ConnectionLayer, 'privateData'>,
): Uint8Array {
  if (value === undefined || value === null) return new Uint8Array(0);
  if (typeof value === 'string') value = Buffer.from(value, 'utf8');
  if (!isUint8Array(value)) throw new TypeError(`privateData must be a Uint8Array, Buffer or string, got ${describe(value)}`);
  // A layer's own part (the message layer's negotiation) takes room first.
  const max = CM_PRIVATE_DATA_MAX[kind] - (layer ? layer.privateData(new Uint8Array(0), CM_PRIVATE_DATA_MAX[kind]).length : 0);
  if (value.length > max) throw new RangeError(`privateData to ${kind} is at most ${max} bytes${layer ? ' beside the connection layer\'s' : ''}, got ${value.length}`);
  return new Uint8Array(value);
}

/** An optional connection layer (`connect({ layer })`, `accept({ layer })`). */
export function checkLayer<R extends ConnectionResources>(value: unknown): ConnectionLayer<R> | undefined {
  if (value === undefined) return undefined;
  const layer = value as ConnectionLayer<R>;
  if (typeof layer !== 'object' || layer === null || typeof layer.privateData !== 'function' || typeof layer.prepare !== 'function') {
    throw new TypeError(`layer must be a connection layer (e.g. one the message layer makes), got ${describe(value)}`);
  }
  return layer;
}

/** An optional positive integer of milliseconds. */
export function checkMs(value: unknown, what: string, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number') throw new TypeError(`${what} must be a number of milliseconds, got ${describe(value)}`);
  if (!Number.isInteger(value) || value < 1 || value > 2 ** 31 - 1) throw new RangeError(`${what} must be an integer in [1, 2147483647] ms, got ${value}`);
  return value;
}
