/**
 * The report's "Ranking baselines" section shows what a ranking run records about its heuristics: which
 * to serve and why (`chosen`, `chosen_reason`), each heuristic's row, and the choices made on validation.
 */
import { describe, expect, it } from 'vitest';
import { rankingBaselinesSection } from '../../src/report/sections/headline.js';
import type { TrainReport } from '../../src/report/model.js';

const m = (map: number) => ({ map_at_k: map, recall_at_k: map * 2, ndcg_at_k: map * 1.5, k: 12, n: 100 });

function report(chosen: string, reason: string): TrainReport {
  const metrics = {
    task: 'next_rated',
    kind: 'ranking',
    main_metric: 'map_at_k',
    val: m(0.05),
    test: m(0.04),
    baselines: { popularity: { val: m(0.15), test: m(0.13) }, repeat: { val: m(0), test: m(0) }, affinity: { val: m(0.12), test: m(0.11) } },
    best_baseline: 'popularity',
    heuristics: {
      exclude_seen: { exclude: true, reason: 'only 0.00% of the training windows\' label items were seen before by their user (< 1%): seen items are excluded' },
      popularity: { window: '90d' },
      affinity: { column: 'genre' },
      repeat_affinity: { repeat_weight: 0.25 },
    },
    chosen,
    chosen_reason: reason,
  };
  return { kind: 'train', taskKind: 'ranking', metrics, header: {}, modelSummary: null, init_from: null } as unknown as TrainReport;
}

describe('ranking baselines section', () => {
  it('names the heuristic to serve when it beats the model, with the reason', () => {
    const html = rankingBaselinesSection(report('popularity', 'the best heuristic beats the model on validation (validation MAP@12 0.0500 for the model, 0.1500 for popularity)'))!;
    expect(html).toContain('data-metric="chosen" data-value="popularity"');
    expect(html).toContain('Serve: popularity');
    expect(html).toContain('0.1500 for popularity');
    expect(html).toContain('popularity (best on val)');
    expect(html).toContain('affinity column genre');
    expect(html).toContain('Popularity window 90d');
    expect(html).toContain('seen items are excluded');
  });
  it('shows the re-ranker\'s row and the test intervals, and names it when it is served', () => {
    const r = report('reranker', 'the re-ranker beats the model and the best heuristic on validation');
    (r.metrics as unknown as Record<string, unknown>).reranker = { val: m(0.2), test: m(0.18), test_map_intervals: { reranker: [0.16, 0.2], popularity: [0.11, 0.15] } };
    const html = rankingBaselinesSection(r)!;
    expect(html).toContain('Serve: the re-ranker');
    expect(html).toContain('data-metric="ranking.reranker.map_at_k"');
    expect(html).toContain('reranker 0.1600–0.2000; popularity 0.1100–0.1500');
  });
  it('says the deep recommender when the model wins', () => {
    const html = rankingBaselinesSection(report('model', 'the model beats the best heuristic on validation'))!;
    expect(html).toContain('Serve: the deep recommender');
    expect(html).not.toContain('Serve: popularity');
  });
});
