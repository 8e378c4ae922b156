/**
 * Differences between two graph schemas, in words: which table or column was added, removed or changed.
 * Used to refuse a run on a graph it was not trained for (embed, fine-tune) and to say why.
 */
import type { GraphSchema } from '../artifacts/graph_manifest.js';

export function diffSchemas(before: GraphSchema, after: GraphSchema): string[] {
  const out: string[] = [];
  for (const name of Object.keys(before.tables)) if (!(name in after.tables)) out.push(`table ${name} was removed`);
  for (const name of Object.keys(after.tables)) if (!(name in before.tables)) out.push(`table ${name} was added`);
  for (const [name, a] of Object.entries(before.tables)) {
    const b = after.tables[name];
    if (!b) continue;
    if (JSON.stringify(a.primary_key) !== JSON.stringify(b.primary_key)) {
      out.push(`table ${name}: primary key changed from ${a.primary_key ? `${a.primary_key.column} (${a.primary_key.type})` : 'none'} to ${b.primary_key ? `${b.primary_key.column} (${b.primary_key.type})` : 'none'}`);
    }
    if (a.time_column !== b.time_column) out.push(`table ${name}: time column changed from ${a.time_column ?? 'none'} to ${b.time_column ?? 'none'}`);
    const fk = (s: typeof a): string => s.foreign_keys.map((f) => `${f.column}->${f.target}`).sort().join(', ');
    if (fk(a) !== fk(b)) out.push(`table ${name}: foreign keys changed from [${fk(a)}] to [${fk(b)}]`);
    const colsB = new Map(b.columns.map((c) => [c.name, c]));
    for (const c of a.columns) {
      const d = colsB.get(c.name);
      if (!d) out.push(`table ${name}: column ${c.name} was removed`);
      else if (d.type !== c.type) out.push(`table ${name}: column ${c.name} changed type from ${c.type} to ${d.type}`);
      else if (d.role !== c.role) out.push(`table ${name}: column ${c.name} changed role from ${c.role} to ${d.role} (${d.reason})`);
    }
    const colsA = new Set(a.columns.map((c) => c.name));
    for (const c of b.columns) if (!colsA.has(c.name)) out.push(`table ${name}: column ${c.name} was added`);
  }
  return out;
}
