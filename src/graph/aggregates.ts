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
 * label) are never read at all.
 */
import type { DuckDBConnection } from '@duckdb/node-api';
import { DataError } from '../core/errors.js';
import { lit, q, queryValue, readColumns } from '../data/duck.js';
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
}

export interface AggregateFeature {
  /** `<path>:<column>_<aggregate>_<window>`, e.g. `transactions.customer_id:price_mean_30d`. */
  name: string;
  /** Why it exists, in words: for `graph inspect --features` and reports. */
  reason: string;
}

/** One grouped join: the rows of `child` reached from the example's key through `fk`. */
interface PathGroup {
  /** keys of this group: the example's own node (entity), or a parent node of the fact row. */
  via: string | null;
  child: string;
  fk: string;
  /** second hop: joins `parent` on `child.fk2`. */
  hop?: { fk2: string; parent: string };
  exprs: { sql: string; missing: 'zero' | 'null' }[];
}

interface Candidate extends AggregateFeature {
  tier: number;
  group: number;
  sql: string;
  missing: 'zero' | 'null';
}

export interface AggregatePlan {
  entity: string;
  kind: 'entity' | 'fact';
  features: AggregateFeature[];
  /** How many the schema offered before `max` cut them. */
  candidates: number;
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
        const add = (tier: number, name: string, reason: string, sql: string, missing: 'zero' | 'null'): void => {
          candidates.push({ name: `${path}:${name}`, reason, tier, group: gi, sql, missing });
        };
        const win = (w: number | null): string => (w === null ? 'TRUE' : `f.__t >= x.anchor - ${w * DAY}`);
        const wname = (w: number | null): string => (w === null ? 'all' : `${w}d`);
        const wtext = (w: number | null): string => (w === null ? 'in all history before the anchor' : `in the ${w} days before the anchor`);
        const all: (number | null)[] = [...windows, null];
        for (const w of all) add(w === null || w === 30 ? 0 : 1, `count_${wname(w)}`, `number of ${whose} ${wtext(w)}`, `count(*) FILTER (WHERE ${win(w)})`, 'zero');
        add(0, 'days_since_last', `days from the last of ${whose} to the anchor (missing when there is none)`, `(x.anchor - max(f.__t)) / ${DAY}`, 'null');
        const tm = manifest.tables[child]!;
        for (const c of tm.numeric) {
          if (excluded.has(`${child}.${c.name}`)) continue;
          const v = `f.${q(c.name)}`;
          add(1, `${c.name}_last`, `${child}.${c.name} of the last of ${whose}`, `arg_max(${v}, f.__t)`, 'null');
          for (const w of all) {
            const core = w === null || w === 90;
            add(core ? 1 : 2, `${c.name}_mean_${wname(w)}`, `mean of ${child}.${c.name} over ${whose} ${wtext(w)}`, `avg(${v}) FILTER (WHERE ${win(w)})`, 'null');
            add(w === 30 ? 1 : 2, `${c.name}_sum_${wname(w)}`, `sum of ${child}.${c.name} over ${whose} ${wtext(w)}`, `sum(${v}) FILTER (WHERE ${win(w)})`, 'zero');
            add(2, `${c.name}_min_${wname(w)}`, `smallest ${child}.${c.name} of ${whose} ${wtext(w)}`, `min(${v}) FILTER (WHERE ${win(w)})`, 'null');
            add(2, `${c.name}_max_${wname(w)}`, `largest ${child}.${c.name} of ${whose} ${wtext(w)}`, `max(${v}) FILTER (WHERE ${win(w)})`, 'null');
          }
        }
        for (const c of tm.categorical) {
          if (excluded.has(`${child}.${c.name}`) || c.vocab.length > maxCard) continue;
          for (const value of topValues(c.vocab, c.reference.shares, top)) {
            for (const w of [30, null].filter((x) => x === null || windows.includes(x))) {
              add(
                3,
                `${c.name}=${value}_share_${wname(w)}`,
                `share of ${whose} ${wtext(w)} with ${child}.${c.name} = ${JSON.stringify(value)} (one of its ${top} most frequent values)`,
                `count(*) FILTER (WHERE ${win(w)} AND CAST(f.${q(c.name)} AS VARCHAR) = ${lit(value)}) / nullif(count(*) FILTER (WHERE ${win(w)}), 0)`,
                'null',
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
          const hadd = (name: string, reason: string, sql: string): void => {
            candidates.push({ name: `${hpath}:${name}`, reason, tier: 4, group: hi, sql, missing: 'null' });
          };
          for (const c of pm.numeric) {
            if (excluded.has(`${fk2.target}.${c.name}`)) continue;
            for (const w of [90, null].filter((x) => x === null || windows.includes(x))) {
              hadd(`${c.name}_mean_${wname(w)}`, `mean of ${fk2.target}.${c.name} over ${hwhose} ${wtext(w)}`, `avg(p.${q(c.name)}) FILTER (WHERE ${win(w)})`);
            }
          }
          for (const c of pm.categorical) {
            if (excluded.has(`${fk2.target}.${c.name}`) || c.vocab.length > maxCard) continue;
            for (const value of topValues(c.vocab, c.reference.shares, top)) {
              hadd(
                `${c.name}=${value}_share_all`,
                `share of ${hwhose} in all history before the anchor with ${fk2.target}.${c.name} = ${JSON.stringify(value)}`,
                `count(*) FILTER (WHERE CAST(p.${q(c.name)} AS VARCHAR) = ${lit(value)}) / nullif(count(*), 0)`,
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
    slots.push([c.group, g.exprs.push({ sql: c.sql, missing: c.missing }) - 1]);
  }
  return { entity, kind, features: kept.map(({ name, reason }) => ({ name, reason })), candidates: candidates.length, max, groups, slots };
}

/** The `k` most frequent vocabulary values by their share on the fit window (shares: [null, oov, vocab…]). */
function topValues(vocab: string[], shares: number[], k: number): string[] {
  return vocab
    .map((v, i) => ({ v, s: shares[i + 2] ?? 0, i }))
    .sort((a, b) => b.s - a.s || a.i - b.i)
    .slice(0, k)
    .map((x) => x.v);
}

/**
 * Creates TEMP TABLE `aggregates` (anchor, node, a0 … a{n−1}) with one row per row of `examplesTable`
 * (columns `anchor` in epoch seconds and `node`, the entity's or fact row's node id). Counts and sums of
 * an entity with no rows are 0; means, extremes, last values, recency and shares are NULL.
 */
export async function computeAggregates(conn: DuckDBConnection, graphDir: string, manifest: GraphManifest, plan: AggregatePlan, examplesTable = 'examples'): Promise<void> {
  const joins: string[] = [];
  const selects: string[] = [];
  const col = new Map<string, string>();
  plan.groups.forEach((g, gi) => {
    if (g.exprs.length === 0) return;
    const a = `g${gi}`;
    const rows = lit(rowsPath(graphDir, manifest, g.child));
    // keys: (anchor, node) of the example and the node whose child rows are aggregated.
    const keys = g.via
      ? `(SELECT e.anchor, e.node, t.${q(`__fk_${g.via}`)} AS key FROM (SELECT DISTINCT anchor, node FROM ${examplesTable}) e ` +
        `JOIN read_parquet(${lit(rowsPath(graphDir, manifest, plan.entity))}) t ON t.__node = e.node)`
      : `(SELECT DISTINCT anchor, node, node AS key FROM ${examplesTable})`;
    const hop = g.hop ? ` JOIN read_parquet(${lit(rowsPath(graphDir, manifest, g.hop.parent))}) p ON p.__node = f.${q(`__fk_${g.hop.fk2}`)}` : '';
    joins.push(
      `LEFT JOIN (SELECT x.anchor, x.node, ${g.exprs.map((e, k) => `(${e.sql})::DOUBLE AS v${k}`).join(', ')} FROM ${keys} x ` +
        `JOIN read_parquet(${rows}) f ON f.${q(`__fk_${g.fk}`)} = x.key AND f.__t < x.anchor${hop} GROUP BY x.anchor, x.node) ${a} ` +
        `ON ${a}.anchor = e.anchor AND ${a}.node = e.node`,
    );
    g.exprs.forEach((e, k) => col.set(`${gi}:${k}`, e.missing === 'zero' ? `coalesce(${a}.v${k}, 0)` : `${a}.v${k}`));
  });
  plan.slots.forEach(([gi, k], i) => selects.push(`${col.get(`${gi}:${k}`)!} AS a${i}`));
  await conn.run(
    `CREATE OR REPLACE TEMP TABLE aggregates AS SELECT e.anchor, e.node${selects.length ? `, ${selects.join(', ')}` : ''} ` +
      `FROM (SELECT DISTINCT anchor, node FROM ${examplesTable}) e ${joins.join(' ')}`,
  );
}

/** The `aggregates` rows matching `where`, ordered by (anchor, node), as one Float64Array per feature (NaN = missing). */
export async function readAggregates(conn: DuckDBConnection, plan: AggregatePlan, where = 'TRUE'): Promise<{ rows: number; anchor: Float64Array; node: Int32Array; columns: Float64Array[] }> {
  const rows = Number(await queryValue(conn, `SELECT count(*) FROM aggregates WHERE ${where}`));
  const names = plan.features.map((_, i) => `coalesce(a${i}, 'NaN'::DOUBLE)`);
  const [anchor, node, ...columns] = await readColumns(
    conn,
    `SELECT anchor::DOUBLE, node::INTEGER${names.length ? `, ${names.join(', ')}` : ''} FROM aggregates WHERE ${where} ORDER BY anchor, node`,
    rows,
    ['f64', 'i32', ...names.map(() => 'f64' as const)],
  );
  return { rows, anchor: anchor as Float64Array, node: node as Int32Array, columns: columns as Float64Array[] };
}

/**
 * Rows the plan's joins would pair when every row of the entity table is an example (fact-row tasks):
 * for each group read through a parent (`via`), Σ over parents of (rows of the entity with that parent) ×
 * (child rows with it). A fact row's aggregates join all earlier rows of its parent, so this grows with
 * the square of a parent's row count; the trainer checks it before computing them (train/candidates.ts).
 */
export async function factJoinPairs(conn: DuckDBConnection, graphDir: string, manifest: GraphManifest, plan: AggregatePlan): Promise<number> {
  const seen = new Set<string>();
  let total = 0;
  for (const g of plan.groups) {
    if (!g.via || g.exprs.length === 0 || seen.has(`${g.via}|${g.child}|${g.fk}`)) continue;
    seen.add(`${g.via}|${g.child}|${g.fk}`);
    const e = `SELECT ${q(`__fk_${g.via}`)} AS k, count(*)::DOUBLE AS c FROM read_parquet(${lit(rowsPath(graphDir, manifest, plan.entity))}) GROUP BY 1`;
    const f = `SELECT ${q(`__fk_${g.fk}`)} AS k, count(*)::DOUBLE AS c FROM read_parquet(${lit(rowsPath(graphDir, manifest, g.child))}) GROUP BY 1`;
    total += Number((await queryValue(conn, `SELECT coalesce(sum(e.c * f.c), 0)::DOUBLE FROM (${e}) e JOIN (${f}) f USING (k)`)) ?? 0);
  }
  return total;
}
