/**
 * One verbs Context per librdmacm device. librdmacm lends every id on a
 * device the same `ibv_context`, and a context's async events have exactly
 * one reader (a second watcher of the same descriptor is refused, EEXIST):
 * so every connection on that device shares one Context, counted, and the
 * last one to go closes it. The soft CM's contexts are the soft device's
 * own and cheap: each connection keeps its own.
 * @packageDocumentation
 */
import type { NativeContext } from '../native/binding';
import { Context } from '../verbs/context';

const shared = new Map<string, { context: Context; users: number }>();
const sharedContexts = new WeakSet<Context>();

/** The Context for a native context just opened on a CM id; `native` is closed when one is shared already. */
export function adoptCmContext(native: NativeContext, provider: string): Context {
  if (provider !== 'rdmacm') return new Context(native);
  const entry = shared.get(native.deviceName);
  if (entry && !entry.context.closed) {
    native.close();
    entry.users++;
    return entry.context;
  }
  const context = new Context(native);
  shared.set(native.deviceName, { context, users: 1 });
  sharedContexts.add(context);
  return context;
}

/** Whether `context` is shared by the connections of a librdmacm device. */
export function isSharedCmContext(context: Context): boolean {
  return sharedContexts.has(context);
}

/** One user of a shared context is done with it; the last one closes it. */
export function releaseCmContext(context: Context): void {
  const entry = shared.get(context.deviceName);
  if (!entry || entry.context !== context) {
    context.close();
    return;
  }
  if (--entry.users > 0) return;
  shared.delete(context.deviceName);
  context.close();
}
