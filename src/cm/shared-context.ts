/**
 * One verbs Context per CM device, shared by every connection on it and
 * kept open while unused. librdmacm lends every id on a device the same
 * `ibv_context`, and a context's async events have exactly one reader (a
 * second watcher of the same descriptor is refused, EEXIST); a soft
 * device's context runs a device thread that opening and closing would
 * start and join for each connection. Either way a connection borrows the
 * device's Context instead of opening its own, as a C program keeps
 * `id->verbs`.
 *
 * The ownership rule (README, "Shared CM contexts"), written once here:
 * - A shared context is leased, never owned: every connection holds one
 *   lease for its life, and each `openCmContext()` is one lease until its
 *   `releaseCmContext()`. Nobody may close it through a lease:
 *   `context.close()` is refused (EBUSY) while it is shared.
 * - What a lease holder makes on it (PDs, MRs, channels, CQs, ...) lives
 *   until the last lease ends; then everything still made on it is closed,
 *   in the rule book's teardown order, and the context itself stays kept,
 *   idle, for the next connection on its device.
 * - `shutdownCm()` closes the kept contexts (and the CM channels) of the
 *   process once no lease is left.
 *
 * A kept context never holds the process open (its async watcher is
 * unref'd) and goes with the environment (the addon's cleanup hook closes
 * it on exit, in worker threads too). One that died (closed, DEVICE_FATAL,
 * its device removed, or no longer the CM's own) is dropped from the cache
 * and closed once its last lease is gone.
 * @packageDocumentation
 */
import type { NativeCmId, NativeContext } from '../native/binding';
import { Context } from '../verbs/context';

/** Leases of each context handed out here (a WeakMap: entries go with their contexts). */
const leases = new WeakMap<Context, number>();
/** The kept context of each CM device (`provider/device`). */
const kept = new Map<string, Context>();

const keyOf = (provider: string, device: string) => `${provider}/${device}`;

/** Whether a kept context can still make objects (its async watcher has applied any DEVICE_FATAL). */
function alive(context: Context): boolean {
  return !context.closed && context.fatalError === undefined;
}

/** Drops a kept context from the cache; closes it when nobody leases it. */
function drop(key: string, context: Context): void {
  if (kept.get(key) === context) kept.delete(key);
  if ((leases.get(context) ?? 0) === 0) destroy(context);
}

function destroy(context: Context): void {
  if (context.closed) return;
  try {
    context.destroy();
  } catch {
    // Already gone with its device.
  }
}

/** One more lease of `context`. */
function lease(context: Context): Context {
  leases.set(context, (leases.get(context) ?? 0) + 1);
  return context;
}

/** Why a shared context refuses `close()`. */
function closeRefusal(context: Context): Error {
  const n = leases.get(context) ?? 0;
  const error = new Error(
    `the context of ${context.deviceName} is shared by the CM's connections (${n} lease${n === 1 ? '' : 's'}): ` +
      'it cannot be closed through one of them; close the connection, or hand a context from openCmContext() back with releaseCmContext()',
  );
  return Object.assign(error, { code: 'EBUSY', syscall: 'ibv_close_device' });
}

/**
 * The Context a connection on `id` makes its verbs objects on: the kept one
 * of the id's device when the CM says it serves the id, else one just opened
 * (and kept). The caller holds one lease of it until {@link releaseCmContext}.
 */
export function cmContextFor(id: NativeCmId): Context {
  const provider = id.channel.provider;
  for (const [key, context] of kept) {
    if (!key.startsWith(`${provider}/`)) continue;
    if (!alive(context)) {
      drop(key, context);
      continue;
    }
    if (id.servesContext(context.native)) return lease(context);
  }
  return lease(adopt(id.openContext(), provider));
}

/** Keeps a context just opened on a CM id (replacing a dead one of the same device). */
function adopt(native: NativeContext, provider: string): Context {
  const key = keyOf(provider, native.deviceName);
  const before = kept.get(key);
  if (before) drop(key, before);
  const context = new Context(native);
  leases.set(context, 0);
  context.closeGuard = () => closeRefusal(context);
  kept.set(key, context);
  return context;
}

/**
 * One more lease of `context` when it is a shared CM context (a connection
 * on a PD the caller brought from `openCmContext()`); false for a context
 * of the caller's own.
 */
export function leaseIfShared(context: Context): boolean {
  if (!leases.has(context) || context.closed) return false;
  lease(context);
  return true;
}

/** Whether `context` was handed out here (its users share it: never close it for one of them). */
export function isSharedCmContext(context: Context): boolean {
  return leases.has(context);
}

/**
 * Ends one lease of a context from `openCmContext()` (each connection ends
 * its own on close). The last lease closes everything still made on the
 * context, in the safe teardown order (QPs, SRQs, CQs, channels, MRs, PDs),
 * and leaves the context kept for the next connection on its device (or
 * closes it, when it died or was dropped meanwhile). Call it once per
 * `openCmContext()`.
 * @throws TypeError for a context that is not a shared CM context; an
 *   Error with code `EINVAL` when it has no lease left (released twice).
 */
export function releaseCmContext(context: Context): void {
  if (!(context instanceof Context) || !leases.has(context)) {
    throw new TypeError('releaseCmContext() takes a context from openCmContext(); close() contexts you opened yourself');
  }
  const n = leases.get(context)!;
  if (n === 0) {
    throw Object.assign(new Error(`the context of ${context.deviceName} has no lease left: releaseCmContext() was called more often than openCmContext()`), {
      code: 'EINVAL',
    });
  }
  leases.set(context, n - 1);
  if (n > 1) return;
  const key = keyOf(providerOfKept(context), context.deviceName);
  if (kept.get(key) !== context || !alive(context)) {
    drop(key, context);
    return;
  }
  context.closeChildren();
}

/** The CM provider a kept context was filed under (the soft CM's contexts are on soft devices). */
function providerOfKept(context: Context): string {
  return context.provider === 'soft' ? 'soft' : 'rdmacm';
}

/**
 * Drops every kept context (DEVICE_REMOVAL on some id: which device went is
 * not in the event); those leased close with their last lease.
 */
export function forgetCmContexts(): void {
  for (const [key, context] of [...kept]) drop(key, context);
}

/** Leases held on kept contexts, by device (for `shutdownCm()`'s refusal). */
export function leasedCmContexts(): string[] {
  const out: string[] = [];
  for (const context of kept.values()) {
    const n = leases.get(context) ?? 0;
    if (n > 0) out.push(`${context.deviceName} (${n} lease${n === 1 ? '' : 's'})`);
  }
  return out;
}

/**
 * Opens (or finds) the kept context of the device `id` is bound to, as
 * binding a C listener opens its device in librdmacm: the first connection
 * then finds it open, and a listener's process has its descriptors from
 * the start. Nothing when the id has no single device (a wildcard address).
 */
export function keepCmContext(id: NativeCmId): void {
  let context: Context;
  try {
    context = cmContextFor(id);
  } catch {
    return;
  }
  // Ends the lease just taken; the last one would close what others made.
  leases.set(context, (leases.get(context) ?? 1) - 1);
}

/** Closes every kept context (none leased: see {@link leasedCmContexts}); later connections open them anew. */
export function closeKeptCmContexts(): void {
  for (const [key, context] of [...kept]) {
    kept.delete(key);
    destroy(context);
  }
}
