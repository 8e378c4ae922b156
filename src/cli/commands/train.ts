import { parseBackendRequest } from '../../compute/backend.js';
import { loadConfig } from '../../config/load.js';
import { InterruptedError } from '../../core/errors.js';
import { train } from '../../train/trainer.js';
import type { CommandOutput } from '../run.js';
import { checkQualityGates, parseGates } from '../gates.js';
import { budgetFlag, intFlag, optional } from '../flags.js';

export interface TrainCommandOptions {
  config: string;
  task: string;
  backend?: string;
  initFrom?: string;
  epochs?: unknown;
  search?: boolean;
  searchBudget?: unknown;
  artifacts?: string;
  failUnder?: string[];
  cwd?: string;
}

export async function trainCommand(opts: TrainCommandOptions): Promise<CommandOutput> {
  const gates = parseGates(opts.failUnder);
  const budget = optional(budgetFlag('--search-budget'), opts.searchBudget);
  const cfg = loadConfig(opts.config, { artifacts: opts.artifacts, cwd: opts.cwd });
  // --search-budget implies --search; the budget defaults to the task's model.search_budget.
  const search = opts.search || budget !== undefined ? { budget_seconds: budget ?? cfg.taskSpecs[opts.task]?.model.search_budget ?? 600 } : undefined;
  const r = await train({
    search,
    cfg,
    task: opts.task,
    backend: parseBackendRequest(opts.backend),
    init_from: opts.initFrom,
    epochs: optional(intFlag('--epochs', 1), opts.epochs),
  });
  const m = r.metrics;
  const result = {
    run_id: r.runId,
    run_dir: r.runDir,
    status: r.status,
    task: m.task,
    kind: m.kind,
    seconds: Math.round(r.seconds * 10) / 10,
    metrics: { val: m.val, test: m.test, baseline: m.baseline ? { val: m.baseline.val, test: m.baseline.test } : null, lift: m.lift, val_lift: m.val_lift },
    intervals: m.intervals ?? null,
    test_by_anchor: m.test_by_anchor ?? [],
    anchors: { train: m.anchors.train, val: m.anchors.val_anchors, test: m.anchors.test_anchors ?? [m.anchors.test], table: m.anchors.table ?? null },
    empty_anchors: m.empty_anchors ?? null,
    best_epoch: m.best_epoch,
    stopped: m.stopped,
    counts: m.counts,
    seeds: m.seeds,
    validation: { anchors: m.validation.anchors, examples: m.validation.examples, smoothing: m.validation.smoothing, small: m.validation.small, reason: m.validation.reason },
    search: m.search
      ? {
          chosen: m.search.chosen,
          budget_seconds: m.search.budget_seconds,
          variants: m.search.variants.map((v) => ({
            name: v.name,
            status: v.status,
            ...(v.reason ? { reason: v.reason } : {}),
            val: v.val ? pickMain(v.val, m.main_metric) : null,
            test: v.test ? pickMain(v.test, m.main_metric) : null,
            best_epoch: v.best_epoch ?? null,
            seconds: v.seconds ?? null,
          })),
        }
      : null,
    // binary/regression: every candidate of model.kind; ranking: the heuristic choice
    chosen: m.chosen ?? null,
    chosen_reason: m.chosen_reason ?? null,
    // ranking: the paired validation lifts the served list was judged on (train/ranking_choice.ts)
    ...(m.ranking_choice ? { ranking_choice: m.ranking_choice } : {}),
    // ranking: the learned re-ranker over the heuristics' and the model's candidates (train/rerank.ts)
    reranker: m.reranker
      ? { val: m.reranker.val, test: m.reranker.test, test_map_intervals: m.reranker.test_map_intervals, candidate_recall: m.reranker.candidate_recall, sources: m.reranker.sources, features: m.reranker.features, train_users: m.reranker.train_users, seconds: m.reranker.seconds }
      : null,
    candidates: m.model_choice
      ? Object.fromEntries(
          Object.entries(m.model_choice.candidates).map(([k, c]) => [
            k,
            { status: c.status, ...(c.reason ? { reason: c.reason } : {}), val: c.val ?? null, test: c.test ?? null, val_intervals: c.val_intervals ?? null, test_intervals: c.test_intervals ?? null, seconds: c.seconds ?? null },
          ]),
        )
      : null,
    seeds_per_s: m.epochs.length ? Math.round(m.epochs.reduce((a, e) => a + e.seeds_per_s, 0) / m.epochs.length) : 0,
  };
  if (r.status === 'interrupted') {
    throw new InterruptedError(`training interrupted; the best checkpoint (epoch ${m.best_epoch}) is usable`, { where: r.runDir });
  }
  checkQualityGates(gates, result.metrics, result);
  const mm = m.main_metric;
  const pick = (x: unknown): string => {
    const v = (x as Record<string, number> | null)?.[mm];
    return v === undefined ? '-' : v.toFixed(4);
  };
  const text = [
    `run ${r.runId} (${r.status}) in ${result.seconds}s: ${r.runDir}`,
    `  ${mm}: val ${pick(m.val)}  test ${pick(m.test)}${interval(m.intervals?.test[mm])}  no-graph baseline test ${pick(m.baseline?.test ?? null)}  lift ${m.lift === null ? '-' : m.lift.toFixed(4)}${interval(m.intervals?.lift)}${m.intervals && m.baseline ? ` (${m.intervals.lift_judgement})` : ''}`,
    `  test: ${m.counts.test.toLocaleString('en-US')} examples at ${(m.anchors.test_anchors ?? [m.anchors.test]).length} anchor(s) from ${m.anchors.test}${m.anchors.table ? ` (anchors from ${m.anchors.table})` : ''}`,
    `  best epoch ${m.best_epoch} of ${m.epochs.length}${m.validation.smoothing > 1 ? ` (${m.validation.smoothing}-epoch moving average)` : ''}; validation ${m.validation.examples} examples at ${m.validation.anchors.length} anchor(s); seed ${m.seeds.model}; ${result.seeds_per_s.toLocaleString('en-US')} seeds/s`,
    ...(m.search
      ? [
          `  search (budget ${m.search.budget_seconds}s): chose ${m.search.chosen}`,
          ...m.search.variants.map((v) =>
            v.status === 'trained'
              ? `    ${v.name === m.search!.chosen ? '*' : ' '} ${v.name.padEnd(16)} val ${pick(v.val)}  test ${pick(v.test)}  best epoch ${v.best_epoch}  ${v.seconds}s`
              : `      ${v.name.padEnd(16)} skipped: ${v.reason}`,
          ),
        ]
      : []),
    ...(m.model_choice
      ? [
          `  model.kind ${m.model_choice.setting}: serving the ${m.chosen} (${m.chosen_reason})`,
          ...Object.entries(m.model_choice.candidates).map(([k, c]) =>
            c.status === 'trained'
              ? `    ${k === m.chosen ? '*' : ' '} ${k.padEnd(7)} val ${pick(c.val)}${interval(c.val_intervals?.[mm])}  test ${pick(c.test)}${interval(c.test_intervals?.[mm])}  ${c.seconds}s`
              : `      ${k.padEnd(7)} skipped: ${c.reason}`,
          ),
        ]
      : []),
    ...(m.reranker
      ? [`  re-ranker: val ${pick(m.reranker.val)}  test ${pick(m.reranker.test)}${interval(m.reranker.test_map_intervals.reranker)}; serving ${m.chosen === 'model' ? 'the deep model' : m.chosen} (${m.chosen_reason})`]
      : []),
    ...(m.ranking_choice && !m.reranker ? [`  serving ${m.chosen === 'model' ? 'the deep model' : m.chosen} (${m.chosen_reason})`] : []),
    ...(m.intervals && 'test_map_by_list' in m.intervals ? [`  test ${mm} by list:${Object.entries((m.intervals as { test_map_by_list: Record<string, [number, number] | null> }).test_map_by_list).map(([name, x]) => ` ${name}${interval(x)}`).join(';')}`] : []),
  ].join('\n');
  return { result, text };
}

/** " [lo … hi]" of a 95% interval, or nothing when there is none. */
function interval(iv: [number, number] | null | undefined): string {
  return iv ? ` [95% ${iv[0].toFixed(4)} … ${iv[1].toFixed(4)}]` : '';
}

/** The main metric of a metrics record (null when absent, e.g. NaN AUROC serialized). */
function pickMain(m: unknown, metric: string): number | null {
  const v = (m as Record<string, number | null>)[metric];
  return v === undefined ? null : v;
}
