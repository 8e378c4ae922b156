/**
 * The tree model of a task, as one stage function: the task's training tables (the same examples and
 * anchors the GNN trains on), the entity's own columns plus relational aggregates (graph/aggregates.ts)
 * computed strictly before each anchor, gradient-boosted trees fitted with early stopping on the
 * validation split, and validation and test metrics from the task's objective. It is the "GBDT on own
 * columns + aggregates" candidate of `model: auto` (docs/models.md); the trainer does not call it yet.
 */
import type { TaskSpec } from '../config/load.js';
import { NotImplementedError } from '../core/errors.js';
import { lit, q, withDuck } from '../data/duck.js';
import { rowsPath, type GraphManifest } from '../artifacts/graph_manifest.js';
import { computeAggregates, planAggregates, readAggregates, type AggregateOptions, type AggregatePlan } from '../graph/aggregates.js';
import { GbdtModel, type FeatureKind, type GbdtParams } from '../model/gbdt/index.js';
import { objectiveFor } from '../task/objective/objective.js';
import type { Metrics } from '../task/metrics.js';
import type { TaskSplit } from '../task/split.js';
import { targetExclusions, type Examples } from '../task/task_spec.js';
import { buildTrainingTables } from './examples.js';

export interface TreeModelInput {
  graphDir: string;
  manifest: GraphManifest;
  task: TaskSpec;
  split: TaskSplit;
  seed?: number;
  /** GBDT parameters; the loss follows the task (binary → `binary`, regression → `l2`). Default threads 2. */
  gbdt?: Partial<GbdtParams>;
  /** Aggregate options (`max` is `features.max`). */
  features?: AggregateOptions;
}

export interface TreeModelResult {
  model: GbdtModel;
  plan: AggregatePlan;
  /** own columns (`<table>.<column>`) then the aggregates' names, in the model's feature order */
  feature_names: string[];
  examples: { train: number; val: number; test: number };
  metrics: { val: Metrics; test: Metrics };
  main_metric: { name: string; higher_is_better: boolean; val: number; test: number };
  seconds: { features: number; fit: number };
}

export async function trainTreeModel(input: TreeModelInput): Promise<TreeModelResult> {
  const { graphDir, manifest, task, split } = input;
  const kind = task.query.taskType;
  if (kind === 'ranking') throw new NotImplementedError('tree models for ranking tasks are not implemented', { where: `tasks.${task.name}`, hint: 'train the GNN recommender for ranking tasks' });
  const t0 = performance.now();
  const tables = await buildTrainingTables(graphDir, manifest, task, split, { seed: input.seed ?? 0 });
  const entity = task.query.entity.table;
  const exclusions = targetExclusions(task);
  const excluded = new Set(exclusions.map((e) => `${e.table}.${e.column}`));
  const plan = planAggregates(manifest, entity, task.query.target.kind === 'fact' ? 'fact' : 'entity', { ...input.features, excluded });

  // The entity's (or fact row's) own columns: numeric as they are, categorical as vocabulary codes.
  const tm = manifest.tables[entity]!;
  const own = [
    ...tm.numeric.filter((c) => !excluded.has(`${entity}.${c.name}`)).map((c) => ({ name: `${entity}.${c.name}`, kind: 'numeric' as FeatureKind, sql: `o.${q(c.name)}::DOUBLE` })),
    ...tm.categorical
      .filter((c) => !excluded.has(`${entity}.${c.name}`))
      .map((c) => ({
        name: `${entity}.${c.name}`,
        kind: 'categorical' as FeatureKind,
        sql: `nullif(list_position([${c.vocab.map(lit).join(', ')}]::VARCHAR[], CAST(o.${q(c.name)} AS VARCHAR)), 0)::DOUBLE`,
      })),
  ];

  const splits = { train: tables.train, val: tables.val, test: tables.test };
  const columns = await withDuck(async ({ conn }) => {
    const all = [splits.train, splits.val, splits.test];
    const anchors = all.flatMap((e) => Array.from(e.anchors));
    const nodes = all.flatMap((e) => Array.from(e.nodes));
    await conn.run(`CREATE TEMP TABLE examples AS SELECT unnest([${anchors.join(', ')}]::DOUBLE[]) AS anchor, unnest([${nodes.join(', ')}]::INTEGER[]) AS node`);
    await computeAggregates(conn, graphDir, manifest, plan);
    if (own.length) {
      await conn.run(
        `CREATE OR REPLACE TEMP TABLE aggregates AS SELECT a.*, ${own.map((c, i) => `${c.sql} AS a${plan.features.length + i}`).join(', ')} FROM aggregates a ` +
          `LEFT JOIN read_parquet(${lit(rowsPath(graphDir, manifest, entity))}) o ON o.__node = a.node`,
      );
    }
    // Own columns sit after the aggregates (a<n>, a<n+1>, …), so one read takes both.
    return readAggregates(conn, { ...plan, features: [...plan.features, ...own.map((c) => ({ name: c.name, reason: 'own column' }))] });
  });
  const index = new Map<string, number>();
  for (let i = 0; i < columns.rows; i++) index.set(`${columns.anchor[i]}|${columns.node[i]}`, i);
  // Own columns first in the model, then the aggregates.
  const order = [...own.map((_, i) => plan.features.length + i), ...plan.features.map((_, i) => i)];
  const gather = (e: Examples): { rows: number; columns: Float64Array[] } => {
    const rows = Array.from(e.nodes, (node, i) => index.get(`${e.anchors[i]}|${node}`)!);
    return { rows: rows.length, columns: order.map((c) => Float64Array.from(rows, (r) => columns.columns[c]![r]!)) };
  };
  const data = { train: gather(splits.train), val: gather(splits.val), test: gather(splits.test) };
  const tFeatures = performance.now();

  const names = [...own.map((c) => c.name), ...plan.features.map((f) => f.name)];
  const kinds = [...own.map((c) => c.kind), ...plan.features.map((): FeatureKind => 'numeric')];
  const model = GbdtModel.fit(
    { train: data.train, y: splits.train.labels, valid: { data: data.val, y: splits.val.labels }, kinds, names },
    { threads: 2, seed: input.seed ?? 0, ...input.gbdt, loss: kind === 'binary' ? 'binary' : 'l2' },
  );
  const objective = objectiveFor(kind);
  const val = objective.metrics(splits.val.labels, model.predict(data.val));
  const test = objective.metrics(splits.test.labels, model.predict(data.test));
  const main = objective.mainMetric.name as keyof Metrics;
  return {
    model,
    plan,
    feature_names: names,
    examples: { train: data.train.rows, val: data.val.rows, test: data.test.rows },
    metrics: { val, test },
    main_metric: { name: objective.mainMetric.name, higher_is_better: objective.mainMetric.higherIsBetter, val: val[main] as number, test: test[main] as number },
    seconds: { features: (tFeatures - t0) / 1000, fit: (performance.now() - tFeatures) / 1000 },
  };
}
