/**
 * Training tables: (entity node, anchor time, label) for each split, built in DuckDB from the graph's
 * `rows.parquet` files.
 *
 * Entity tasks: every entity existing at each anchor (time ≤ anchor, for tables with a time column),
 * filtered by WHERE (aggregates over past windows, the entity's own columns), labelled by the target
 * aggregate over (anchor + a, anchor + b]. Fact tasks: each row at its own time, labelled by its target
 * column, split by time at the val and test boundaries. Labels only ever come from after the anchor.
 */
import type { DuckDBConnection } from '@duckdb/node-api';
import type { TaskSpec } from '../config/load.js';
import { lit, q, queryRows, queryValue, readColumns, withDuck } from '../data/duck.js';
import { ConfigError, NotImplementedError, suggest, assertUnreachable } from '../core/errors.js';
import { rowsPath, type GraphManifest } from '../artifacts/graph_manifest.js';
import { baselineSqlFeatures, type SqlFeatures } from './baseline.js';
import type { Examples, ItemLists } from '../task/task_spec.js';
import type { TaskSplit } from '../task/split.js';
import type { Aggregate, CompareOp, Condition, Literal } from '../task/pql.js';


export interface TrainingTables {
  train: Examples;
  val: Examples;
  test: Examples;
  /**
   * entity tasks: anchors of each split whose label window holds no row of the target table (an
   * off-season, a gap in the data): they contribute no examples, and are counted here
   */
  empty_anchors?: { train: number[]; val: number[]; test: number[] };
  /** the no-graph baseline's DuckDB aggregates for the same examples, when asked for */
  baseline?: SqlFeatures;
}

type SplitWhere = { train: string; val: string; test: string };

export interface TrainingTableOptions {
  seed: number;
  /** also compute the baseline's aggregates, leaving out these `table.column`s */
  baselineExcluding?: Set<string>;
}

export async function buildTrainingTables(graphDir: string, manifest: GraphManifest, task: TaskSpec, split: TaskSplit, opts: TrainingTableOptions): Promise<TrainingTables> {
  return withDuck(async ({ conn }) => {
    const where = task.query.target.kind === 'entity' ? await entityExamples(conn, graphDir, manifest, task, split) : await factExamples(conn, graphDir, manifest, task, split);
    const empty = task.query.target.kind === 'entity' ? await dropEmptyAnchors(conn, graphDir, manifest, task, split) : { train: [], val: [], test: [] };
    const max = task.split.max_train_examples;
    if (max) {
      // A seeded subsample of the training rows, chosen in SQL so the baseline sees the same rows: the first
      // `max` in a seeded hash order (exactly `max` rows, not a Bernoulli draw that only averages `max`).
      const n = Number(await queryValue(conn, `SELECT count(*) FROM examples WHERE ${where.train}`));
      if (n > max) {
        await conn.run(
          `DELETE FROM examples WHERE rowid IN (SELECT rowid FROM examples WHERE ${where.train} ORDER BY hash(anchor, node, ${opts.seed}), anchor, node OFFSET ${max})`,
        );
      }
    }
    const tables: TrainingTables = { train: await readExamples(conn, where.train), val: await readExamples(conn, where.val), test: await readExamples(conn, where.test), empty_anchors: empty };
    if (task.query.taskType === 'ranking') {
      for (const split of ['train', 'val', 'test'] as const) tables[split].label_items = await readLabelItems(conn, graphDir, manifest, task, where[split], tables[split]);
    }
    if (opts.baselineExcluding) tables.baseline = await baselineSqlFeatures(conn, graphDir, manifest, task, opts.baselineExcluding, where);
    return tables;
  });
}

/** Size of the validation set at the newest val anchor alone: what `val_anchors: auto` decides on. */
export interface ValidationSize {
  examples: number;
  /** binary tasks: examples of the rarer class (AUROC's noise depends on it); null for regression */
  rarer_class: number | null;
}

export async function validationSize(graphDir: string, manifest: GraphManifest, task: TaskSpec, split: TaskSplit): Promise<ValidationSize> {
  return withDuck(async ({ conn }) => {
    // Only the val and test anchors: a fraction of the full build's SQL.
    await entityExamples(conn, graphDir, manifest, task, { ...split, trainAnchors: [], valAnchors: [split.valAnchor], testAnchors: [] });
    const examples = Number(await queryValue(conn, `SELECT count(*) FROM examples WHERE anchor = ${split.valAnchor}`));
    if (task.query.taskType !== 'binary') return { examples, rarer_class: null };
    const positives = Number(await queryValue(conn, `SELECT coalesce(sum(label), 0) FROM examples WHERE anchor = ${split.valAnchor}`));
    return { examples, rarer_class: Math.min(positives, examples - positives) };
  });
}

function literal(v: Literal): string {
  if (typeof v === 'string') return lit(v);
  if (typeof v === 'boolean') return v ? 'TRUE' : 'FALSE';
  return String(v);
}

function op(o: CompareOp): string {
  return o === '!=' ? '<>' : o;
}

/** Checks a column exists in a table's schema, with a did-you-mean. */
function checkColumn(manifest: GraphManifest, table: string, column: string, what: string): void {
  const cols = manifest.schema.tables[table]!.columns.map((c) => c.name);
  if (!cols.includes(column)) throw new ConfigError(`${what}: ${table}.${column} is not a column (${suggest(column, cols)})`);
}

function aggregateSql(agg: Aggregate, alias: string): string {
  const col = agg.column ? `f.${q(agg.column)}` : '*';
  switch (agg.fn) {
    case 'COUNT':
      return `count(${col}) AS ${alias}`;
    case 'EXISTS':
      return `count(${col}) AS ${alias}`;
    case 'LIST_DISTINCT':
      // The label value of a ranking example is its number of distinct items (the list is read separately).
      return `count(DISTINCT ${col}) AS ${alias}`;
    case 'SUM':
      return `sum(${col})::DOUBLE AS ${alias}`;
    case 'AVG':
      return `avg(${col})::DOUBLE AS ${alias}`;
    case 'MIN':
      return `min(${col})::DOUBLE AS ${alias}`;
    case 'MAX':
      return `max(${col})::DOUBLE AS ${alias}`;
    default:
      return assertUnreachable(agg.fn);
  }
}

/** Value of an aggregate for an entity with no rows in the window: 0 for COUNT/SUM, NULL otherwise. */
function aggregateValue(agg: Aggregate, alias: string): string {
  switch (agg.fn) {
    case 'COUNT':
    case 'SUM':
    case 'LIST_DISTINCT':
      return `coalesce(${alias}, 0)`;
    case 'EXISTS':
      return `(coalesce(${alias}, 0) > 0)`;
    default:
      return alias;
  }
}

async function entityExamples(conn: DuckDBConnection, graphDir: string, manifest: GraphManifest, task: TaskSpec, split: TaskSplit): Promise<SplitWhere> {
  const query = task.query;
  if (query.target.kind !== 'entity') throw new Error('entityExamples needs an entity task');
  const entity = query.entity.table;
  const anchors = [...split.trainAnchors, ...split.valAnchors, ...split.testAnchors];
  await conn.run(`CREATE OR REPLACE TEMP TABLE anchors AS SELECT unnest([${anchors.join(', ')}]::DOUBLE[]) AS anchor`);
  const eRows = lit(rowsPath(graphDir, manifest, entity));
  const eHasTime = manifest.tables[entity]!.time_file !== null;

  // Every aggregate (target and WHERE) becomes a grouped subquery keyed by (anchor, node).
  const aggs: { agg: Aggregate; alias: string }[] = [{ agg: query.target.aggregate, alias: 'target' }];
  const aliasOf = new Map<Aggregate, string>();
  const collect = (c: Condition | null): void => {
    if (!c) return;
    if (c.kind === 'and' || c.kind === 'or') {
      collect(c.left);
      collect(c.right);
    } else if (c.kind === 'not') collect(c.inner);
    else if (c.left.kind === 'aggregate') {
      const alias = `w${aggs.length}`;
      aggs.push({ agg: c.left, alias });
      aliasOf.set(c.left, alias);
    }
  };
  collect(query.where);

  const joins: string[] = [];
  for (const { agg, alias } of aggs) {
    if (agg.table === entity) throw new NotImplementedError(`aggregates over the entity table itself (${agg.fn}(${agg.table}…)) are not supported`, { hint: 'aggregate over a table with a foreign key to the entity' });
    const fk = manifest.schema.tables[agg.table]!.foreign_keys.find((f) => f.target === entity)!;
    if (agg.column) checkColumn(manifest, agg.table, agg.column, `tasks.${task.name}.query`);
    const fRows = lit(rowsPath(graphDir, manifest, agg.table));
    const fkCol = q(`__fk_${fk.column}`);
    joins.push(
      `LEFT JOIN (SELECT a.anchor, f.${fkCol} AS node, ${aggregateSql(agg, alias)} FROM anchors a JOIN read_parquet(${fRows}) f ` +
        `ON f.__t > a.anchor + ${agg.start} AND f.__t <= a.anchor + ${agg.end} WHERE f.${fkCol} IS NOT NULL GROUP BY 1, 2) ${alias} ` +
        `ON ${alias}.anchor = c.anchor AND ${alias}.node = c.node`,
    );
  }
  const cond = (where: Condition): string =>
    conditionSql(where, (c) => {
      if (c.left.kind === 'aggregate') {
        const alias = aliasOf.get(c.left)!;
        return `(${aggregateValue(c.left, `${alias}.${alias}`)} ${op(c.op)} ${literal(c.value)})`;
      }
      if (c.left.table !== entity) {
        throw new NotImplementedError(`WHERE on ${c.left.table}.${c.left.column}: only the entity table's own columns (${entity}) can be filtered directly`, { hint: 'use an aggregate over the other table instead' });
      }
      checkColumn(manifest, entity, c.left.column, `tasks.${task.name}.query`);
      return `(e.${q(c.left.column)} ${op(c.op)} ${literal(c.value)})`;
    });
  const target = query.target;
  const value = aggregateValue(target.aggregate, 'target.target');
  const label = target.compare ? `CASE WHEN ${value} ${op(target.compare.op)} ${literal(target.compare.value)} THEN 1.0 ELSE 0.0 END` : `${value}::DOUBLE`;
  // Ranking: seeds are the entities with at least one item in the window (an empty list has nothing to rank).
  const where = [query.where ? cond(query.where) : 'true', `${value} IS NOT NULL`, ...(target.top_k !== null ? [`${value} > 0`] : [])].join(' AND ');
  await conn.run(
    `CREATE OR REPLACE TEMP TABLE examples AS SELECT c.anchor, c.node, ${label} AS label FROM ` +
      `(SELECT a.anchor, e.__node AS node FROM anchors a CROSS JOIN read_parquet(${eRows}) e ${eHasTime ? 'WHERE e.__t <= a.anchor' : ''}) c ` +
      `JOIN read_parquet(${eRows}) e ON e.__node = c.node ${joins.join(' ')} WHERE ${where}`,
  );
  return { train: anchorsIn(split.trainAnchors), val: anchorsIn(split.valAnchors), test: anchorsIn(split.testAnchors) };
}

async function factExamples(conn: DuckDBConnection, graphDir: string, manifest: GraphManifest, task: TaskSpec, split: TaskSplit): Promise<SplitWhere> {
  const query = task.query;
  if (query.target.kind !== 'fact') throw new Error('factExamples needs a fact task');
  const { table, column } = query.target.column;
  checkColumn(manifest, table, column, `tasks.${task.name}.query`);
  const c = query.target.compare;
  const label = c ? `CASE WHEN ${q(column)} ${op(c.op)} ${literal(c.value)} THEN 1.0 ELSE 0.0 END` : `${q(column)}::DOUBLE`;
  const filter = (where: Condition | null): string =>
    !where
      ? 'true'
      : conditionSql(where, (c) => {
          if (c.left.kind === 'aggregate' || c.left.table !== table) {
            throw new NotImplementedError('a fact-row task can filter on its own columns only', { hint: `use ${table}.<column> in WHERE` });
          }
          checkColumn(manifest, table, c.left.column, `tasks.${task.name}.query`);
          return `(${q(c.left.column)} ${op(c.op)} ${literal(c.value)})`;
        });
  await conn.run(
    `CREATE OR REPLACE TEMP TABLE examples AS SELECT __t AS anchor, __node AS node, ${label} AS label FROM read_parquet(${lit(rowsPath(graphDir, manifest, table))}) ` +
      `WHERE ${q(column)} IS NOT NULL AND ${filter(query.where)}`,
  );
  const from = split.trainFrom !== null ? ` AND anchor >= ${split.trainFrom}` : '';
  return { train: `anchor <= ${split.valAnchor}${from}`, val: `anchor > ${split.valAnchor} AND anchor <= ${split.testAnchor}`, test: `anchor > ${split.testAnchor}` };
}

function anchorsIn(anchors: number[]): string {
  return anchors.length ? `anchor IN (${anchors.join(', ')})` : 'false';
}

/**
 * Deletes the examples of anchors whose target window (anchor + a, anchor + b] holds no row of the target
 * table at all: their labels say nothing about the entities (every count 0, every churn 1), as at
 * RelBench's F1 timestamps in the off-season. Returns those anchors per split.
 */
async function dropEmptyAnchors(conn: DuckDBConnection, graphDir: string, manifest: GraphManifest, task: TaskSpec, split: TaskSplit): Promise<TrainingTables['empty_anchors']> {
  const target = task.query.target;
  if (target.kind !== 'entity') return { train: [], val: [], test: [] };
  const agg = target.aggregate;
  const rows = lit(rowsPath(graphDir, manifest, agg.table));
  const list = (
    await queryRows<{ anchor: number }>(conn, `SELECT a.anchor FROM anchors a WHERE NOT EXISTS (SELECT 1 FROM read_parquet(${rows}) f WHERE f.__t > a.anchor + ${agg.start} AND f.__t <= a.anchor + ${agg.end}) ORDER BY 1`)
  ).map((r) => Number(r.anchor));
  if (list.length) await conn.run(`DELETE FROM examples WHERE anchor IN (${list.join(', ')})`);
  const of = (anchors: number[]): number[] => anchors.filter((a) => list.includes(a));
  return { train: of(split.trainAnchors), val: of(split.valAnchors), test: of(split.testAnchors) };
}

async function readExamples(conn: DuckDBConnection, where: string): Promise<Examples> {
  const n = Number(await queryValue(conn, `SELECT count(*) FROM examples WHERE ${where}`));
  const [anchors, nodes, labels] = await readColumns(conn, `SELECT anchor, node, label FROM examples WHERE ${where} ORDER BY anchor, node`, n, ['f64', 'i32', 'f32']);
  return { nodes: nodes as Int32Array, anchors: anchors as Float64Array, labels: labels as Float32Array };
}

/**
 * A ranking task's label lists: the distinct items of each example's window (anchor + a, anchor + b], in
 * the examples' order (anchor, node), as CSR. The count per example is its label (checked here).
 */
async function readLabelItems(conn: DuckDBConnection, graphDir: string, manifest: GraphManifest, task: TaskSpec, where: string, ex: Examples): Promise<ItemLists> {
  const target = task.query.target;
  if (target.kind !== 'entity' || target.top_k === null) throw new Error('readLabelItems needs a ranking task');
  const agg = target.aggregate;
  const entityFk = manifest.schema.tables[agg.table]!.foreign_keys.find((f) => f.target === task.query.entity.table)!;
  const fRows = lit(rowsPath(graphDir, manifest, agg.table));
  const ent = q(`__fk_${entityFk.column}`);
  const item = q(`__fk_${agg.column!}`);
  const sql =
    `SELECT DISTINCT e.anchor, e.node, f.${item} AS item FROM (SELECT anchor, node FROM examples WHERE ${where}) e JOIN read_parquet(${fRows}) f ` +
    `ON f.${ent} = e.node AND f.__t > e.anchor + ${agg.start} AND f.__t <= e.anchor + ${agg.end} WHERE f.${item} IS NOT NULL`;
  const n = Number(await queryValue(conn, `SELECT count(*) FROM (${sql})`));
  const [anchors, nodes, items] = await readColumns(conn, `${sql} ORDER BY 1, 2, 3`, n, ['f64', 'i32', 'i32']);
  const offsets = new Int32Array(ex.nodes.length + 1);
  let r = 0;
  for (let i = 0; i < ex.nodes.length; i++) {
    offsets[i] = r;
    while (r < n && anchors[r] === ex.anchors[i] && nodes[r] === ex.nodes[i]) r++;
    if (r - offsets[i]! !== ex.labels[i]) throw new Error(`ranking labels: example ${i} has ${r - offsets[i]!} items, its count says ${ex.labels[i]}`);
  }
  offsets[ex.nodes.length] = r;
  return { offsets, items: items as Int32Array };
}

type Compare = Extract<Condition, { kind: 'compare' }>;

/** A WHERE condition as SQL: AND / OR / NOT here, each comparison by `compare`. */
function conditionSql(c: Condition, compare: (c: Compare) => string): string {
  switch (c.kind) {
    case 'and':
      return `(${conditionSql(c.left, compare)} AND ${conditionSql(c.right, compare)})`;
    case 'or':
      return `(${conditionSql(c.left, compare)} OR ${conditionSql(c.right, compare)})`;
    case 'not':
      return `(NOT ${conditionSql(c.inner, compare)})`;
    case 'compare':
      return compare(c);
    default:
      return assertUnreachable(c);
  }
}
