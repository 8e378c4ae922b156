/**
 * Relational aggregate features, generated from the graph's schema and computed in DuckDB strictly
 * before each example's anchor time (docs/architecture.md, "Temporal correctness"): what a data scientist
 * would hand a gradient-boosted tree instead of a graph network (RelBench's "LightGBM on aggregates").
 *
 * For an entity E and every child table C (a foreign key C.fk → E, C with a time column), over C's rows of
 * the entity dated before the anchor, in windows of 7, 30, 90, 365 days and all history:
 * - the row count, and the days since the last row;
 * - for every numeric column: sum, mean, min, max per window, and the last value;
 * - for every low-cardinality categorical column: the share of each of its most frequent values;
 * - two hops: for every other foreign key C.fk2 → P, the mean of P's numeric columns and the share of P's
 *   frequent categorical values over the same rows (a customer's share of purchases per product type).
 * For a fact row (a task on a table with a time column), the same for each parent entity of the row at
 * the row's own time. Features are ranked (counts and recency first, then numeric summaries, category
 * shares, two-hop) and capped at `max`; each carries the reason it exists, for `graph inspect --features`.
 * No aggregate ever reads a row dated at or after the anchor, and `excluded` columns (a fact task's own
 * label) are never read at all. A `history` column (the column an entity task's label aggregates) is the
 * target's past: read like any child column strictly before the anchor — its label window starts at the
 * anchor — plus the mean of its last 5 and last 10 values, reasons prefixed "target history", kept first
 * by the cap; never through a second hop, which reads a parent row without its time.
 */
import type { DuckDBConnection } from '@duckdb/node-api';
import { DataError } from '../core/errors.js';
import { lit, q, queryValue, readColumns } from '../data/duck.js';
import { sweepAggregates, type SweepExpr } from './aggregate_sweep.js';
import { rowsPath, type GraphManifest } from '../artifacts/graph_manifest.js';

const DAY = 86400;

export interface AggregateOptions {
  /** The cap on the number of features (`features.max`). Default 200. */
  max?: number;
  /** Window lengths in days; all history is always added. Default [7, 30, 90, 365]. */
  windows_days?: number[];
  /** Categorical columns with at most this many vocabulary entries get value shares. Default 20. */
  max_cardinality?: number;
  /** Most frequent values (on the graph's fit window) given a share each. Default 3. */
  top_values?: number;
  /** `table.column`s never read (a fact task's label). */
  excluded?: ReadonlySet<string>;
  /** `table.column`s that are the target's history (an entity task's aggregated column): read before the anchor only, on direct paths. */
  history?: ReadonlySet<string>;
}

/** The "last n values" means of a history column: a driver's last 5 and 10 races. */
export const LAST_N = [5, 10] as const;

export interface AggregateFeature {
  /** `<path>:<column>_<aggregate>_<window>`, e.g. `transactions.customer_id:price_mean_30d`. */
  name: string;
  /** Why it exists, in words: for `graph inspect --features` and reports. */
  reason: string;
  /** the foreign-key path read, e.g. `transactions.customer_id->articles` */
  path: string;
  fn: AggregateExpr['fn'];
  /** `<table>.<column>` aggregated (null for counts and recency) */
  column: string | null;
  /** the window in days before the anchor (null: all history) */
  window_days: number | null;
  /** `features.max` keeps lower tiers first: 0 core counts and recency, the target history's last values and means, 1 other counts and core numeric summaries, 2 other numeric summaries, 3 category shares, 4 two-hop */
  tier: number;
}

/**
 * One aggregate over a group's rows, in a window of `window` days before the anchor (null: all history).
 * `column` is a column of the child table, or of the second-hop parent for a group with `hop`.
 */
export interface AggregateExpr {
  fn: 'count' | 'since' | 'last' | 'sum' | 'avg' | 'min' | 'max' | 'share' | 'last_n';
  column?: string;
  /** last_n: the mean of this many latest non-missing values before the anchor (window null) */
  n?: number;
  /** share: the categorical value counted */
  value?: string;
  window: number | null;
  missing: 'zero' | 'null';
}

/** One grouped path: the rows of `child` reached from the example's key through `fk`. */
interface PathGroup {
  /** keys of this group: the example's own node (entity), or a parent node of the fact row. */
  via: string | null;
  child: string;
  fk: string;
  /** second hop: joins `parent` on `child.fk2`. */
  hop?: { fk2: string; parent: string };
  exprs: AggregateExpr[];
}

interface Candidate extends AggregateFeature {
  group: number;
  expr: AggregateExpr;
}

export interface AggregatePlan {
  entity: string;
  kind: 'entity' | 'fact';
  features: AggregateFeature[];
  /** How many the schema offered before `max` cut them. */
  candidates: number;
  /** How many of the candidates `max` left out (the latest tiers first: see `planAggregates`). */
  dropped: number;
  max: number;
  /** @internal the grouped joins and which of their expressions survived the cap */
  groups: PathGroup[];
  /** @internal per kept feature: [group, expression index] */
  slots: [number, number][];
}

/**
 * The features for examples of `entity` (`kind` entity: (anchor, entity node); fact: (row time, row node)).
 * Pure: reads only the manifest.
 */
export function planAggregates(manifest: GraphManifest, entity: string, kind: 'entity' | 'fact', opts: AggregateOptions = {}): AggregatePlan {
  const max = opts.max ?? 200;
  const windows = opts.windows_days ?? [7, 30, 90, 365];
  const maxCard = opts.max_cardinality ?? 20;
  const top = opts.top_values ?? 3;
  const excluded = opts.excluded ?? new Set<string>();
  const history = opts.history ?? new Set<string>();
  if (!manifest.schema.tables[entity]) throw new DataError(`no table ${entity} in the graph`, { hint: 'name a table of the config', value: entity });
  if (!Number.isInteger(max) || max < 0) throw new DataError('features.max must be a non-negative integer', { value: max });

  const candidates: Candidate[] = [];
  const groups: PathGroup[] = [];
  // Entity: E's children. Fact: the children of each parent P of the fact row, keyed by the row's fk.
  const roots: { via: string | null; table: string; label: string }[] =
    kind === 'entity'
      ? [{ via: null, table: entity, label: entity }]
      : manifest.schema.tables[entity]!.foreign_keys.map((fk) => ({ via: fk.column, table: fk.target, label: `${entity}.${fk.column} → ${fk.target}` }));

  for (const root of roots) {
    for (const [child, ts] of Object.entries(manifest.schema.tables)) {
      if (!ts.time_column) continue;
      for (const fk of ts.foreign_keys.filter((f) => f.target === root.table)) {
        const path = `${root.via ? `${entity}.${root.via}->` : ''}${child}.${fk.column}`;
        const whose = `the ${root.table} row's ${child} rows (${child}.${fk.column} → ${root.table}${root.via ? `, reached from ${root.label}` : ''})`;
        const g: PathGroup = { via: root.via, child, fk: fk.column, exprs: [] };
        const gi = groups.push(g) - 1;
        const add = (tier: number, name: string, reason: string, expr: AggregateExpr): void => {
          candidates.push({ name: `${path}:${name}`, reason, path, fn: expr.fn, column: expr.column ? `${child}.${expr.column}` : null, window_days: expr.window, tier, group: gi, expr });
        };
        const wname = (w: number | null): string => (w === null ? 'all' : `${w}d`);
        const wtext = (w: number | null): string => (w === null ? 'in all history before the anchor' : `in the ${w} days before the anchor`);
        const all: (number | null)[] = [...windows, null];
        for (const w of all) add(w === null || w === 30 ? 0 : 1, `count_${wname(w)}`, `number of ${whose} ${wtext(w)}`, { fn: 'count', window: w, missing: 'zero' });
        add(0, 'days_since_last', `days from the last of ${whose} to the anchor (missing when there is none)`, { fn: 'since', window: null, missing: 'null' });
        const tm = manifest.tables[child]!;
        for (const c of tm.numeric) {
          if (excluded.has(`${child}.${c.name}`)) continue;
          const v = c.name;
          const past = history.has(`${child}.${c.name}`);
          // The target's own past is the strongest input a careful data scientist would give the trees.
          const ht = (tier: number): number => (past ? 0 : tier);
          const hr = (reason: string): string => (past ? `target history: ${reason} (the label reads this column from the anchor on)` : reason);
          add(ht(1), `${c.name}_last`, hr(`${child}.${c.name} of the last of ${whose}`), { fn: 'last', column: v, window: null, missing: 'null' });
          if (past) {
            for (const n of LAST_N) add(0, `${c.name}_mean_last${n}`, hr(`mean of ${child}.${c.name} over the last ${n} of ${whose} with a value, before the anchor`), { fn: 'last_n', column: v, n, window: null, missing: 'null' });
          }
          for (const w of all) {
            const core = w === null || w === 90;
            add(core ? ht(1) : 2, `${c.name}_mean_${wname(w)}`, hr(`mean of ${child}.${c.name} over ${whose} ${wtext(w)}`), { fn: 'avg', column: v, window: w, missing: 'null' });
            add(w === 30 ? 1 : 2, `${c.name}_sum_${wname(w)}`, hr(`sum of ${child}.${c.name} over ${whose} ${wtext(w)}`), { fn: 'sum', column: v, window: w, missing: 'zero' });
            add(2, `${c.name}_min_${wname(w)}`, hr(`smallest ${child}.${c.name} of ${whose} ${wtext(w)}`), { fn: 'min', column: v, window: w, missing: 'null' });
            add(2, `${c.name}_max_${wname(w)}`, hr(`largest ${child}.${c.name} of ${whose} ${wtext(w)}`), { fn: 'max', column: v, window: w, missing: 'null' });
          }
        }
        for (const c of tm.categorical) {
          if (excluded.has(`${child}.${c.name}`) || c.vocab.length > maxCard) continue;
          const past = history.has(`${child}.${c.name}`);
          for (const value of topValues(c.vocab, c.reference.shares, top)) {
            for (const w of [30, null].filter((x) => x === null || windows.includes(x))) {
              const reason = `share of ${whose} ${wtext(w)} with ${child}.${c.name} = ${JSON.stringify(value)} (one of its ${top} most frequent values)`;
              add(
                3,
                `${c.name}=${value}_share_${wname(w)}`,
                past ? `target history: ${reason} (the label reads this column from the anchor on)` : reason,
                { fn: 'share', column: c.name, value, window: w, missing: 'null' },
              );
            }
          }
        }
        // Second hop: the parents the child rows point at through their other foreign keys.
        for (const fk2 of ts.foreign_keys) {
          if (fk2.column === fk.column) continue;
          const pm = manifest.tables[fk2.target]!;
          const hg: PathGroup = { via: root.via, child, fk: fk.column, hop: { fk2: fk2.column, parent: fk2.target }, exprs: [] };
          const hi = groups.push(hg) - 1;
          const hpath = `${path}->${fk2.target}`;
          const hwhose = `the ${fk2.target} rows that ${whose} point at (${child}.${fk2.column})`;
          const hadd = (name: string, reason: string, expr: AggregateExpr): void => {
            candidates.push({ name: `${hpath}:${name}`, reason, path: hpath, fn: expr.fn, column: `${fk2.target}.${expr.column!}`, window_days: expr.window, tier: 4, group: hi, expr });
          };
          for (const c of pm.numeric) {
            if (excluded.has(`${fk2.target}.${c.name}`) || history.has(`${fk2.target}.${c.name}`)) continue;
            for (const w of [90, null].filter((x) => x === null || windows.includes(x))) {
              hadd(`${c.name}_mean_${wname(w)}`, `mean of ${fk2.target}.${c.name} over ${hwhose} ${wtext(w)}`, { fn: 'avg', column: c.name, window: w, missing: 'null' });
            }
          }
          for (const c of pm.categorical) {
            if (excluded.has(`${fk2.target}.${c.name}`) || history.has(`${fk2.target}.${c.name}`) || c.vocab.length > maxCard) continue;
            for (const value of topValues(c.vocab, c.reference.shares, top)) {
              hadd(
                `${c.name}=${value}_share_all`,
                `share of ${hwhose} in all history before the anchor with ${fk2.target}.${c.name} = ${JSON.stringify(value)}`,
                { fn: 'share', column: c.name, value, window: null, missing: 'null' },
              );
            }
          }
        }
      }
    }
  }

  // Stable by tier: generation order breaks ties, so the same schema always keeps the same features.
  const kept = candidates
    .map((c, i) => ({ c, i }))
    .sort((a, b) => a.c.tier - b.c.tier || a.i - b.i)
    .slice(0, max)
    .sort((a, b) => a.i - b.i)
    .map((x) => x.c);
  const slots: [number, number][] = [];
  for (const c of kept) {
    const g = groups[c.group]!;
    slots.push([c.group, g.exprs.push(c.expr) - 1]);
  }
  const features = kept.map(({ name, reason, path, fn, column, window_days, tier }): AggregateFeature => ({ name, reason, path, fn, column, window_days, tier }));
  const dropped = candidates.length - kept.length;
  return { entity, kind, features, candidates: candidates.length, dropped, max, groups, slots };
}

/** The `k` most frequent vocabulary values by their share on the fit window (shares: [null, oov, vocab…]). */
function topValues(vocab: string[], shares: number[], k: number): string[] {
  return vocab
    .map((v, i) => ({ v, s: shares[i + 2] ?? 0, i }))
    .sort((a, b) => b.s - a.s || a.i - b.i)
    .slice(0, k)
    .map((x) => x.v);
}

/** Aggregate values of distinct (anchor, node) examples, ordered by (anchor, node); NaN = missing. */
export interface AggregateValues {
  rows: number;
  anchor: Float64Array;
  node: Int32Array;
  /** one per plan feature, in the plan's order */
  columns: Float64Array[];
}

/**
 * The plan's features for the distinct (anchor, node) rows of `examplesTable` (columns `anchor` in epoch
 * seconds and `node`, the entity's or fact row's node id). Counts and sums of an example with no rows are
 * 0; means, extremes, last values, recency and shares are NaN.
 *
 * Per path (the child rows of one key column, with its second hops), DuckDB sorts the rows by (key, time)
 * and the examples by (key, anchor) once, and graph/aggregate_sweep.ts computes every aggregate of the
 * path in one linear pass over both: strictly before each anchor, so rows dated exactly at it never count.
 */
export async function computeAggregates(conn: DuckDBConnection, graphDir: string, manifest: GraphManifest, plan: AggregatePlan, examplesTable = 'examples'): Promise<AggregateValues> {
  for (const g of plan.groups) {
    if (g.exprs.some((e) => typeof (e as Partial<AggregateExpr>).fn !== 'string')) {
      throw new DataError(`the aggregate plan of ${plan.entity} lists expressions without a function (a tree_model.json of an older gnnctl)`, { hint: 'train the run again to refit its tree model', value: plan.entity });
    }
  }
  await conn.run(
    `CREATE OR REPLACE TEMP TABLE __agg_examples AS SELECT (row_number() OVER (ORDER BY anchor, node) - 1)::INTEGER AS i, anchor, node ` +
      `FROM (SELECT DISTINCT anchor::DOUBLE AS anchor, node::INTEGER AS node FROM ${examplesTable})`,
  );
  const rows = Number(await queryValue(conn, 'SELECT count(*) FROM __agg_examples'));
  const [anchor, node] = await readColumns(conn, 'SELECT anchor, node FROM __agg_examples ORDER BY i', rows, ['f64', 'i32']);
  const byExpr = new Map<string, Float64Array>();
  const paths = new Map<string, number[]>();
  plan.groups.forEach((g, gi) => {
    if (g.exprs.length === 0) return;
    const k = `${g.via ?? ''}|${g.child}|${g.fk}`;
    paths.set(k, [...(paths.get(k) ?? []), gi]);
  });
  for (const gis of paths.values()) {
    const { sql, columns, exprs, slots } = pathInputs(graphDir, manifest, plan, gis);
    await conn.run(`CREATE OR REPLACE TEMP TABLE __agg_rows AS ${sql}`);
    const n = Number(await queryValue(conn, 'SELECT count(*) FROM __agg_rows'));
    const [key, t, ...cols] = await readColumns(
      conn,
      `SELECT __key, __t${columns.map((_, c) => `, coalesce(c${c}, 'NaN'::DOUBLE)`).join('')} FROM __agg_rows ORDER BY __key, __t, __n`,
      n,
      ['i32', 'f64', ...columns.map(() => 'f64' as const)],
    );
    const g0 = plan.groups[gis[0]!]!;
    const probeKey = g0.via
      ? `SELECT e.i, e.anchor, t.${q(`__fk_${g0.via}`)} AS __key FROM __agg_examples e JOIN read_parquet(${lit(rowsPath(graphDir, manifest, plan.entity))}) t ON t.__node = e.node`
      : 'SELECT i, anchor, node AS __key FROM __agg_examples';
    await conn.run(`CREATE OR REPLACE TEMP TABLE __agg_probes AS SELECT * FROM (${probeKey}) WHERE __key IS NOT NULL`);
    const np = Number(await queryValue(conn, 'SELECT count(*) FROM __agg_probes'));
    const [pkey, panchor, pout] = await readColumns(conn, 'SELECT __key, anchor, i FROM __agg_probes ORDER BY __key, anchor, i', np, ['i32', 'f64', 'i32']);
    const values = sweepAggregates({ key: key as Int32Array, t: t as Float64Array, columns: cols as Float64Array[] }, { key: pkey as Int32Array, anchor: panchor as Float64Array, out: pout as Int32Array }, exprs, rows);
    slots.forEach((s, k) => byExpr.set(s, values[k]!));
  }
  for (const t of ['__agg_rows', '__agg_probes', '__agg_examples']) await conn.run(`DROP TABLE IF EXISTS ${t}`);
  return { rows, anchor: anchor as Float64Array, node: node as Int32Array, columns: plan.slots.map(([gi, k]) => byExpr.get(`${gi}:${k}`)!) };
}

/**
 * The rows of one path for the sweep: SQL selecting `__key`, `__t`, `__n` and the input columns `c0…`
 * (numeric values, 0/1 indicators of a category value, a second hop's parent id), and each expression of
 * the path's groups as a sweep expression over those columns (`slots`: `<group>:<index>` of each).
 */
function pathInputs(graphDir: string, manifest: GraphManifest, plan: AggregatePlan, gis: number[]): { sql: string; columns: string[]; exprs: SweepExpr[]; slots: string[] } {
  const g0 = plan.groups[gis[0]!]!;
  const fk = `f.${q(`__fk_${g0.fk}`)}`;
  const columns: string[] = [];
  const input = (sql: string): number => {
    const at = columns.indexOf(sql);
    return at >= 0 ? at : columns.push(sql) - 1;
  };
  const hops: string[] = [];
  const exprs: SweepExpr[] = [];
  const slots: string[] = [];
  for (const gi of gis) {
    const g = plan.groups[gi]!;
    // A hop reads its parent's columns; the rows counted are those whose parent exists (an inner join's rows).
    const src = g.hop ? `p${gi}` : 'f';
    const rows = g.hop ? input(`${src}.__node::DOUBLE`) : -1;
    if (g.hop) hops.push(`LEFT JOIN read_parquet(${lit(rowsPath(graphDir, manifest, g.hop.parent))}) ${src} ON ${src}.__node = f.${q(`__fk_${g.hop.fk2}`)}`);
    g.exprs.forEach((e, k) => {
      const v = e.column === undefined ? '' : `${src}.${q(e.column)}`;
      const inp =
        e.fn === 'count' || e.fn === 'since'
          ? -1
          : e.fn === 'share'
            ? input(`CASE WHEN ${src}.__node IS NULL THEN NULL ELSE coalesce(CAST(${v} AS VARCHAR) = ${lit(e.value!)}, false)::DOUBLE END`)
            : input(`${v}::DOUBLE`);
      exprs.push({ fn: e.fn, ...(e.n === undefined ? {} : { n: e.n }), input: inp, rows, window: e.window === null ? null : e.window * DAY, missing: e.missing });
      slots.push(`${gi}:${k}`);
    });
  }
  const sql =
    `SELECT ${fk} AS __key, f.__t AS __t, f.__node AS __n${columns.map((c, i) => `, ${c} AS c${i}`).join('')} ` +
    `FROM read_parquet(${lit(rowsPath(graphDir, manifest, g0.child))}) f ${hops.join(' ')} WHERE ${fk} IS NOT NULL AND f.__t IS NOT NULL`;
  return { sql, columns, exprs, slots };
}
