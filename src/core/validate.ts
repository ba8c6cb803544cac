/**
 * The argument checks every layer shares: each returns the value it
 * checked, or throws a TypeError (not the right type) or a RangeError (the
 * right type, out of range) whose message says what was expected. Written
 * once here, in the leaf, so the operators, the completion primitives and
 * the testing kit word a bad argument exactly as the verbs classes do.
 */
import { ACCESS, AccessFlag } from './constants';

/**
 * An integer in [min, max]. `max` defaults to the largest safe integer (the
 * message then says `>= min`); `max` Infinity also accepts Infinity itself
 * ("no limit", as `batchCompletions({ maxSize })` takes it).
 */
export function checkInt(value: unknown, what: string, min: number, max = Number.MAX_SAFE_INTEGER): number {
  if (typeof value !== 'number') throw new TypeError(`${what} must be a number, got ${describe(value)}`);
  if (value === Infinity && max === Infinity) return value;
  if (!Number.isSafeInteger(value) || value < min || value > max) {
    throw new RangeError(`${what} must be ${intRange(min, max)}, got ${value}`);
  }
  return value;
}

function intRange(min: number, max: number): string {
  if (max === Infinity) return `an integer >= ${min} or Infinity`;
  if (max >= Number.MAX_SAFE_INTEGER) return `an integer >= ${min}`;
  return `an integer in [${min}, ${max}]`;
}

/** A finite number >= `min` (a time, say). */
export function checkFinite(value: unknown, what: string, min: number): number {
  if (typeof value !== 'number') throw new TypeError(`${what} must be a number, got ${describe(value)}`);
  if (!Number.isFinite(value) || value < min) throw new RangeError(`${what} must be a finite number >= ${min}, got ${value}`);
  return value;
}

/** An optional integer in [min, max], `fallback` when undefined. */
export function optInt(value: unknown, what: string, min: number, max: number, fallback: number): number {
  return value === undefined ? fallback : checkInt(value, what, min, max);
}

/** A u64 from a bigint or a non-negative safe integer, as given (no BigInt made for a number). */
export function checkU64(value: unknown, what: string): bigint | number {
  if (typeof value === 'bigint') {
    if (value < 0n || value > 0xffffffffffffffffn) throw new RangeError(`${what} must fit in 64 bits unsigned, got ${value}`);
    return value;
  }
  if (typeof value === 'number') {
    if (!Number.isSafeInteger(value) || value < 0) {
      throw new RangeError(`${what} must be a non-negative safe integer or a bigint, got ${value}`);
    }
    return value;
  }
  throw new TypeError(`${what} must be a bigint or a number, got ${describe(value)}`);
}

/** An optional boolean. */
export function optBool(value: unknown, what: string, fallback: boolean): boolean {
  if (value === undefined) return fallback;
  if (typeof value !== 'boolean') throw new TypeError(`${what} must be a boolean, got ${describe(value)}`);
  return value;
}

/** An optional function. */
export function checkFunction(value: unknown, what: string): ((...args: never[]) => unknown) | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'function') throw new TypeError(`${what} must be a function, got ${describe(value)}`);
  return value as (...args: never[]) => unknown;
}

/** A plain object. */
export function checkObject(value: unknown, what: string): Record<string, unknown> {
  if (typeof value !== 'object' || value === null) throw new TypeError(`${what} must be an object, got ${describe(value)}`);
  return value as Record<string, unknown>;
}

/** Words a value for an error message. */
export function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'number' || typeof value === 'bigint') return String(value);
  if (typeof value === 'string') return `the string ${JSON.stringify(value.length > 40 ? value.slice(0, 40) + '…' : value)}`;
  return typeof value === 'object' ? 'an object' : typeof value;
}

/**
 * Copies the named fields of an options object into a fresh plain object,
 * reading each exactly once. Whatever getters (or Proxy traps) the caller's
 * object has run here, in TS, and never again: the addon only ever sees
 * plain data that cannot change or call back while it works.
 * `undefined` and `null` give an empty object.
 */
export function copyOptions<T extends object, K extends keyof T>(value: T | null | undefined, keys: readonly K[], what: string): Pick<T, K> {
  const out = {} as Pick<T, K>;
  if (value === undefined || value === null) return out;
  checkObject(value, what);
  for (const key of keys) {
    const v = value[key];
    if (v !== undefined) out[key] = v;
  }
  return out;
}

/** Access flag names to `ibv_access_flags` bits. */
export function accessBits(names: readonly AccessFlag[]): number {
  if (!Array.isArray(names)) throw new TypeError(`access must be an array of flag names, got ${describe(names)}`);
  let bits = 0;
  for (const name of names) {
    const bit = (ACCESS as Record<string, number>)[name as string];
    if (bit === undefined) throw new RangeError(`unknown access flag ${describe(name)}; expected ${Object.keys(ACCESS).join(', ')}`);
    bits |= bit;
  }
  return bits;
}
