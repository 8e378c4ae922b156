/**
 * What a training run reports about its split beyond the pooled metrics: a refusal naming the target
 * table and the setting when a split has no example at all, warnings with the numbers when the data is
 * too small to trust, bootstrap intervals of every test metric (and of the lift over the baseline), and
 * the metrics of each test anchor. The trainer calls these; `evaluate` shares the task-layer pieces.
 */
import { isoSeconds } from '../core/duration.js';
import { DataError } from '../core/errors.js';
import type { TaskSpec } from '../config/load.js';
import type { Metrics } from '../task/metrics.js';
import type { TaskSplit } from '../task/split.js';
import { judgeLift, liftInterval, metricIntervals, type Interval } from '../task/intervals.js';
import { metricsByAnchor, type AnchorMetrics } from '../task/per_anchor.js';
import { smallDataWarnings } from '../task/data_warnings.js';
import { objectiveFor } from '../task/objective/objective.js';
import type { TrainingTables } from './examples.js';

export interface TestFigures {
  intervals: {
    /** 95% bootstrap interval of each test metric */
    test: Record<string, Interval>;
    /** of the baseline's test metrics (null without a baseline) */
    baseline_test: Record<string, Interval> | null;
    /** of the lift over the baseline, paired on the same resampled examples */
    lift: Interval;
    /** the lift judged against its interval: better / worse only when the interval excludes 0 */
    lift_judgement: ReturnType<typeof judgeLift>;
    resamples_seed: number;
  };
  /** entity tasks: the metrics of each test anchor alone, oldest first */
  test_by_anchor: AnchorMetrics<Metrics>[];
  /** anchors whose label window holds no row of the target table (no examples there) */
  empty_anchors: { train: string[]; val: string[]; test: string[] };
}

/** Refuses a split without any example, naming the target table, its last time and the settings. */
export function checkSplits(task: TaskSpec, tables: TrainingTables, split: TaskSplit): void {
  for (const name of ['train', 'val', 'test'] as const) {
    if (tables[name].nodes.length > 0) continue;
    const anchors = name === 'train' ? split.trainAnchors : name === 'val' ? split.valAnchors : split.testAnchors;
    const empty = tables.empty_anchors?.[name].length ?? 0;
    const at =
      task.query.target.kind === 'fact'
        ? name === 'train'
          ? `rows up to ${isoSeconds(split.valAnchor)}${split.trainFrom !== null ? ` from ${isoSeconds(split.trainFrom)}` : ''}`
          : name === 'val'
            ? `rows in (${isoSeconds(split.valAnchor)}, ${isoSeconds(split.testAnchor)}]`
            : `rows after ${isoSeconds(split.testAnchor)}`
        : `${anchors.length} anchor(s) ${anchors.length ? `${isoSeconds(anchors[0]!)} … ${isoSeconds(anchors[anchors.length - 1]!)}` : ''}${empty ? `, ${empty} with no ${split.table} row in their window` : ''}`;
    const setting = name === 'train' ? 'train_anchors / train_from' : name === 'val' ? 'val_timestamp / val_anchors' : 'test_timestamp / test_anchors';
    throw new DataError(`task ${task.name} has no ${name} examples (${at}); ${split.table}'s last time is ${isoSeconds(split.dataEnd)}`, {
      where: `tasks.${task.name}.split`,
      hint: `move tasks.${task.name}.split.${setting} so their windows end by ${isoSeconds(split.dataEnd)}, and check the query's WHERE filter`,
    });
  }
}

/** Warnings about the split's size (training examples, classes in val and test) and its empty anchors. */
export function splitWarnings(task: TaskSpec, tables: TrainingTables): string[] {
  const out = smallDataWarnings(task.name, task.query.taskType, { train: tables.train.nodes.length, val: tables.val.labels, test: tables.test.labels }, { perRow: task.query.target.kind === 'fact' });
  const e = tables.empty_anchors;
  const n = e ? e.train.length + e.val.length + e.test.length : 0;
  if (e && n > 0) {
    out.push(`task ${task.name}: ${n} anchor(s) have no row of the target table in their label window and contribute no examples (train ${e.train.length}, val ${e.val.length}, test ${e.test.length})`);
  }
  return out;
}

/** Intervals and per-anchor metrics of a run's test predictions (binary and regression tasks). */
export function testFigures(task: TaskSpec, tables: TrainingTables, testPred: Float32Array, baselineTestPred: Float32Array | null, seed: number): TestFigures {
  const objective = objectiveFor(task.query.taskType);
  const t = tables.test;
  const lift = baselineTestPred ? liftInterval(objective.kind, objective.mainMetric, t.labels, testPred, baselineTestPred, { seed }) : null;
  return {
    intervals: {
      test: metricIntervals(objective.kind, t.labels, testPred, { seed }),
      baseline_test: baselineTestPred ? metricIntervals(objective.kind, t.labels, baselineTestPred, { seed }) : null,
      lift,
      lift_judgement: judgeLift(lift),
      resamples_seed: seed,
    },
    test_by_anchor: task.query.target.kind === 'entity' ? metricsByAnchor(t.anchors, t.labels, testPred, (l, p) => objective.metrics(l, p)) : [],
    empty_anchors: {
      train: (tables.empty_anchors?.train ?? []).map(isoSeconds),
      val: (tables.empty_anchors?.val ?? []).map(isoSeconds),
      test: (tables.empty_anchors?.test ?? []).map(isoSeconds),
    },
  };
}
