/**
 * What a ranking run serves, and the intervals of its test figures. Popularity and the other heuristics,
 * the deep model and the re-ranker are judged on every validation user of every validation anchor with
 * the paired bootstrap of `chooseRanking` (train/ranking_intervals.ts): a user never gets a more complex
 * list than the simplest method's unless it wins beyond the noise of the validation users.
 */
import type { Interval } from '../task/intervals.js';
import { judgeLift } from '../task/intervals.js';
import type { Examples } from '../task/task_spec.js';
import { RANKING_BASELINES, type RankingBaseline } from './ranking_baselines.js';
import { chooseRanking, meanInterval, perUserRanking, rankingIntervals, subset, subsetLists, type RankingCandidate } from './ranking_intervals.js';

/** What a ranking run serves: the deep model, the learned re-ranker over the heuristics' candidates (train/rerank.ts), or a heuristic. */
export type ServedChoice = 'model' | 'reranker' | RankingBaseline;

/** Cost tiers: a heuristic before the model before the re-ranker (which needs the model and the heuristics). */
const TIER: Record<'heuristic' | 'model' | 'reranker', number> = { heuristic: 0, model: 1, reranker: 2 };

/** `choice` in metrics.json: how the served list was judged. */
export interface RankingChoiceRecord {
  rule: 'paired_bootstrap_val_map';
  /** the best heuristic on validation, what the model and the re-ranker must beat */
  simple_best: ServedChoice;
  /** 95% paired interval of each more complex list's validation MAP@k lift over the list it was judged against */
  val_lift: Record<string, Interval>;
  /** the validation examples judged on: all, or those the re-ranker did not fit on */
  val_users: number;
}

/** `intervals` of a ranking run: the model's test metrics, the best heuristic's, the lift over it, and every heuristic's test MAP@k. */
export interface RankingIntervalsRecord {
  test: Record<string, Interval>;
  baseline_test: Record<string, Interval>;
  lift: Interval;
  lift_judgement: ReturnType<typeof judgeLift>;
  /** each heuristic's (and the re-ranker's, when fitted) test MAP@k interval */
  test_map_by_list: Record<string, Interval>;
  resamples_seed: number;
}

/** Each list's top-k of the validation and test examples, n × k in example order. */
export type SplitLists = Partial<Record<ServedChoice, { val: Int32Array; test: Int32Array }>>;

/**
 * Chooses the served list and computes the test intervals from every candidate's lists. `judge` (indices
 * of validation examples) restricts the choice to the examples no list was fitted on: the re-ranker fits
 * on the rest of the validation examples (train/rerank.ts's splitValidation). The heuristic it must beat
 * is then `bestBaseline`, the best on every validation example, where the heuristics' settings were chosen.
 */
export function judgeRanking(
  data: { val: Examples; test: Examples },
  lists: SplitLists,
  bestBaseline: RankingBaseline,
  k: number,
  seed: number,
  judge?: number[],
): { chosen: ServedChoice; chosen_reason: string; choice: RankingChoiceRecord; intervals: RankingIntervalsRecord } {
  const judged = judge ? subset(data.val, judge) : data.val;
  const valLabels = judged.label_items!;
  const testLabels = data.test.label_items!;
  const candidates: RankingCandidate<ServedChoice>[] = [];
  for (const [name, l] of Object.entries(lists) as [ServedChoice, { val: Int32Array; test: Int32Array }][]) {
    const tier = name === 'model' ? TIER.model : name === 'reranker' ? TIER.reranker : TIER.heuristic;
    // The heuristics' own choice (best_baseline) was made on every validation example, like their settings.
    if (judge && tier === TIER.heuristic && name !== bestBaseline) continue;
    candidates.push({ name, tier, val_ap: perUserRanking(valLabels, judge ? subsetLists(l.val, judge, k) : l.val, k).map_at_k });
  }
  const c = chooseRanking(candidates, k, seed);
  const test: Record<string, ReturnType<typeof perUserRanking>> = {};
  for (const [name, l] of Object.entries(lists)) test[name] = perUserRanking(testLabels, l!.test, k);
  const model = test.model!;
  const base = test[bestBaseline]!;
  const lift = meanInterval(model.map_at_k, seed, base.map_at_k);
  const test_map_by_list: Record<string, Interval> = {};
  for (const name of [...RANKING_BASELINES, 'reranker']) if (test[name]) test_map_by_list[name] = meanInterval(test[name]!.map_at_k, seed);
  return {
    chosen: c.chosen,
    chosen_reason: c.chosen_reason,
    choice: { rule: 'paired_bootstrap_val_map', simple_best: c.simple_best, val_lift: c.val_lift, val_users: judged.nodes.length },
    intervals: { test: rankingIntervals(model, seed), baseline_test: rankingIntervals(base, seed), lift, lift_judgement: judgeLift(lift), test_map_by_list, resamples_seed: seed },
  };
}
