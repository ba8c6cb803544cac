/** Log-spaced histograms of latency samples: the distribution the report page draws. */

/** One bucket: samples with `lowUs <= x < highUs`. */
export interface HistogramBucket {
  lowUs: number;
  highUs: number;
  count: number;
}

/**
 * Buckets per factor of ten. Twenty keeps each bucket ~12% wide: fine enough
 * to show a second mode (a scheduler tick, a spin that gave up) and coarse
 * enough that a 30k-sample run fills them without noise.
 */
export const BUCKETS_PER_DECADE = 20;

const edge = (k: number): number => Number((10 ** (k / BUCKETS_PER_DECADE)).toPrecision(4));

/**
 * The samples (us, any order) counted into log-spaced buckets, from the
 * smallest sample's bucket to the largest's; empty buckets in between are
 * kept so the shape of the gaps is drawn too. Samples at or below zero (a
 * clock that did not move) count in the lowest bucket.
 */
export function logHistogram(us: ArrayLike<number>): HistogramBucket[] {
  if (us.length === 0) return [];
  const index = (x: number) => Math.floor(Math.log10(x) * BUCKETS_PER_DECADE);
  let lo = Infinity;
  let hi = -Infinity;
  for (let i = 0; i < us.length; i++) {
    if (us[i] > 0) {
      lo = Math.min(lo, index(us[i]));
      hi = Math.max(hi, index(us[i]));
    }
  }
  if (lo === Infinity) return [{ lowUs: 0, highUs: 0, count: us.length }];
  const counts = new Array<number>(hi - lo + 1).fill(0);
  for (let i = 0; i < us.length; i++) counts[us[i] > 0 ? index(us[i]) - lo : 0]++;
  return counts.map((count, i) => ({ lowUs: edge(lo + i), highUs: edge(lo + i + 1), count }));
}
