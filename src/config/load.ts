/**
 * Loads a config: YAML → zod (`.strict()`) → cross-field rules. Every problem is collected and reported
 * together, each with its path in the file, its line and column, and a fix.
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, isAbsolute, resolve } from 'node:path';
import { LineCounter, parseDocument, isMap, isSeq, type Document } from 'yaml';
import type { z } from 'zod';
import { ConfigError, suggest, type ConfigProblem } from '../core/errors.js';
import { parseQuery, conditionAggregates, conditionColumns, type Aggregate, type PredictiveQuery, PqlSyntaxError } from '../task/pql.js';
import { objectiveFor } from '../task/objective/objective.js';
import { rankingTarget, type RankingTarget } from '../task/ranking_target.js';
import type { HopPath, TaskDefinition } from '../task/task_spec.js';
import { configSchema, type RawConfig, type TableConfig, type ModelConfig, modelSchema } from './schema.js';

export interface TableSpec extends TableConfig {
  name: string;
  /** absolute file paths or globs (empty for database tables) */
  paths: string[];
  /** absolute path of the .duckdb file, when the table comes from one */
  databasePath?: string;
}

/** A task as the config defines it: the task layer's definition plus its resolved model block. */
export interface TaskSpec extends TaskDefinition {
  split: RawConfig['tasks'][string]['split'];
  model: ModelConfig;
  /** ranking tasks' list settings (tasks.<name>.rank) */
  rank?: RawConfig['tasks'][string]['rank'];
  /** the config's `features` block (the tree models' aggregates) */
  features?: RawConfig['features'];
}

export interface Config extends RawConfig {
  /** absolute path of the config file ('' when built in memory) */
  path: string;
  tableSpecs: Record<string, TableSpec>;
  taskSpecs: Record<string, TaskSpec>;
  hopPaths: HopPath[];
  /** the session recommender's ranking target (when the config has a `session_recommender` block) */
  sessionTarget: RankingTarget | null;
  /** The artifact root, absolute. */
  artifactsDir: string;
}

export interface LoadOptions {
  /** --artifacts DIR: overrides the config's `artifacts` */
  artifacts?: string;
  /** base for relative table paths when data.root is unset (default: process.cwd()) */
  cwd?: string;
}

export function loadConfig(file: string, opts: LoadOptions = {}): Config {
  const path = resolve(opts.cwd ?? process.cwd(), file);
  if (!existsSync(path)) {
    throw new ConfigError(`config file not found: ${file}`, [], { hint: 'pass --config with the path of a YAML file, e.g. configs/retail.yaml' });
  }
  return parseConfig(readFileSync(path, 'utf8'), path, opts);
}

export function parseConfig(text: string, path: string, opts: LoadOptions = {}): Config {
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { lineCounter, prettyErrors: false, uniqueKeys: true });
  if (doc.errors.length > 0) {
    const problems = doc.errors.map((e) => {
      // linePos is only filled with prettyErrors; the line counter gives the same from the offset.
      const pos = e.linePos?.[0] ?? lineCounter.linePos(e.pos[0]);
      return { path: '', message: `invalid YAML: ${e.message.split('\n')[0]}`, line: pos?.line, col: pos?.col, hint: 'fix the YAML syntax at that line' };
    });
    throw new ConfigError(`${path || 'config'}: cannot parse YAML`, problems);
  }
  const raw: unknown = doc.toJS();
  const locate = (p: readonly PropertyKey[]): { line?: number; col?: number } => locateInDoc(doc, lineCounter, p);

  const parsed = configSchema.safeParse(raw ?? {});
  const problems: ConfigProblem[] = [];
  let cfg: RawConfig;
  // Schema problems do not hide cross-field ones: the offending keys are pruned (defaults fill in) and the
  // cross-field rules run on what is left, minus anything under a pruned path.
  let pruned: string[] = [];
  if (parsed.success) {
    cfg = parsed.data;
  } else {
    problems.push(...parsed.error.issues.map((iss) => zodProblem(iss, locate)));
    const retry = pruneIssues(raw ?? {}, parsed.error.issues);
    const again = retry ? configSchema.safeParse(retry.value) : undefined;
    if (!retry || !again?.success) {
      throw new ConfigError(`${path || 'config'}: ${problems.length} problem${problems.length > 1 ? 's' : ''} in the config`, problems);
    }
    cfg = again.data;
    pruned = retry.paths;
  }
  const add = (p: (string | number)[], message: string, hint?: string): void => {
    const at = p.join('.');
    if (pruned.some((q) => at === q || at.startsWith(`${q}.`) || q.startsWith(`${at}.`))) return;
    problems.push({ path: at, message, hint, ...locate(p) });
  };

  const configDir = path ? dirname(path) : (opts.cwd ?? process.cwd());
  const base = cfg.data.root ? resolve(configDir, cfg.data.root) : (opts.cwd ?? process.cwd());
  const tableSpecs = checkTables(cfg, base, configDir, add);
  const taskSpecs = checkTasks(cfg, add, raw);
  const hopPaths = checkDistillation(cfg, taskSpecs, add);
  const sessionTarget = checkSessionRecommender(cfg, taskSpecs, add);

  if (problems.length > 0) {
    throw new ConfigError(`${path || 'config'}: ${problems.length} problem${problems.length > 1 ? 's' : ''} in the config`, problems);
  }
  const artifactsDir = resolve(opts.cwd ?? process.cwd(), opts.artifacts ?? (cfg.artifacts ? resolve(configDir, cfg.artifacts) : 'artifacts'));
  return { ...cfg, path, tableSpecs, taskSpecs, hopPaths, sessionTarget, artifactsDir };
}

type Add = (p: (string | number)[], message: string, hint?: string) => void;

/** The session recommender's ranking task resolved against the tables, and its base tasks. */
function checkSessionRecommender(cfg: RawConfig, tasks: Record<string, TaskSpec>, add: Add): RankingTarget | null {
  const r = cfg.session_recommender;
  if (!r) return null;
  const at = ['session_recommender'];
  const taskNames = Object.keys(cfg.tasks);
  for (const key of ['task', 'user_base', 'item_base'] as const) {
    const t = r[key];
    if (t !== undefined && !(t in cfg.tasks)) add([...at, key], `unknown task "${t}"`, suggest(t, taskNames));
  }
  const task = tasks[r.task];
  if (!task) return null;
  if (task.query.taskType !== 'ranking') {
    add([...at, 'task'], `task "${r.task}" is a ${task.query.taskType} task; the session recommender serves a ranking task`, 'name a task whose query is PREDICT LIST_DISTINCT(<fact>.<item fk>, 0, 7, days) RANK TOP k FOR EACH <user>.<primary key>');
    return null;
  }
  try {
    return rankingTarget(task.query, cfg.data.tables, ['tasks', r.task, 'query']);
  } catch (e) {
    if (!(e instanceof ConfigError)) throw e;
    for (const p of e.problems) add(p.path.split('.'), p.message, p.hint);
    return null;
  }
}

function checkTables(cfg: RawConfig, base: string, configDir: string, add: Add): Record<string, TableSpec> {
  const names = Object.keys(cfg.data.tables);
  const specs: Record<string, TableSpec> = {};
  if (names.length === 0 && !cfg.anomaly) add(['data', 'tables'], 'no tables', 'add at least one table with a path');
  for (const [name, t] of Object.entries(cfg.data.tables)) {
    const at = ['data', 'tables', name];
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) add(at, `table name "${name}" must be a plain identifier`, 'use letters, digits and "_"');
    if (t.path === undefined && t.database === undefined) add(at, 'no source', 'give `path:` (CSV/Parquet, globs allowed) or `database:` (a .duckdb file)');
    if (t.path !== undefined && t.database !== undefined) add([...at, 'database'], '`path` and `database` are both set', 'keep one source per table');
    if (t.table !== undefined && t.database === undefined) add([...at, 'table'], '`table` is only used with `database`', 'remove `table` or add `database`');
    const paths = t.path === undefined ? [] : (Array.isArray(t.path) ? t.path : [t.path]).map((p) => (isAbsolute(p) ? p : resolve(base, p)));
    const format = t.format ?? (paths[0] ? inferFormat(paths[0]) : undefined);
    if (t.path !== undefined && format === undefined) add([...at, 'path'], `cannot tell the format of "${paths[0]}"`, 'use a .csv/.csv.gz/.tsv or .parquet extension, or set `format: csv|parquet`');
    if (t.csv !== undefined && format !== 'csv') add([...at, 'csv'], '`csv` options apply to CSV sources only', 'remove the `csv` block');
    if (t.time_unit !== undefined && t.time_column === undefined) add([...at, 'time_unit'], '`time_unit` without `time_column`', 'add `time_column` or remove `time_unit`');
    for (const [col, target] of Object.entries(t.foreign_keys)) {
      if (!(target in cfg.data.tables)) {
        add([...at, 'foreign_keys', col], `references unknown table "${target}"`, suggest(target, names));
      } else if (!cfg.data.tables[target]!.primary_key) {
        add([...at, 'foreign_keys', col], `references table "${target}", which has no primary_key`, `add \`primary_key:\` to data.tables.${target}`);
      }
      if (col === t.time_column) add([...at, 'foreign_keys', col], 'the time column cannot be a foreign key', 'use another column');
    }
    if (t.primary_key && t.primary_key === t.time_column) add([...at, 'primary_key'], 'the primary key cannot be the time column', 'pick another column');
    const keyCols = [t.primary_key, t.time_column, ...Object.keys(t.foreign_keys)].filter(Boolean) as string[];
    for (const [col, kind] of Object.entries(t.columns)) {
      if (keyCols.includes(col) && kind !== 'ignore') add([...at, 'columns', col], `"${col}" is a key or time column; its type cannot be overridden`, 'remove the override');
    }
    specs[name] = {
      ...t,
      format,
      name,
      paths,
      databasePath: t.database === undefined ? undefined : isAbsolute(t.database) ? t.database : resolve(configDir, t.database),
    };
  }
  return specs;
}

function inferFormat(p: string): 'csv' | 'parquet' | undefined {
  const lower = p.toLowerCase();
  if (/\.(csv|tsv|txt)(\.gz|\.zst)?$/.test(lower)) return 'csv';
  if (/\.parquet$/.test(lower)) return 'parquet';
  return undefined;
}

function checkTasks(cfg: RawConfig, add: Add, raw: unknown): Record<string, TaskSpec> {
  const tables = cfg.data.tables;
  const names = Object.keys(tables);
  const specs: Record<string, TaskSpec> = {};
  const fanoutProblem = (model: ModelConfig, where: (string | number)[]): void => {
    add(where, `num_neighbors has ${model.num_neighbors.length} entries but layers is ${model.layers}`, `give one fanout per layer, e.g. num_neighbors: [${Array.from({ length: model.layers }, (_, i) => Math.max(2, 16 >> i)).join(', ')}]`);
  };
  let topLevelReported = false;
  // A mistake in the top-level model block is reported once, not once per task that inherits it.
  let gatReported = false;
  const rawTasks = (raw as { tasks?: Record<string, { model?: Record<string, unknown> | string } | null> } | null)?.tasks;
  for (const [name, task] of Object.entries(cfg.tasks)) {
    const at = ['tasks', name];
    // zod fills the defaults into the partial override block too: keep only the keys the file sets, or
    // every task with a model block would reset the top-level settings to their defaults.
    const rawModel = rawTasks?.[name]?.model;
    const written = rawModel === 'auto' ? ['search'] : typeof rawModel === 'object' && rawModel !== null ? Object.keys(rawModel) : [];
    const overrides = Object.fromEntries(written.map((k) => [k, (task.model as Record<string, unknown> | undefined)?.[k]]));
    const model = modelSchema.parse({ ...cfg.model, ...overrides });
    if (model.num_neighbors.length !== model.layers) {
      if ('num_neighbors' in overrides || 'layers' in overrides) fanoutProblem(model, [...at, 'model']);
      // A mistake in the top-level block is reported once, not once per task that inherits it.
      else if (!topLevelReported) fanoutProblem(model, ['model', 'num_neighbors']);
      topLevelReported ||= !('num_neighbors' in overrides || 'layers' in overrides);
    }
    const gatOverridden = 'channels' in overrides || 'heads' in overrides || 'encoder' in overrides;
    if (model.encoder === 'gat' && model.channels % model.heads !== 0 && (gatOverridden || !gatReported)) {
      gatReported ||= !gatOverridden;
      add(gatOverridden ? [...at, 'model', 'heads'] : ['model', 'heads'], `GAT splits channels over heads: channels ${model.channels} is not divisible by heads ${model.heads}`, `e.g. channels: ${model.heads * Math.ceil(model.channels / model.heads)} or heads: ${largestDivisor(model.channels, model.heads)}`);
    }
    let query: PredictiveQuery;
    try {
      query = parseQuery(task.query);
    } catch (e) {
      if (e instanceof PqlSyntaxError) {
        add([...at, 'query'], e.message, 'see the PQL subset in docs/tasks.md (PREDICT … FOR EACH table.key [WHERE …])');
        continue;
      }
      throw e;
    }
    const tableOk = (t: string, p: (string | number)[]): boolean => {
      if (t in tables) return true;
      add(p, `query refers to unknown table "${t}"`, suggest(t, names));
      return false;
    };
    const ent = query.entity;
    if (tableOk(ent.table, [...at, 'query'])) {
      const et = tables[ent.table]!;
      if (query.target.kind === 'entity' && et.primary_key !== ent.column) {
        add([...at, 'query'], `FOR EACH ${ent.table}.${ent.column}: "${ent.column}" is not the primary key of ${ent.table}`, et.primary_key ? `use ${ent.table}.${et.primary_key}` : `declare data.tables.${ent.table}.primary_key: ${ent.column}`);
      }
      if (query.target.kind === 'fact') {
        if (!et.time_column) add([...at, 'query'], `fact-row target on ${ent.table}, which has no time_column`, `add data.tables.${ent.table}.time_column: each row is predicted at its own time`);
        if (!et.primary_key) add([...at, 'query'], `FOR EACH ${ent.table}.${ent.column}: ${ent.table} has no primary_key`, `declare data.tables.${ent.table}.primary_key: ${ent.column}`);
        else if (et.primary_key !== ent.column) add([...at, 'query'], `FOR EACH ${ent.table}.${ent.column}: "${ent.column}" is not the primary key of ${ent.table}`, `use ${ent.table}.${et.primary_key}`);
      }
    }
    const aggs = [...(query.target.kind === 'entity' ? [query.target.aggregate] : []), ...conditionAggregates(query.where)];
    for (const agg of aggs) {
      if (!tableOk(agg.table, [...at, 'query'])) continue;
      const t = tables[agg.table]!;
      if (!t.time_column) add([...at, 'query'], `aggregate over ${agg.table}, which has no time_column`, `add data.tables.${agg.table}.time_column`);
      const link = Object.entries(t.foreign_keys).filter(([, target]) => target === ent.table);
      if (agg.table !== ent.table && link.length === 0) {
        add([...at, 'query'], `${agg.table} has no foreign key to ${ent.table}, so ${agg.fn}(${agg.table}…) cannot be computed per ${ent.table}`, `add data.tables.${agg.table}.foreign_keys: { <column>: ${ent.table} }`);
      } else if (link.length > 1) {
        add([...at, 'query'], `${agg.table} has ${link.length} foreign keys to ${ent.table} (${link.map(([c]) => c).join(', ')}); the aggregate is ambiguous`, 'keep one foreign key to the entity table');
      }
    }
    if (query.target.kind === 'entity' && query.target.top_k !== null) checkRankingTarget(query.target.aggregate, tables, [...at, 'query'], add);
    const objective = objectiveFor(query.taskType);
    if (model.loss !== undefined && !objective.losses.includes(model.loss)) {
      add('loss' in overrides ? [...at, 'model', 'loss'] : ['model', 'loss'], `loss ${model.loss} does not fit task ${name}, a ${objective.description} task`, `use ${objective.losses.join(' or ')}`);
    }
    for (const col of [...(query.target.kind === 'fact' ? [query.target.column] : []), ...conditionColumns(query.where)]) {
      tableOk(col.table, [...at, 'query']);
    }
    if (task.rank && !(query.target.kind === 'entity' && query.target.top_k !== null)) add([...at, 'rank'], `task ${name} is not a ranking task (no RANK TOP k), so rank settings do not apply`, `remove tasks.${name}.rank`);
    if (task.label_delay !== undefined && query.target.kind !== 'fact') add([...at, 'label_delay'], `task ${name} is not a fact-row task, so label_delay does not apply (an entity task's labels come from after the anchor; its history before it is already an input)`, `remove tasks.${name}.label_delay`);
    specs[name] = { name, query, split: task.split, model, features: cfg.features, ...(task.rank ? { rank: task.rank } : {}), ...(task.label_delay !== undefined ? { label_delay: task.label_delay } : {}) };
  }
  return specs;
}

/**
 * A ranking target lists the items a foreign key points to: `LIST_DISTINCT(<table>.<fk>, …)` needs `fk` to
 * be declared a foreign key of that table, to an items table with a primary key (the key the top-k file
 * writes).
 */
function checkRankingTarget(agg: Aggregate, tables: RawConfig['data']['tables'], where: (string | number)[], add: Add): void {
  const t = tables[agg.table];
  if (!t || agg.column === null) return;
  const itemTable = t.foreign_keys[agg.column];
  if (itemTable === undefined) {
    const fks = Object.keys(t.foreign_keys);
    add(where, `LIST_DISTINCT(${agg.table}.${agg.column}, …): ${agg.column} is not a foreign key of ${agg.table}, so there are no items to rank`, fks.length ? `rank the rows a foreign key points to: ${suggest(agg.column, fks.map(String))}` : `declare data.tables.${agg.table}.foreign_keys: { ${agg.column}: <items table> }`);
    return;
  }
  if (!tables[itemTable]?.primary_key) {
    add(where, `LIST_DISTINCT(${agg.table}.${agg.column}, …): the items' table ${itemTable} has no primary_key`, `declare data.tables.${itemTable}.primary_key: the top-k file names items by it`);
  }
}

/** The largest divisor of n that is at most `atMost` (a heads value that fits the channels). */
function largestDivisor(n: number, atMost: number): number {
  for (let d = Math.min(n, atMost); d > 1; d--) if (n % d === 0) return d;
  return 1;
}

/**
 * A hop path: `<fact>.<fk>-><parent>.<primary key>-><child>.<fk>` (the child rows sharing a fact row's
 * parent, for fact-row tasks), or `<entity>.<primary key>-><child>.<fk>` (the entity's own child rows, for
 * entity tasks; stored with the entity as both fact and parent).
 */
export function parseHopPath(text: string, maxLength: number, tables: RawConfig['data']['tables'], entityTask?: boolean): HopPath | string {
  const steps = text.split('->').map((s) => s.trim());
  const parsed = steps.map((s) => /^([A-Za-z_][A-Za-z0-9_]*)\.([^.\s]+)$/.exec(s));
  if (entityTask === false && steps.length !== 3) {
    return 'a hop path has three steps for a fact-row task: <fact>.<fk>-><parent>.<primary key>-><child>.<fk>, e.g. transactions.customer_id->customers.customer_id->transactions.customer_id (longer paths are not supported)';
  }
  if (entityTask === true && steps.length !== 2) {
    return 'a hop path has two steps for an entity task: <entity>.<primary key>-><child>.<fk>, e.g. customers.customer_id->transactions.customer_id (the entity\'s own rows; longer paths are not supported)';
  }
  if ((steps.length !== 3 && steps.length !== 2) || parsed.some((m) => m === null)) {
    return (
      'a hop path is <fact>.<fk>-><parent>.<primary key>-><child>.<fk> (fact-row tasks), e.g. transactions.customer_id->customers.customer_id->transactions.customer_id, ' +
      'or <entity>.<primary key>-><child>.<fk> (entity tasks), e.g. customers.customer_id->transactions.customer_id (longer paths are not supported)'
    );
  }
  const triples = parsed as unknown as [string, string, string][];
  // The two-step entity form is the three-step form whose fact is the parent itself.
  const [[, factTable, factColumn], [, parentTable, parentKey], [, childTable, childColumn]] = steps.length === 2 ? [triples[0]!, triples[0]!, triples[1]!] : [triples[0]!, triples[1]!, triples[2]!];
  for (const t of [factTable, parentTable, childTable]) if (!(t in tables)) return `unknown table "${t}" (${suggest(t, Object.keys(tables))})`;
  if (steps.length === 3 && tables[factTable]!.foreign_keys[factColumn] !== parentTable) return `${factTable}.${factColumn} is not a foreign key to ${parentTable}`;
  if (tables[parentTable]!.primary_key !== parentKey) return `${parentTable}.${parentKey} is not the primary key of ${parentTable}`;
  if (tables[childTable]!.foreign_keys[childColumn] !== parentTable) return `${childTable}.${childColumn} is not a foreign key to ${parentTable}`;
  if (!tables[childTable]!.time_column) return `${childTable} has no time_column, so "the last N interactions" is undefined`;
  return { text, fact_table: factTable, fact_column: factColumn, parent_table: parentTable, parent_key: parentKey, child_table: childTable, child_column: childColumn, max_length: maxLength };
}

function checkDistillation(cfg: RawConfig, tasks: Record<string, TaskSpec>, add: Add): HopPath[] {
  const d = cfg.distillation;
  if (!d) return [];
  const at = ['distillation'];
  const taskNames = Object.keys(cfg.tasks);
  if (!(d.task in cfg.tasks)) add([...at, 'task'], `unknown task "${d.task}"`, suggest(d.task, taskNames));
  if (!(d.base in cfg.tasks)) add([...at, 'base'], `unknown task "${d.base}"`, suggest(d.base, taskNames));
  const serving = tasks[d.task];
  const entityTask = serving?.query.target.kind === 'entity';
  const factTable = serving?.query.entity.table;
  d.embedding_keys.forEach((key, i) => {
    const m = /^([A-Za-z_][A-Za-z0-9_]*)\.(.+)$/.exec(key);
    if (!m) {
      add([...at, 'embedding_keys', i], `"${key}" is not <table>.<column>`, entityTask ? `e.g. ${factTable}.${cfg.data.tables[factTable!]?.primary_key ?? '<primary key>'}` : 'e.g. transactions.customer_id');
      return;
    }
    const [, table, column] = m as unknown as [string, string, string];
    const own = entityTask && table === factTable && cfg.data.tables[table]?.primary_key === column;
    if (factTable && table !== factTable) {
      add([...at, 'embedding_keys', i], `"${key}" is not a column of the serving table ${factTable}`, entityTask ? `use ${factTable}.${cfg.data.tables[factTable]?.primary_key ?? '<primary key>'} (the entity's own embedding) or ${factTable}.<foreign key>` : `use ${factTable}.<foreign key>`);
    } else if (!own && table in cfg.data.tables && cfg.data.tables[table]!.foreign_keys[column] === undefined) {
      const fks = Object.keys(cfg.data.tables[table]!.foreign_keys).map((c) => `${table}.${c}`);
      const own = entityTask && cfg.data.tables[table]!.primary_key ? [`${table}.${cfg.data.tables[table]!.primary_key}`] : [];
      add([...at, 'embedding_keys', i], `"${key}" is not a foreign key${entityTask ? ' or the entity\'s primary key' : ''}, so there is no entity to embed`, fks.length || own.length ? suggest(key, [...own, ...fks]) : `declare data.tables.${table}.foreign_keys`);
    }
  });
  const hopPaths: HopPath[] = [];
  for (const [text, n] of Object.entries(d.real_time_interactions)) {
    const hp = parseHopPath(text, n, cfg.data.tables, serving ? entityTask : undefined);
    if (typeof hp === 'string') add([...at, 'real_time_interactions', text], hp);
    else if (factTable && hp.fact_table !== factTable) {
      add([...at, 'real_time_interactions', text], `the path must start at the serving table ${factTable}`, entityTask ? `start with ${factTable}.${cfg.data.tables[factTable]?.primary_key ?? '<primary key>'}->` : `start with ${factTable}.<foreign key>`);
    } else hopPaths.push(hp);
  }
  return hopPaths;
}

/** A copy of `raw` without the values zod rejected (unknown keys, bad values), and their dotted paths; null if a problem is at the root. */
function pruneIssues(raw: unknown, issues: readonly z.core.$ZodIssue[]): { value: unknown; paths: string[] } | null {
  const value = structuredClone(raw) as Record<PropertyKey, unknown>;
  const paths: string[] = [];
  for (const iss of issues) {
    const targets = iss.code === 'unrecognized_keys' ? iss.keys.map((k) => [...iss.path, k]) : [iss.path];
    for (const t of targets) {
      if (t.length === 0) return null;
      let node: unknown = value;
      for (const k of t.slice(0, -1)) node = node && typeof node === 'object' ? (node as Record<PropertyKey, unknown>)[k] : undefined;
      if (node && typeof node === 'object') delete (node as Record<PropertyKey, unknown>)[t[t.length - 1]!];
      paths.push(t.map(String).join('.'));
    }
  }
  return { value, paths };
}

function zodProblem(iss: z.core.$ZodIssue, locate: (p: readonly PropertyKey[]) => { line?: number; col?: number }): ConfigProblem {
  const p = iss.path.map(String);
  const pos = locate(iss.path);
  let message = iss.message;
  let hint: string | undefined;
  if (iss.code === 'unrecognized_keys') {
    const keys = iss.keys;
    const known = knownKeysAt(iss.path);
    message = `unknown key${keys.length > 1 ? 's' : ''} ${keys.map((k) => `"${k}"`).join(', ')}`;
    hint = keys.map((k) => (known.length ? `${k}: ${suggest(k, known)}` : `remove "${k}"`)).join('; ');
    const keyPos = locate([...iss.path, keys[0]!]);
    return { path: p.join('.'), message, hint, ...(keyPos.line ? keyPos : pos) };
  }
  if (iss.code === 'invalid_type' && iss.message.includes('received undefined')) {
    message = 'required but missing';
    hint = `add \`${p[p.length - 1]}:\``;
  } else if (iss.code === 'invalid_value' && 'values' in iss) {
    hint = `use one of: ${(iss.values as unknown[]).map((v) => JSON.stringify(v)).join(', ')}`;
  }
  return { path: p.join('.'), message, hint, ...pos };
}

/** The keys the schema allows at a path, for "did you mean" on unknown keys. */
function knownKeysAt(path: readonly PropertyKey[]): string[] {
  // Walk the zod schema along the path; records (tables, tasks) skip one level.
  let schema: unknown = configSchema;
  for (const seg of path) {
    schema = unwrap(schema);
    const def = (schema as { def?: { type?: string; shape?: Record<string, unknown>; valueType?: unknown } }).def;
    if (def?.type === 'object' && def.shape) schema = def.shape[String(seg)];
    else if (def?.type === 'record') schema = def.valueType;
    else return [];
  }
  const def = (unwrap(schema) as { def?: { type?: string; shape?: Record<string, unknown> } }).def;
  return def?.type === 'object' && def.shape ? Object.keys(def.shape) : [];
}

function unwrap(s: unknown): unknown {
  let cur = s as { def?: { type?: string; innerType?: unknown; in?: unknown; out?: unknown; schema?: unknown } } | undefined;
  for (let i = 0; i < 10 && cur?.def; i++) {
    const t = cur.def.type;
    if (t === 'optional' || t === 'default' || t === 'nullable' || t === 'prefault') cur = cur.def.innerType as typeof cur;
    // z.preprocess (e.g. `model: auto`) is a pipe from a transform into the real schema: the keys are in `out`
    else if (t === 'pipe') cur = ((cur.def.in as typeof cur)?.def?.type === 'transform' ? cur.def.out : cur.def.in) as typeof cur;
    else break;
  }
  return cur;
}

function locateInDoc(doc: Document, lc: LineCounter, path: readonly PropertyKey[]): { line?: number; col?: number } {
  // The deepest node that exists along the path: an unknown or missing key points at its parent.
  for (let n = path.length; n >= 0; n--) {
    const node = doc.getIn(path.slice(0, n) as unknown[], true) as { range?: [number, number, number] } | undefined;
    const parent = n > 0 ? doc.getIn(path.slice(0, n - 1) as unknown[], true) : doc.contents;
    // Prefer the key's position for map entries (that's where a person looks).
    if (n > 0 && isMap(parent)) {
      const pair = parent.items.find((it) => String((it.key as { value?: unknown })?.value ?? it.key) === String(path[n - 1]));
      const keyRange = (pair?.key as { range?: [number, number, number] } | undefined)?.range;
      if (keyRange) return lc.linePos(keyRange[0]);
    }
    if (n > 0 && isSeq(parent) && node?.range) return lc.linePos(node.range[0]);
    if (node?.range) return lc.linePos(node.range[0]);
  }
  return {};
}
