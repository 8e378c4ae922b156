/**
 * Ranking targets in PQL (`LIST_DISTINCT(t.fk, a, b, unit) RANK TOP k`), their errors, the ranking metrics
 * against hand-computed cases, and the sampled-softmax loss against its formula.
 */
import { tf } from '../../src/core/tf.js';
import { beforeAll, describe, expect, it } from 'vitest';
import { selectBackend } from '../../src/compute/backend.js';
import { parseQuery, PqlSyntaxError } from '../../src/task/pql.js';
import { rankingMetrics } from '../../src/task/metrics.js';
import { objectiveFor } from '../../src/task/objective/objective.js';
import { sampledSoftmax } from '../../src/task/objective/ranking.js';

beforeAll(async () => {
  await selectBackend('wasm');
});

const Q = 'PREDICT LIST_DISTINCT(transactions.article_id, 0, 7, days) RANK TOP 12 FOR EACH customers.customer_id';

describe('parsing a ranking query', () => {
  it('LIST_DISTINCT … RANK TOP 12 is a ranking task over the listed foreign key, window (0, 7 days]', () => {
    const q = parseQuery(Q);
    expect(q.taskType).toBe('ranking');
    expect(q.target).toMatchObject({ kind: 'entity', top_k: 12, compare: null, aggregate: { fn: 'LIST_DISTINCT', table: 'transactions', column: 'article_id', start: 0, end: 7 * 86400 } });
    expect(q.entity).toEqual({ kind: 'column', table: 'customers', column: 'customer_id' });
  });

  it('takes a WHERE over past windows, lower-case keywords and hours', () => {
    const q = parseQuery('predict list_distinct(transactions.article_id, 0, 48, hours) rank top 5 for each customers.customer_id where count(transactions.*, -7, 0, days) > 0');
    expect(q.taskType).toBe('ranking');
    expect(q.target).toMatchObject({ top_k: 5, aggregate: { end: 48 * 3600 } });
    expect(q.where).not.toBeNull();
  });

  it('the other aggregates keep top_k null and their kinds', () => {
    expect(parseQuery('PREDICT COUNT(transactions.*, 0, 7, days) FOR EACH customers.customer_id').target).toMatchObject({ top_k: null });
    expect(parseQuery('PREDICT COUNT(transactions.*, 0, 7, days) = 0 FOR EACH customers.customer_id').taskType).toBe('binary');
  });

  it.each([
    ['missing RANK TOP k', 'PREDICT LIST_DISTINCT(transactions.article_id, 0, 7, days) FOR EACH customers.customer_id', /expected RANK TOP k after LIST_DISTINCT\(transactions.article_id/],
    ['RANK without TOP', 'PREDICT LIST_DISTINCT(transactions.article_id, 0, 7, days) RANK 12 FOR EACH customers.customer_id', /expected TOP/],
    ['k = 0', 'PREDICT LIST_DISTINCT(transactions.article_id, 0, 7, days) RANK TOP 0 FOR EACH customers.customer_id', /1 ≤ k ≤ 1000 for RANK TOP k \(got 0\)/],
    ['k not whole', 'PREDICT LIST_DISTINCT(transactions.article_id, 0, 7, days) RANK TOP 2.5 FOR EACH customers.customer_id', /whole number k/],
    ['k too large', 'PREDICT LIST_DISTINCT(transactions.article_id, 0, 7, days) RANK TOP 5000 FOR EACH customers.customer_id', /got 5000/],
    ['a comparison instead of a rank', 'PREDICT LIST_DISTINCT(transactions.article_id, 0, 7, days) > 2 FOR EACH customers.customer_id', /a list of items is ranked, not compared/],
    ['"*" as the item column', 'PREDICT LIST_DISTINCT(transactions.*, 0, 7, days) RANK TOP 12 FOR EACH customers.customer_id', /the item column for LIST_DISTINCT/],
    ['RANK TOP after COUNT', 'PREDICT COUNT(transactions.*, 0, 7, days) RANK TOP 12 FOR EACH customers.customer_id', /RANK TOP k ranks the items of LIST_DISTINCT/],
    ['a past window', 'PREDICT LIST_DISTINCT(transactions.article_id, -7, 0, days) RANK TOP 12 FOR EACH customers.customer_id', /ends after the anchor/],
    ['LIST_DISTINCT in WHERE', 'PREDICT COUNT(transactions.*, 0, 7, days) FOR EACH customers.customer_id WHERE LIST_DISTINCT(transactions.article_id, -7, 0, days) > 0', /LIST_DISTINCT is a ranking target, not a filter/],
  ])('%s fails with the position and what was expected', (_, text, message) => {
    expect(() => parseQuery(text)).toThrow(PqlSyntaxError);
    expect(() => parseQuery(text)).toThrow(message);
  });
});

/** CSR from a list of label lists. */
function lists(l: number[][]): { offsets: Int32Array; items: Int32Array } {
  const offsets = new Int32Array(l.length + 1);
  l.forEach((x, i) => (offsets[i + 1] = offsets[i]! + x.length));
  return { offsets, items: Int32Array.from(l.flat()) };
}

describe('MAP@k, recall@k and NDCG@k against hand-computed values', () => {
  it('one user, labels {1, 3}, ranked [1, 2, 3], k = 3', () => {
    // AP = (1/1 + 2/3) / min(2, 3) = 0.833333; recall = 2/2; DCG = 1 + 1/log2(4) = 1.5, IDCG = 1 + 1/log2(3) = 1.630930
    const m = rankingMetrics(lists([[1, 3]]), Int32Array.from([1, 2, 3]), 3);
    expect(m.map_at_k).toBeCloseTo(0.833333, 5);
    expect(m.recall_at_k).toBe(1);
    expect(m.ndcg_at_k).toBeCloseTo(1.5 / 1.63093, 4);
    expect(m).toMatchObject({ k: 3, n: 1 });
  });

  it('AP divides by min(|labels|, k): 5 labels, k = 2, both top items right → 1', () => {
    const m = rankingMetrics(lists([[1, 2, 3, 4, 5]]), Int32Array.from([2, 1]), 2);
    expect(m.map_at_k).toBe(1);
    expect(m.recall_at_k).toBeCloseTo(0.4, 6);
    expect(m.ndcg_at_k).toBe(1);
  });

  it('averages over users; a miss-only list scores 0; −1 slots and repeated ids count as misses', () => {
    // user 0: labels {7}, ranked [−1, 7] → AP = 1/2, recall 1, NDCG = (1/log2 3) / 1 = 0.63093
    // user 1: labels {4}, ranked [5, 5] → 0
    // user 2: labels {9, 8}, ranked [9, 9] → the second 9 is a repeat: AP = 1/2, recall 1/2, NDCG = 1 / (1 + 0.63093)
    const m = rankingMetrics(lists([[7], [4], [8, 9]]), Int32Array.from([-1, 7, 5, 5, 9, 9]), 2);
    expect(m.map_at_k).toBeCloseTo((0.5 + 0 + 0.5) / 3, 5);
    expect(m.recall_at_k).toBeCloseTo((1 + 0 + 0.5) / 3, 5);
    expect(m.ndcg_at_k).toBeCloseTo((0.63093 + 0 + 1 / 1.63093) / 3, 4);
    expect(m.n).toBe(3);
  });

  it('refuses a ranked array of the wrong length', () => {
    expect(() => rankingMetrics(lists([[1]]), Int32Array.from([1, 2, 3]), 2)).toThrow(/3 ranked ids for 1 examples × k = 2/);
  });
});

describe('the ranking objective', () => {
  it('is the third kind behind the seam: sampled softmax, MAP@k first, raw scores out', () => {
    const o = objectiveFor('ranking');
    expect(o.losses).toEqual(['sampled_softmax']);
    expect(o.mainMetric).toEqual({ name: 'map_at_k', higherIsBetter: true });
    expect(o.transform).toBe('score');
    expect(o.degenerate(Float32Array.from([0, 0]))).toMatch(/nothing to rank/);
    expect(o.degenerate(Float32Array.from([0, 2]))).toBeNull();
    expect(() => o.metrics([1], [1])).toThrow(/top-k lists/);
  });

  it('sampled softmax = mean over rows with a positive of logsumexp − mean positive logit', () => {
    const logits = [
      [1, 2, 3],
      [0.5, -1, 2],
      [4, 4, 4],
    ];
    const pos = [
      [0, 1, 1],
      [1, 0, 0],
      [0, 0, 0],
    ];
    const lse = (r: number[]) => Math.log(r.reduce((a, x) => a + Math.exp(x), 0));
    const expected = (lse(logits[0]!) - 2.5 + (lse(logits[1]!) - 0.5)) / 2;
    const loss = sampledSoftmax(tf.tensor2d(logits), tf.tensor2d(pos));
    expect(loss.dataSync()[0]).toBeCloseTo(expected, 5);
    loss.dispose();
  });
});
