/**
 * The one slow-machine factor. Tests wait for conditions rather than for
 * time; the few bounds that remain (a deadline after which waiting is
 * pointless, a timer's allowed lag) are multiplied by SLOW, so a slower
 * machine stretches every one of them alike instead of failing at random.
 *
 * RX_VERBS_SLOW=<n> sets it. Without it: 4 under the sanitizer build
 * (RX_VERBS_ASAN, which `npm run test:asan` sets: several times slower),
 * 2 in CI (a shared 2-core machine), else 1.
 */
function slowFactor(env: NodeJS.ProcessEnv): number {
  const asked = Number(env.RX_VERBS_SLOW);
  if (env.RX_VERBS_SLOW !== undefined && Number.isFinite(asked) && asked > 0) return asked;
  if (env.RX_VERBS_ASAN) return 4;
  if (env.CI) return 2;
  return 1;
}

/** The factor every remaining time bound is multiplied by (see above). */
export const SLOW = slowFactor(process.env);

/** `ms` stretched by the slow-machine factor. */
export const scaled = (ms: number): number => Math.ceil(ms * SLOW);
