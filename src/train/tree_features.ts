/**
 * The inputs of a task's tree models, frozen with the run: the entity's (or fact row's) own columns —
 * numeric as they are, categorical as codes of the vocabulary the graph had at training time — then the
 * relational aggregates of graph/aggregates.ts, computed in DuckDB strictly before each example's anchor.
 * The column an entity task's label aggregates (`history` in task_spec.ts `targetExclusions`) enters as
 * target-history aggregates, read before the anchor only; every other target column stays out.
 * Training, `predict` and `evaluate` compute them through this one function, so a later graph with new
 * categorical values maps them to missing, as the trees route unseen values.
 */
import type { TaskSpec } from '../config/load.js';
import { lit, q, readColumns, withDuck } from '../data/duck.js';
import { rowsPath, type GraphManifest } from '../artifacts/graph_manifest.js';
import { computeAggregates, planAggregates, type AggregateOptions, type AggregatePlan } from '../graph/aggregates.js';
import type { FeatureKind } from '../model/gbdt/index.js';
import type { FeatureListing } from '../graph/inspect.js';
import { targetExclusions } from '../task/task_spec.js';

/** One own column of the entity table as a tree input. */
export interface OwnColumn {
  /** `<table>.<column>` */
  name: string;
  column: string;
  kind: FeatureKind;
  /** categorical: the training graph's vocabulary; a value's code is its 1-based position, unseen → missing */
  vocab?: string[];
}

/** Everything needed to recompute a run's tree inputs on any graph of the same schema. */
export interface TreeFeatureSpec {
  entity: string;
  own: OwnColumn[];
  plan: AggregatePlan;
}

/** Example rows: (anchor in epoch seconds, node id of the entity or fact row). */
export interface ExampleRows {
  anchors: ArrayLike<number>;
  nodes: ArrayLike<number>;
}

/**
 * The task's tree inputs: own columns except the target's, then the aggregates (capped by the config's
 * `features.max`, which `features` may override), the target's history among them. A fact task's label
 * column stays out even with `label_delay`: the trees have no per-row arrival test.
 */
export function treeFeatureSpec(manifest: GraphManifest, task: TaskSpec, features?: AggregateOptions): TreeFeatureSpec {
  const entity = task.query.entity.table;
  const targets = targetExclusions(task);
  const key = (e: { table: string; column: string }): string => `${e.table}.${e.column}`;
  const excluded = new Set(targets.filter((e) => !e.history).map(key));
  const history = new Set(targets.filter((e) => e.history).map(key));
  const plan = planAggregates(manifest, entity, task.query.target.kind === 'fact' ? 'fact' : 'entity', { ...(task.features ? { max: task.features.max } : {}), ...features, excluded, history });
  // An own column has no time: a target column on the entity's own row would be read at any anchor.
  const ownOut = new Set(targets.map(key));
  const tm = manifest.tables[entity]!;
  const own: OwnColumn[] = [
    ...tm.numeric.filter((c) => !ownOut.has(`${entity}.${c.name}`)).map((c): OwnColumn => ({ name: `${entity}.${c.name}`, column: c.name, kind: 'numeric' })),
    ...tm.categorical.filter((c) => !ownOut.has(`${entity}.${c.name}`)).map((c): OwnColumn => ({ name: `${entity}.${c.name}`, column: c.name, kind: 'categorical', vocab: [...c.vocab] })),
  ];
  return { entity, own, plan };
}

/** Feature names in the model's order: own columns, then aggregates. */
export function featureNames(spec: TreeFeatureSpec): string[] {
  return [...spec.own.map((c) => c.name), ...spec.plan.features.map((f) => f.name)];
}

export function featureKinds(spec: TreeFeatureSpec): FeatureKind[] {
  return [...spec.own.map((c) => c.kind), ...spec.plan.features.map((): FeatureKind => 'numeric')];
}

function ownSql(c: OwnColumn): string {
  if (c.kind === 'numeric') return `o.${q(c.column)}::DOUBLE`;
  return `nullif(list_position([${c.vocab!.map(lit).join(', ')}]::VARCHAR[], CAST(o.${q(c.column)} AS VARCHAR)), 0)::DOUBLE`;
}

/**
 * The tree inputs of each set of example rows, one Float64Array per feature in the model's order (NaN =
 * missing). All sets go through one DuckDB query, so the aggregates of an (anchor, node) shared by two
 * sets are computed once.
 */
export async function computeTreeFeatures(graphDir: string, manifest: GraphManifest, spec: TreeFeatureSpec, sets: ExampleRows[]): Promise<Float64Array[][]> {
  const { plan, own } = spec;
  const columns = await withDuck(async ({ conn }) => {
    await conn.run('CREATE TEMP TABLE examples (anchor DOUBLE, node INTEGER)');
    const app = await conn.createAppender('examples');
    try {
      for (const s of sets) {
        for (let i = 0; i < s.nodes.length; i++) {
          app.appendDouble(s.anchors[i]!);
          app.appendInteger(s.nodes[i]!);
          app.endRow();
        }
      }
      app.flushSync();
    } finally {
      app.closeSync();
    }
    const aggregates = await computeAggregates(conn, graphDir, manifest, plan);
    // Own columns of the same distinct (anchor, node) rows in the same order.
    const owned = own.length
      ? await readColumns(
          conn,
          `SELECT ${own.map((c) => `coalesce(${ownSql(c)}, 'NaN'::DOUBLE)`).join(', ')} FROM (SELECT DISTINCT anchor::DOUBLE AS anchor, node::INTEGER AS node FROM examples) e ` +
            `LEFT JOIN read_parquet(${lit(rowsPath(graphDir, manifest, spec.entity))}) o ON o.__node = e.node ORDER BY e.anchor, e.node`,
          aggregates.rows,
          own.map(() => 'f64' as const),
        )
      : [];
    return { ...aggregates, columns: [...aggregates.columns, ...(owned as Float64Array[])] };
  });
  const index = new Map<string, number>();
  for (let i = 0; i < columns.rows; i++) index.set(`${columns.anchor[i]}|${columns.node[i]}`, i);
  // Own columns first in the model, then the aggregates.
  const order = [...own.map((_, i) => plan.features.length + i), ...plan.features.map((_, i) => i)];
  return sets.map((s) => {
    const rows = Array.from({ length: s.nodes.length }, (_, i) => index.get(`${s.anchors[i]}|${s.nodes[i]}`)!);
    return order.map((c) => Float64Array.from(rows, (r) => columns.columns[c]![r]!));
  });
}

/**
 * What `graph inspect --features` shows for a task: its own columns, every aggregate the trees get with
 * its path, function, column, window and reason, and the candidates `features.max` left out (the cap
 * keeps counts and recency first, then numeric summaries, category shares and two-hop aggregates).
 */
export function treeFeatureListing(manifest: GraphManifest, task: TaskSpec): FeatureListing {
  const spec = treeFeatureSpec(manifest, task);
  const { plan } = spec;
  const kept = new Set(plan.features.map((f) => f.name));
  const all = treeFeatureSpec(manifest, task, { max: Number.MAX_SAFE_INTEGER }).plan.features;
  return {
    task: task.name,
    entity: spec.entity,
    kind: plan.kind,
    max: plan.max,
    candidates: plan.candidates,
    own_columns: spec.own.map((c) => c.name),
    aggregates: plan.features.map((f) => ({ name: f.name, path: f.path, function: f.fn, column: f.column, window_days: f.window_days, reason: f.reason })),
    // In the order a larger cap takes them: by tier, then generation order (a stable sort).
    left_out: all
      .filter((f) => !kept.has(f.name))
      .sort((a, b) => a.tier - b.tier)
      .map((f) => ({ name: f.name, reason: f.reason })),
  };
}
