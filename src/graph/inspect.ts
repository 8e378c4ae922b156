/**
 * A summary of a built graph for people and machines: rows per table, edges and degree statistics per
 * edge type, and for each column the role it plays and why.
 */
import type { GraphManifest } from '../artifacts/graph_manifest.js';

export interface GraphSummary {
  dir: string;
  fingerprint: string;
  schema_fingerprint: string;
  fit_until: string | null;
  time_range: [string, string] | null;
  tables: Record<
    string,
    {
      rows: number;
      time_range: [string, string] | null;
      columns: { name: string; type: string; role: string; encoder: string; reason: string }[];
    }
  >;
  edges: { name: string; kind: string; count: number; degree_mean: number; degree_p99: number; degree_max: number }[];
  warnings: string[];
}

const iso = (t: number): string => new Date(t * 1000).toISOString();

export function summarizeGraph(dir: string, m: GraphManifest): GraphSummary {
  const tables: GraphSummary['tables'] = {};
  for (const [name, tm] of Object.entries(m.tables)) {
    const schema = m.schema.tables[name]!;
    tables[name] = {
      rows: tm.rows,
      time_range: tm.time_range ? [iso(tm.time_range[0]), iso(tm.time_range[1])] : null,
      columns: schema.columns.map((c) => {
        let encoder = '-';
        const num = tm.numeric.find((n) => n.name === c.name);
        const cat = tm.categorical.find((n) => n.name === c.name);
        const fk = tm.foreign_keys.find((f) => f.column === c.name);
        if (num) encoder = `standardize(mean=${fmt(num.mean)}, std=${fmt(num.std)}) + null flag (${num.nulls} nulls)`;
        else if (cat) encoder = `vocabulary(${cat.vocab.length} values + OOV + null; ${cat.nulls} nulls, ${cat.oov} OOV)`;
        else if (c.role === 'timestamp') encoder = 'relative time to the anchor';
        else if (c.role === 'time') encoder = 'node time (sampling + relative time)';
        else if (c.role === 'primary_key') encoder = 'dense node id';
        else if (fk) encoder = `edge to ${fk.target} (${fk.nulls} null, ${fk.unmatched} unmatched)`;
        else encoder = 'not used';
        return { name: c.name, type: c.type, role: c.role, encoder, reason: c.reason };
      }),
    };
  }
  return {
    dir,
    fingerprint: m.fingerprint,
    schema_fingerprint: m.schema_fingerprint,
    fit_until: m.fit_until === null ? null : iso(m.fit_until),
    time_range: m.time_range ? [iso(m.time_range[0]), iso(m.time_range[1])] : null,
    tables,
    edges: m.edges.map((e) => ({ name: e.name, kind: e.kind, count: e.count, degree_mean: e.degree.mean, degree_p99: e.degree.p99, degree_max: e.degree.max })),
    warnings: m.warnings,
  };
}

export function formatSummary(s: GraphSummary): string {
  const lines: string[] = [`graph ${s.dir}`, `  fingerprint ${s.fingerprint}  schema ${s.schema_fingerprint}`];
  if (s.time_range) lines.push(`  time ${s.time_range[0]} … ${s.time_range[1]}; statistics fitted up to ${s.fit_until}`);
  lines.push('', 'tables');
  for (const [name, t] of Object.entries(s.tables)) {
    lines.push(`  ${name}: ${t.rows.toLocaleString('en-US')} rows${t.time_range ? `, ${t.time_range[0].slice(0, 10)} … ${t.time_range[1].slice(0, 10)}` : ''}`);
    const w = Math.max(...t.columns.map((c) => c.name.length));
    // Why each feature column got its role (keys are declared in the config and say nothing more).
    const keyRole = (role: string): boolean => role === 'primary_key' || role === 'time' || role === 'foreign_key';
    for (const c of t.columns) lines.push(`    ${c.name.padEnd(w)}  ${c.type.padEnd(9)} ${c.role.padEnd(11)} ${c.encoder}${keyRole(c.role) ? '' : ` — ${c.reason}`}`);
  }
  lines.push('', 'edges');
  const w = Math.max(...s.edges.map((e) => e.name.length), 4);
  lines.push(`  ${'type'.padEnd(w)}  ${'count'.padStart(11)}  ${'mean'.padStart(8)}  ${'p99'.padStart(7)}  ${'max'.padStart(8)}`);
  for (const e of s.edges) {
    lines.push(`  ${e.name.padEnd(w)}  ${e.count.toLocaleString('en-US').padStart(11)}  ${fmt(e.degree_mean).padStart(8)}  ${String(e.degree_p99).padStart(7)}  ${String(e.degree_max).padStart(8)}`);
  }
  if (s.warnings.length) lines.push('', 'warnings', ...s.warnings.map((x) => `  ${x}`));
  return lines.join('\n');
}

function fmt(x: number): string {
  return Math.abs(x) >= 100 ? x.toFixed(1) : Math.abs(x) >= 1 ? x.toFixed(3) : x.toPrecision(3);
}

/** A task's tree-model inputs as `graph inspect --features` lists them (train/tree_features.ts builds it). */
export interface FeatureListing {
  task: string;
  entity: string;
  kind: 'entity' | 'fact';
  /** `features.max` */
  max: number;
  /** aggregates the schema offers before the cap */
  candidates: number;
  own_columns: string[];
  aggregates: { name: string; path: string; function: string; column: string | null; window_days: number | null; reason: string }[];
  /** candidates the cap left out, in the order it would take them back */
  left_out: { name: string; reason: string }[];
}

export function formatFeatureListing(l: FeatureListing): string {
  const rows = l.kind === 'fact' ? `each ${l.entity} row at its own time` : `each ${l.entity} row at each anchor`;
  const lines = [
    `tree features of task ${l.task} (${rows}): ${l.own_columns.length} own columns + ${l.aggregates.length} of ${l.candidates} aggregates (features.max ${l.max}${l.left_out.length ? `: ${l.left_out.length} left out` : ': none left out'})`,
    `  own columns: ${l.own_columns.join(', ') || 'none'}`,
  ];
  // One block per foreign-key path; each line: the name after the path, function(column) window, reason.
  const w = Math.max(0, ...l.aggregates.map((a) => a.name.length - a.path.length - 1));
  let path = '';
  for (const a of l.aggregates) {
    if (a.path !== path) lines.push(`  ${(path = a.path)}:`);
    const what = `${a.function}(${a.column ?? '*'}) ${a.window_days === null ? 'all' : `${a.window_days}d`}`;
    lines.push(`    ${a.name.slice(a.path.length + 1).padEnd(w)}  ${what.padEnd(30)} ${a.reason}`);
  }
  if (l.left_out.length) {
    lines.push(`  left out by features.max ${l.max} (raise it to add them, in this order):`);
    for (const a of l.left_out.slice(0, 20)) lines.push(`    ${a.name}`);
    if (l.left_out.length > 20) lines.push(`    … ${l.left_out.length - 20} more (--json lists all)`);
  }
  return lines.join('\n');
}
