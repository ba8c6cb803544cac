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
 * A kept context never holds the process open (its async watcher is
 * unref'd) and goes with the environment (the addon's cleanup hook closes
 * it on exit, in worker threads too). One that died (closed, DEVICE_FATAL,
 * its device removed, or no longer the CM's own) is dropped from the cache
 * and closed once its last user is gone.
 * @packageDocumentation
 */
import type { NativeCmId, NativeContext } from '../native/binding';
import { Context } from '../verbs/context';

/** Users of each context handed out here (a WeakMap: entries go with their contexts). */
const users = new WeakMap<Context, number>();
/** The kept context of each CM device (`provider/device`). */
const kept = new Map<string, Context>();

const keyOf = (provider: string, device: string) => `${provider}/${device}`;

/** Whether a kept context can still make objects (its async watcher has applied any DEVICE_FATAL). */
function alive(context: Context): boolean {
  return !context.closed && context.fatalError === undefined;
}

/** Drops a kept context from the cache; closes it when nobody uses it. */
function drop(key: string, context: Context): void {
  if (kept.get(key) === context) kept.delete(key);
  if ((users.get(context) ?? 0) === 0 && !context.closed) {
    try {
      context.close();
    } catch {
      // Already gone with its device.
    }
  }
}

/** One more user of `context`. */
function use(context: Context): Context {
  users.set(context, (users.get(context) ?? 0) + 1);
  return context;
}

/**
 * The Context a connection on `id` makes its verbs objects on: the kept one
 * of the id's device when the CM says it serves the id, else one just opened
 * (and kept). The caller is one user of it until {@link releaseCmContext}.
 */
export function cmContextFor(id: NativeCmId): Context {
  const provider = id.channel.provider;
  for (const [key, context] of kept) {
    if (!key.startsWith(`${provider}/`)) continue;
    if (!alive(context)) {
      drop(key, context);
      continue;
    }
    if (id.servesContext(context.native)) return use(context);
  }
  return use(adopt(id.openContext(), provider));
}

/** Keeps a context just opened on a CM id (replacing a dead one of the same device). */
function adopt(native: NativeContext, provider: string): Context {
  const key = keyOf(provider, native.deviceName);
  const before = kept.get(key);
  if (before) drop(key, before);
  const context = new Context(native);
  users.set(context, 0);
  kept.set(key, context);
  return context;
}

/** Whether `context` was handed out here (its users share it: never close it for one of them). */
export function isSharedCmContext(context: Context): boolean {
  return users.has(context);
}

/**
 * One user of a context from {@link cmContextFor} (or `openCmContext()`) is
 * done with it. The context stays open for the next connection on its
 * device unless it was dropped meanwhile, then the last user closes it.
 */
export function releaseCmContext(context: Context): void {
  const n = users.get(context);
  if (n === undefined) {
    context.close();
    return;
  }
  if (n > 0) users.set(context, n - 1);
  const key = keyOf(providerOfKept(context), context.deviceName);
  if (kept.get(key) !== context || context.closed) drop(key, context);
}

/** The CM provider a kept context was filed under (the soft CM's contexts are on soft devices). */
function providerOfKept(context: Context): string {
  return context.provider === 'soft' ? 'soft' : 'rdmacm';
}

/**
 * Drops every kept context (DEVICE_REMOVAL on some id: which device went is
 * not in the event); those in use close with their last user.
 */
export function forgetCmContexts(): void {
  for (const [key, context] of [...kept]) drop(key, context);
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
  releaseCmContext(context);
}
