/**
 * Whether a trained run can read today's graph. The run owns its encoders (`features.json`: the columns
 * it reads, their kinds and fitted state), so today's data only has to *provide* those columns in the
 * same roles; anything else it gained is ignored. Graph structure (tables, keys, time columns, foreign
 * keys) must be the run's, since the model's message passing is built on it.
 *
 *   - breaking: a table, key, time column or foreign key changed; a column the run reads is gone, or is
 *     now of another type or role (pin it with `data.tables.<t>.columns.<c>: <kind>` to keep its role)
 *   - notes: columns or tables the run never read were added, removed or changed: ignored
 */
import type { GraphSchema, TableSchema } from '../artifacts/graph_manifest.js';
import type { FeatureSpec } from './features.js';

export interface Compatibility {
  breaking: string[];
  notes: string[];
}

/** The role a column must have for the run's encoder of it. */
function readRoles(spec: FeatureSpec): Map<string, string> {
  const roles = new Map<string, string>();
  for (const [table, t] of Object.entries(spec.tables)) {
    for (const c of t.numeric) roles.set(`${table}.${c.name}`, 'numerical');
    for (const c of t.categorical) roles.set(`${table}.${c.name}`, 'categorical');
    for (const c of t.timestamps) roles.set(`${table}.${c}`, 'timestamp');
  }
  return roles;
}

function structure(t: TableSchema): string {
  const pk = t.primary_key ? `${t.primary_key.column}:${t.primary_key.type}` : 'none';
  const fks = t.foreign_keys.map((f) => `${f.column}->${f.target}`).sort().join(',');
  return `pk ${pk}; time ${t.time_column ?? 'none'}; fks [${fks}]`;
}

export function compatibility(trained: GraphSchema, spec: FeatureSpec, now: GraphSchema): Compatibility {
  const breaking: string[] = [];
  const notes: string[] = [];
  const reads = readRoles(spec);
  for (const [name, a] of Object.entries(trained.tables)) {
    const b = now.tables[name];
    if (!b) {
      breaking.push(`table ${name} is gone from the data`);
      continue;
    }
    if (structure(a) !== structure(b)) breaking.push(`table ${name}: keys changed (${structure(a)} → ${structure(b)})`);
    const cols = new Map(b.columns.map((c) => [c.name, c]));
    for (const c of a.columns) {
      const role = reads.get(`${name}.${c.name}`);
      const d = cols.get(c.name);
      if (!role) {
        if (!d) notes.push(`${name}.${c.name} is gone (the run does not read it)`);
        else if (d.role !== c.role || d.type !== c.type) notes.push(`${name}.${c.name} is now ${d.type} ${d.role} (the run does not read it)`);
        continue;
      }
      if (!d) breaking.push(`${name}.${c.name}, which the run reads as ${role}, is gone from the data`);
      else if (d.role !== role) breaking.push(`${name}.${c.name}, which the run reads as ${role}, is now inferred as ${d.role} (${d.reason}); pin it with data.tables.${name}.columns.${c.name}: ${role}`);
      else if (d.type !== c.type) notes.push(`${name}.${c.name} changed type from ${c.type} to ${d.type}; the run's ${role} encoder still applies`);
    }
    const known = new Set(a.columns.map((c) => c.name));
    for (const c of b.columns) if (!known.has(c.name)) notes.push(`${name}.${c.name} is new: ignored (the run was trained without it)`);
  }
  for (const name of Object.keys(now.tables)) if (!(name in trained.tables)) notes.push(`table ${name} is new: ignored`);
  return { breaking, notes };
}
