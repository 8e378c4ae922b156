/**
 * `model.kind: auto`: which of a task's trained candidates (the GNN, the trees on own columns + relational
 * aggregates, the hybrid trees that also read the GNN's embeddings) a run keeps. The best on validation
 * wins unless a cheaper candidate ties with it: the paired bootstrap interval of the best's lift over the
 * cheaper one (task/intervals.ts, same resampled validation examples) holds 0. A user should not pay for
 * a GNN at serving time when the trees are indistinguishable on the data the choice can see.
 */
import { round } from '../core/number.js';
import { judgeLift, liftInterval, type Interval } from '../task/intervals.js';
import type { ObjectiveKind } from '../task/objective/objective.js';

/** The candidate models of a binary or regression task, named as metrics.json and `model.kind` name them. */
export type CandidateKind = 'gbdt' | 'hybrid' | 'gnn';

/**
 * Cheapest first. The trees alone need no graph sampling at serving time; the hybrid needs the trees and
 * the GNN's embedding; the GNN needs the graph sampler and every layer. A tie goes to the earlier one.
 */
export const COST_ORDER: readonly CandidateKind[] = ['gbdt', 'hybrid', 'gnn'];

/** One trained candidate as the choice sees it: its validation predictions and the objective's score of them. */
export interface CandidateScore {
  kind: CandidateKind;
  /** the objective's validation score, higher is better (NaN when undefined, e.g. one class) */
  val_score: number;
  /** validation predictions, aligned with the labels */
  val_pred: ArrayLike<number>;
}

export interface ModelChoice {
  chosen: CandidateKind;
  chosen_reason: string;
  /** the best candidate on validation by its point score */
  best: CandidateKind;
  /** 95% interval of the best's validation lift over each other candidate (positive: the best is ahead) */
  val_lift_vs_best: Partial<Record<CandidateKind, Interval>>;
}

export interface ChoiceInput {
  kind: ObjectiveKind;
  metric: { name: string; higherIsBetter: boolean };
  labels: ArrayLike<number>;
  candidates: CandidateScore[];
  seed: number;
}

/** Picks the candidate to keep (see the file comment); candidates need not come in cost order. */
export function chooseModel(input: ChoiceInput): ModelChoice {
  const { candidates } = input;
  if (candidates.length === 0) throw new Error('chooseModel needs at least one candidate');
  const byCost = [...candidates].sort((a, b) => COST_ORDER.indexOf(a.kind) - COST_ORDER.indexOf(b.kind));
  const scored = byCost.filter((c) => Number.isFinite(c.val_score));
  if (scored.length === 0) {
    // No validation score to compare (one class in validation): the deep model, as a run without choice would.
    const fallback = byCost.find((c) => c.kind === 'gnn') ?? byCost[0]!;
    return { chosen: fallback.kind, best: fallback.kind, val_lift_vs_best: {}, chosen_reason: `no candidate has a validation ${input.metric.name}, so the ${label(fallback.kind)} is kept` };
  }
  // The strict maximum; on equal scores the cheaper (earlier) stays.
  const best = scored.reduce((a, b) => (b.val_score > a.val_score ? b : a));
  const lifts: Partial<Record<CandidateKind, Interval>> = {};
  for (const c of byCost) {
    if (c === best) continue;
    lifts[c.kind] = Number.isFinite(c.val_score) ? liftInterval(input.kind, input.metric, input.labels, best.val_pred, c.val_pred, { seed: input.seed }) : null;
  }
  const point = (c: CandidateScore) => `${input.metric.name} ${round(scoreOf(c, input.metric.higherIsBetter), 4)}`;
  for (const c of byCost) {
    if (c === best) break;
    const lift = lifts[c.kind] ?? null;
    const j = judgeLift(lift);
    // 'worse' (the cheaper one ahead on most resamples, behind on the point score) is no reason to pay more either.
    if (j === 'tie' || j === 'worse') {
      return {
        chosen: c.kind,
        best: best.kind,
        val_lift_vs_best: lifts,
        chosen_reason: `the ${label(c.kind)} (val ${point(c)}) ${c.kind === 'gbdt' ? 'tie' : 'ties'} with the best, the ${label(best.kind)} (val ${point(best)}), within the 95% interval of the difference [${lift![0]}, ${lift![1]}], and ${c.kind === 'gbdt' ? 'are' : 'is'} cheaper to serve`,
      };
    }
  }
  const others = byCost
    .filter((c) => c !== best)
    .map((c) => {
      const lift = lifts[c.kind] ?? null;
      const how = judgeLift(lift) === 'better' ? 'behind beyond the 95% interval' : lift ? `within the interval [${lift[0]}, ${lift[1]}] but not cheaper` : 'not comparable';
      return `the ${label(c.kind)} ${point(c)}, ${how}`;
    });
  return { chosen: best.kind, best: best.kind, val_lift_vs_best: lifts, chosen_reason: `the ${label(best.kind)} ${best.kind === 'gbdt' ? 'are' : 'is'} the best on validation (${point(best)})${others.length ? `; ${others.join('; ')}` : ''}` };
}

/** The metric's own value back from the objective's score (MAE's score is its negative). */
function scoreOf(c: CandidateScore, higherIsBetter: boolean): number {
  return higherIsBetter ? c.val_score : -c.val_score;
}

/** How a report sentence names a candidate. */
export function label(kind: CandidateKind): string {
  return kind === 'gbdt' ? 'trees (own columns + aggregates)' : kind === 'hybrid' ? 'hybrid (trees + GNN embeddings)' : 'GNN';
}
