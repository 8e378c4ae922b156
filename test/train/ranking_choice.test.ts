/**
 * judgeRanking with the re-ranker's held-out validation examples (`judge`): the served list is judged on
 * those only, against the heuristic chosen on every validation example (best_baseline).
 */
import { describe, expect, it } from 'vitest';
import { judgeRanking } from '../../src/train/ranking_choice.js';
import type { Examples } from '../../src/task/task_spec.js';

const K = 3;
const N = 200;
// every example's one label is item 1
const ex = (): Examples => ({
  nodes: Int32Array.from({ length: N }, (_, e) => e),
  anchors: new Float64Array(N),
  labels: new Float32Array(N).fill(1),
  label_items: { offsets: Int32Array.from({ length: N + 1 }, (_, i) => i), items: new Int32Array(N).fill(1) },
});
/** n × K lists with item 1 at `rank(e)` (−1: not listed) */
const lists = (rank: (e: number) => number): Int32Array => {
  const out = new Int32Array(N * K).fill(9);
  for (let e = 0; e < N; e++) if (rank(e) >= 0) out[e * K + rank(e)] = 1;
  return out;
};
const judge = Array.from({ length: N / 2 }, (_, i) => 2 * i);

describe('judgeRanking on the judged validation examples', () => {
  // popularity: AP 1/3 everywhere; repeat: AP 1 on the judged examples only (0.5 over all); re-ranker: AP 1 everywhere
  const popularity = lists(() => 2);
  const repeat = lists((e) => (e % 2 === 0 ? 0 : -1));
  const reranker = lists(() => 0);
  const model = lists(() => 2);
  const all = { popularity: { val: popularity, test: popularity }, repeat: { val: repeat, test: repeat }, model: { val: model, test: model } };

  it('judges only the held-out examples, against the heuristic best on every validation example', () => {
    const d = { val: ex(), test: ex() };
    // repeat would beat popularity on the judged half; the heuristics' choice was made on all of validation
    const kept = judgeRanking(d, all, 'popularity', K, 0, judge);
    expect(kept.choice.simple_best).toBe('popularity');
    expect(kept.chosen).toBe('popularity');
    expect(kept.choice.val_users).toBe(N / 2);
    const served = judgeRanking(d, { ...all, reranker: { val: reranker, test: reranker } }, 'popularity', K, 0, judge);
    expect(served.chosen).toBe('reranker');
    expect(served.choice.val_lift.reranker![0]).toBeGreaterThan(0);
    // without judge, every heuristic competes on every validation example: repeat (0.5) beats popularity (1/3)
    const plain = judgeRanking(d, all, 'popularity', K, 0);
    expect(plain.choice.simple_best).toBe('repeat');
    expect(plain.choice.val_users).toBe(N);
  });
  it('a list that wins only on the examples it was fitted on is not served', () => {
    const d = { val: ex(), test: ex() };
    // perfect on the examples outside `judge` (where a re-ranker would fit), a miss on the judged ones
    const overfit = lists((e) => (e % 2 === 1 ? 0 : -1));
    const r = judgeRanking(d, { ...all, reranker: { val: overfit, test: overfit } }, 'popularity', K, 0, judge);
    expect(r.chosen).toBe('popularity');
    expect(judgeRanking(d, { ...all, reranker: { val: overfit, test: overfit } }, 'popularity', K, 0).chosen).not.toBe('popularity');
  });
});
