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
    if (JSON.stringify(a.primaryKey) !== JSON.stringify(b.primaryKey)) {
      out.push(`table ${name}: primary key changed from ${a.primaryKey ? `${a.primaryKey.column} (${a.primaryKey.type})` : 'none'} to ${b.primaryKey ? `${b.primaryKey.column} (${b.primaryKey.type})` : 'none'}`);
    }
    if (a.timeColumn !== b.timeColumn) out.push(`table ${name}: time column changed from ${a.timeColumn ?? 'none'} to ${b.timeColumn ?? 'none'}`);
    const fk = (s: typeof a): string => s.foreignKeys.map((f) => `${f.column}->${f.target}`).sort().join(', ');
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
