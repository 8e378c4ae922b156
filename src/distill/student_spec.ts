/**
 * The student's fields, read from the graph schema at distill time: the fact table's (or an entity task's
 * entity table's) columns (numeric standardisation, vocabularies), the embedding keys and their dimension, the RTI hop paths and their
 * element columns. The distilled run saves it (`student.json`), and export builds the ONNX graph from it.
 */
import type { Graph } from '../graph/graph.js';
import type { TaskSpec } from '../config/load.js';
import type { DistillationConfig } from '../config/schema.js';
import { ConfigError, suggest } from '../core/errors.js';
import { warn } from '../core/log.js';
import type { DeepModel } from '../model/deep_model.js';
import { isIntegerType, type CategoricalSpec, type NumericSpec, type RtiSpec, type StudentSpec } from '../model/student/spec.js';
import type { HopPath } from '../task/task_spec.js';

/** The student's fields from the graph schema: fact columns, embedding keys, RTI paths. */
export function studentSpec(d: DistillationConfig, task: TaskSpec, hops: HopPath[], graph: Graph, teacher: DeepModel): StudentSpec {
  const factTable = task.query.entity.table;
  const target = task.query.target.kind === 'fact' ? task.query.target.column.column : '';
  const schema = graph.manifest.schema;
  let offset = 0;
  const columnsOf = (table: string, exclude: Set<string>): { numeric: NumericSpec[]; categorical: CategoricalSpec[] } => {
    const tm = graph.manifest.tables[table]!;
    const types = new Map(schema.tables[table]!.columns.map((c) => [c.name, c.type]));
    const numeric = tm.numeric.filter((c) => !exclude.has(c.name)).map((c) => ({ column: c.name, mean: c.mean, std: c.std, type: types.get(c.name)! }));
    const categorical: CategoricalSpec[] = [];
    for (const c of tm.categorical) {
      if (exclude.has(c.name)) continue;
      const type = types.get(c.name)!;
      if (!isIntegerType(type) && type !== 'VARCHAR') {
        warn(`distill: ${table}.${c.name} (${type}) is categorical but neither text nor integer; the distilled model leaves it out`);
        continue;
      }
      categorical.push({ column: c.name, vocab: c.vocab, type, offset });
      offset += c.vocab.length + 2;
    }
    return { numeric, categorical };
  };
  const excluded = (table: string): Set<string> => new Set(d.exclude_columns.filter((c) => c.startsWith(`${table}.`)).map((c) => c.slice(table.length + 1)));
  for (const c of d.exclude_columns) {
    const [t, col] = [c.slice(0, c.indexOf('.')), c.slice(c.indexOf('.') + 1)];
    if (!schema.tables[t]?.columns.some((x) => x.name === col)) {
      throw new ConfigError(`distillation.exclude_columns: ${c} is not a column`, [], { hint: t in schema.tables ? suggest(col, schema.tables[t]!.columns.map((x) => x.name)) : suggest(t, Object.keys(schema.tables)) });
    }
  }
  const fact = columnsOf(factTable, new Set([target, ...excluded(factTable)]));
  const factSchema = schema.tables[factTable]!;
  const embeddings = d.embedding_keys.map((key) => {
    const column = key.slice(factTable.length + 1);
    // An entity task may look up its own entity's embedding by its primary key.
    if (factSchema.primary_key?.column === column) return { column, target: factTable, type: factSchema.primary_key.type, dim: teacher.spec.channels };
    const fk = factSchema.foreign_keys.find((f) => f.column === column)!;
    return { column, target: fk.target, type: fk.type, dim: teacher.spec.channels };
  });
  const rti: RtiSpec[] = hops.map((hop) => {
    const child = schema.tables[hop.child_table]!;
    const skip = excluded(hop.child_table);
    const cols = columnsOf(hop.child_table, new Set([...(hop.child_table === factTable ? [target] : []), ...skip]));
    const sameKeys = child.foreign_keys.filter(
      (f) => f.column !== hop.child_column && !skip.has(f.column) && !excluded(factTable).has(f.column) && factSchema.foreign_keys.some((g) => g.column === f.column && g.target === f.target),
    );
    return {
      path: hop.text,
      child_table: hop.child_table,
      child_key: hop.child_column,
      fact_key: hop.fact_column,
      max_length: hop.max_length,
      time_column: child.time_column!,
      numeric: cols.numeric,
      categorical: cols.categorical,
      ratios: cols.numeric.filter((c) => fact.numeric.some((f) => f.column === c.column)).map((c) => c.column),
      same_keys: sameKeys.map((f) => ({ column: f.column, target: f.target, type: f.type })),
      ...(d.rti_minute_recency ? { minute_recency: true } : {}),
    };
  });
  return {
    task: task.name,
    fact_table: factTable,
    // An entity task's request time is the anchor; a fact row's is its own time column.
    time_column: task.query.target.kind === 'fact' ? factSchema.time_column! : null,
    primary_key: factSchema.primary_key ? { column: factSchema.primary_key.column, target: factTable, type: factSchema.primary_key.type } : null,
    numeric: fact.numeric,
    categorical: fact.categorical,
    categorical_size: offset,
    categorical_dim: d.categorical_dim,
    embeddings,
    rti,
    proj_dim: d.projection_dim,
    element_dim: d.element_dim,
    hidden: [d.hidden, Math.max(2, Math.floor(d.hidden / 2))],
    use_embeddings: embeddings.length > 0,
    use_rti: rti.length > 0,
    output: { kind: task.query.taskType, label_mean: 0, label_std: 1 },
  };
}
