/** "Did you mean": the known name nearest a mistyped one. */

/**
 * The name in `known` nearest `typed` by edit distance, if it is near
 * enough to be a typo (at most 2 edits, and fewer than half the letters),
 * else the one name `typed` begins (`--dev` for `--device`); undefined
 * otherwise, so a suggestion is never a guess.
 */
export function closest(typed: string, known: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestDistance = Math.min(2, Math.floor((typed.length - 1) / 2));
  for (const name of known) {
    const d = distance(typed, name);
    if (d <= bestDistance && (best === undefined || d < distance(typed, best))) {
      best = name;
      bestDistance = d;
    }
  }
  if (best !== undefined || typed.length < 2) return best;
  const longer = known.filter((name) => name.startsWith(typed));
  return longer.length === 1 ? longer[0] : undefined;
}

/** Levenshtein distance, one row at a time. */
function distance(a: string, b: string): number {
  let row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const next = [i];
    for (let j = 1; j <= b.length; j++) {
      next[j] = Math.min(row[j] + 1, next[j - 1] + 1, row[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    row = next;
  }
  return row[b.length];
}
