/**
 * The options of rdma-core's pingpongs that ask the device for a feature
 * (on-demand paging, device memory, completion timestamps, the new send
 * API): which program has which, and what rx-verbs does with them. A mode
 * refuses an option its program does not have (a usage error, as getopt
 * would); an option rx-verbs cannot honour fails before anything is opened,
 * saying why, instead of running something else than what was asked.
 */
import { UsageError } from '../shared/usage-error';

/** The feature options, by long name, as the command line gives them. */
export interface FeatureFlags {
  odp: boolean;
  iodp: boolean;
  prefetch: boolean;
  ts: boolean;
  dm: boolean;
  new_send: boolean;
}

interface Feature {
  /** How the programs spell it. */
  readonly flag: string;
  /** The programs that have it (by mode: rc, srq, ud). */
  readonly modes: readonly ('rc' | 'srq' | 'ud')[];
  /** Why rx-verbs cannot run it; undefined: it can. */
  readonly unsupported?: string;
}

const NO_ODP =
  'rx-verbs registers pinned memory only: it has no on-demand-paging registration (IBV_ACCESS_ON_DEMAND, ibv_advise_mr) to ask the device for';

const FEATURES: Record<keyof FeatureFlags, Feature> = {
  odp: { flag: '-o/--odp', modes: ['rc', 'srq'], unsupported: NO_ODP },
  iodp: { flag: '-O/--iodp', modes: ['rc'], unsupported: NO_ODP },
  prefetch: { flag: '-P/--prefetch', modes: ['rc'], unsupported: NO_ODP },
  ts: {
    flag: '-t/--ts',
    modes: ['rc'],
    unsupported: 'rx-verbs polls completions with ibv_poll_cq, whose work completions carry no timestamp (that takes an extended CQ, which rx-verbs does not create)',
  },
  dm: { flag: '-j/--dm', modes: ['rc'], unsupported: 'rx-verbs does not allocate device memory (ibv_alloc_dm)' },
  // the new API's ibv_wr_send makes the same SEND on the wire: one post path serves both
  new_send: { flag: '-N/--new_send', modes: ['rc'] },
};

/** The mode's name in FEATURES, and its program's, from the options. */
function modeName(o: { srq: boolean; ud: boolean }): { mode: 'rc' | 'srq' | 'ud'; program: string } {
  if (o.srq) return { mode: 'srq', program: 'ibv_srq_pingpong (--srq)' };
  if (o.ud) return { mode: 'ud', program: 'ibv_ud_pingpong (--ud)' };
  return { mode: 'rc', program: 'ibv_rc_pingpong' };
}

/**
 * Throws a UsageError for a feature option the mode's program does not
 * have or a combination it refuses, and an Error with code `EOPNOTSUPP`
 * for one rx-verbs cannot honour.
 */
export function checkFeatures(flags: FeatureFlags, o: { srq: boolean; ud: boolean }): void {
  const { mode, program } = modeName(o);
  const given = (Object.keys(FEATURES) as (keyof FeatureFlags)[]).filter((k) => flags[k]);
  for (const k of given) {
    if (!FEATURES[k].modes.includes(mode)) throw new UsageError(`${FEATURES[k].flag} is not an option of ${program}`);
  }
  if (flags.prefetch && !flags.odp && !flags.iodp) throw new UsageError('prefetch is valid only with on-demand memory region (-o or -O)');
  if ((flags.odp || flags.iodp) && flags.dm) throw new UsageError("DM memory region can't be on demand");
  for (const k of given) {
    const why = FEATURES[k].unsupported;
    if (why !== undefined) throw Object.assign(new Error(`${FEATURES[k].flag} is not supported: ${why}`), { code: 'EOPNOTSUPP' });
  }
}
