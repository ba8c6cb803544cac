import { busyCmChannels, closeKeptCmChannels } from './router';
import { closeKeptCmContexts, leasedCmContexts } from './shared-context';

/**
 * Closes what the native connection managers keep for the whole process
 * between connections: the CM event channel of each provider and the
 * shared device context of each CM device (their watchers are unref'd, so
 * they never hold the process open, but `jest --detectOpenHandles` lists
 * them as `rx-verbs:cm` and `rx-verbs:async`). Call it when the process (a
 * test file's `afterAll`, a worker about to end) is done with connections;
 * the next `listen()`, `connect()` or `openCmContext()` makes them anew.
 *
 * Closes nothing while something still uses them: listeners, connections
 * and connection attempts (ids on a CM channel) and `openCmContext()`
 * leases must be closed or released first.
 *
 * ```ts
 * afterAll(() => shutdownCm());
 * ```
 * @throws an Error with code `EBUSY` naming what is still in use (then
 *   nothing was closed).
 */
export function shutdownCm(): void {
  const busy = [...busyCmChannels(), ...leasedCmContexts()];
  if (busy.length > 0) {
    const error = new Error(`the connection manager is still in use: ${busy.join(', ')}; close listeners and connections and release openCmContext() leases first`);
    throw Object.assign(error, { code: 'EBUSY' });
  }
  closeKeptCmChannels();
  closeKeptCmContexts();
}
