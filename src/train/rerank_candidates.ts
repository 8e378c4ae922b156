/**
 * Candidate generation for the learned re-ranker (train/rerank.ts): the union of several top-N lists per
 * user (each heuristic's and the deep model's), taken rank by rank across the sources so that every
 * source's best items survive the cap, without the user's seen items when the run excludes them.
 *
 * Each candidate keeps its rank and score in every source (−1 / NaN where that source did not list it):
 * the re-ranker's features read them.
 */

/** One source's lists: `width` slots per user (user-major), −1 where its list ran out. */
export interface SourceLists {
  name: string;
  width: number;
  ids: Int32Array;
  scores: Float32Array;
}

/** Per-user candidates (CSR over users) with, per candidate and source, its rank (0-based, −1: absent) and score (NaN: absent). */
export interface Candidates {
  sources: string[];
  ptr: Int32Array;
  items: Int32Array;
  /** [candidate × sources] */
  ranks: Int32Array;
  /** [candidate × sources] */
  scores: Float32Array;
}

/**
 * The union of `sources`' lists for `users` users, at most `cap` per user: rank 0 of every source (in
 * source order), then rank 1, …; duplicates and the items `exclude(j)` returns for user row j are skipped.
 */
export function candidateUnion(sources: SourceLists[], users: number, cap: number, exclude?: (j: number) => Set<number> | null): Candidates {
  const S = sources.length;
  const ptr = new Int32Array(users + 1);
  const items: number[] = [];
  const ranks: number[] = [];
  const scores: number[] = [];
  const depth = Math.max(0, ...sources.map((s) => s.width));
  const at = new Map<number, number>();
  for (let j = 0; j < users; j++) {
    at.clear();
    const skip = exclude?.(j) ?? null;
    const base = items.length;
    for (let r = 0; r < depth; r++) {
      sources.forEach((s, si) => {
        if (r >= s.width) return;
        const item = s.ids[j * s.width + r]!;
        if (item < 0 || skip?.has(item)) return;
        let c = at.get(item);
        if (c === undefined) {
          if (items.length - base >= cap) return;
          c = items.length - base;
          at.set(item, c);
          items.push(item);
          for (let t = 0; t < S; t++) {
            ranks.push(-1);
            scores.push(Number.NaN);
          }
        }
        const row = (base + c) * S + si;
        if (ranks[row] === -1) {
          ranks[row] = r;
          scores[row] = s.scores[j * s.width + r]!;
        }
      });
    }
    ptr[j + 1] = items.length;
  }
  return { sources: sources.map((s) => s.name), ptr, items: Int32Array.from(items), ranks: Int32Array.from(ranks), scores: Float32Array.from(scores) };
}
