/** Levenshtein distance between two strings (two swapped letters count two). */
export function editDistance(a: string, b: string): number {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) {
      row[j] = Math.min(prev[j]! + 1, row[j - 1]! + 1, prev[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    prev = row;
  }
  return prev[b.length]!;
}

/**
 * The candidate a mistyped name was probably meant to be, for a "did you mean" hint: the nearest by edit distance
 * after `normalise` (case, punctuation…), at most `maxDistance` edits away; the first in order among equals; null if
 * none is near enough.
 */
export function nearestName(
  name: string,
  candidates: readonly string[],
  normalise: (s: string) => string = (s) => s,
  maxDistance = 2,
): string | null {
  const wanted = normalise(name);
  let best: { name: string; d: number } | null = null;
  for (const c of candidates) {
    const d = editDistance(wanted, normalise(c));
    if (d <= maxDistance && (best === null || d < best.d)) best = { name: c, d };
  }
  return best?.name ?? null;
}
