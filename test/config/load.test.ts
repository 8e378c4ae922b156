import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { loadConfig, parseConfig, type Config } from '../../src/config/load.js';
import { ConfigError, type ConfigProblem } from '../../src/core/errors.js';
import { positionOf, replaceOnce } from '../helpers/text.js';

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

/** A valid config touching every block the cross-field rules look at. */
const BASE = `name: shop
data:
  tables:
    customers: { path: customers.csv, primary_key: customer_id }
    articles: { path: articles.csv, primary_key: article_id }
    transactions:
      path: transactions.csv
      primary_key: transaction_id
      time_column: t_dat
      foreign_keys: { customer_id: customers, article_id: articles }
tasks:
  churn:
    query: PREDICT COUNT(transactions.*, 0, 7, days) = 0 FOR EACH customers.customer_id
  fraud:
    query: PREDICT transactions.fraud = 1 FOR EACH transactions.transaction_id
model: { layers: 2, channels: 16, num_neighbors: [8, 4], epochs: 1 }
distillation:
  task: fraud
  base: fraud
  embedding_keys: [transactions.customer_id]
  max_embedding_offset: 14 days
  real_time_interactions:
    transactions.customer_id->customers.customer_id->transactions.customer_id: 16
`;

const FILE = '/configs/shop.yaml';

function parse(text: string): Config {
  return parseConfig(text, FILE, { cwd: '/data' });
}

/** The problems a config text is rejected with (fails the test when it loads). */
function problemsOf(text: string): ConfigProblem[] {
  try {
    parse(text);
  } catch (e) {
    expect(e).toBeInstanceOf(ConfigError);
    return (e as ConfigError).problems;
  }
  throw new Error('the config loaded, but a ConfigError was expected');
}

describe('loadConfig accepts valid configs', () => {
  it('configs/retail.yaml (the bundled default) loads with its tasks, tables and hop paths', () => {
    const cfg = loadConfig('configs/retail.yaml', { cwd: REPO, artifacts: '/tmp/gnnctl-artifacts' });
    expect(Object.keys(cfg.taskSpecs).sort()).toEqual(['churn', 'fraud', 'item_sales', 'next_purchases']);
    expect(cfg.taskSpecs.next_purchases!.query.taskType).toBe('ranking');
    expect(cfg.taskSpecs.churn!.query.taskType).toBe('binary');
    expect(cfg.taskSpecs.item_sales!.query.taskType).toBe('regression');
    expect(cfg.taskSpecs.fraud!.query.target.kind).toBe('fact');
    expect(cfg.tableSpecs.transactions!.paths).toEqual([join(REPO, 'datasets/retail/transactions.csv')]);
    expect(cfg.tableSpecs.transactions!.format).toBe('csv');
    expect(cfg.hopPaths).toEqual([
      {
        text: 'transactions.customer_id->customers.customer_id->transactions.customer_id',
        fact_table: 'transactions',
        fact_column: 'customer_id',
        parent_table: 'customers',
        parent_key: 'customer_id',
        child_table: 'transactions',
        child_column: 'customer_id',
        max_length: 16,
      },
    ]);
    expect(cfg.distillation!.max_embedding_offset).toBe(14 * 86400);
    expect(cfg.distillation!.min_embedding_offset).toBe(12 * 3600);
    expect(cfg.artifactsDir).toBe('/tmp/gnnctl-artifacts');
  });

  it('the base fixture config loads, durations become seconds and paths resolve against cwd', () => {
    const cfg = parse(BASE);
    expect(cfg.path).toBe(FILE);
    expect(cfg.tableSpecs.customers!.paths).toEqual(['/data/customers.csv']);
    expect(cfg.distillation!.max_embedding_offset).toBe(14 * 86400);
    expect(cfg.artifactsDir).toBe('/data/artifacts');
  });

  it('a task-level model block overrides only the keys it sets; the rest comes from the top-level model block', () => {
    const text = replaceOnce(BASE, 'FOR EACH transactions.transaction_id\n', 'FOR EACH transactions.transaction_id\n    model: { num_neighbors: [1, 8] }\n');
    const cfg = parse(text);
    expect(cfg.taskSpecs.fraud!.model).toMatchObject({ num_neighbors: [1, 8], layers: 2, channels: 16, epochs: 1 });
    expect(cfg.taskSpecs.churn!.model).toMatchObject({ num_neighbors: [8, 4], channels: 16, epochs: 1 });
  });

  it('a missing file is a ConfigError that says how to pass one', () => {
    const err = (() => {
      try {
        loadConfig('nope.yaml', { cwd: '/tmp' });
      } catch (e) {
        return e;
      }
    })();
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as ConfigError).describe()).toMatch(/config file not found: nope\.yaml\n {2}hint: pass --config/);
  });
});

interface RuleCase {
  name: string;
  edit: (yaml: string) => string;
  path: string;
  message: RegExp;
  hint: RegExp;
  /** where line/col must point: the first occurrence of this text in the edited file (after `after`) */
  at: string;
  after?: string;
  /** every problem path, when the mistake also trips rules that depend on it (default: just `path`) */
  paths?: string[];
}

const RULES: RuleCase[] = [
  {
    name: 'unknown key with did-you-mean',
    edit: (y) => replaceOnce(y, 'channels: 16', 'chanels: 16'),
    path: 'model',
    message: /^unknown key "chanels"$/,
    hint: /^chanels: did you mean "channels"/,
    at: 'chanels',
  },
  {
    name: 'unknown key inside a table',
    edit: (y) => replaceOnce(y, 'primary_key: article_id }', 'primary_key: article_id, colums: { prod_name: text } }'),
    path: 'data.tables.articles',
    message: /^unknown key "colums"$/,
    hint: /did you mean "columns"\?/,
    at: 'colums',
  },
  {
    name: 'foreign key to an unknown table',
    edit: (y) => replaceOnce(y, 'customer_id: customers,', 'customer_id: customer,'),
    path: 'data.tables.transactions.foreign_keys.customer_id',
    message: /references unknown table "customer"/,
    hint: /did you mean "customers"\?/,
    at: 'customer_id: customer,',
    // the churn aggregate and the RTI path needed that link
    paths: [
      'data.tables.transactions.foreign_keys.customer_id',
      'tasks.churn.query',
      'distillation.real_time_interactions.transactions.customer_id->customers.customer_id->transactions.customer_id',
    ],
  },
  {
    name: 'foreign key to a table without primary_key',
    edit: (y) => replaceOnce(y, 'articles: { path: articles.csv, primary_key: article_id }', 'articles: { path: articles.csv }'),
    path: 'data.tables.transactions.foreign_keys.article_id',
    message: /references table "articles", which has no primary_key/,
    hint: /add `primary_key:` to data\.tables\.articles/,
    at: 'article_id: articles',
  },
  {
    name: 'time_unit without time_column',
    edit: (y) => replaceOnce(y, 'primary_key: customer_id }', 'primary_key: customer_id, time_unit: ms }'),
    path: 'data.tables.customers.time_unit',
    message: /`time_unit` without `time_column`/,
    hint: /add `time_column` or remove `time_unit`/,
    at: 'time_unit',
  },
  {
    name: 'both path and database',
    edit: (y) => replaceOnce(y, 'customers: { path: customers.csv,', 'customers: { path: customers.csv, database: shop.duckdb,'),
    path: 'data.tables.customers.database',
    message: /`path` and `database` are both set/,
    hint: /keep one source per table/,
    at: 'database',
  },
  {
    name: 'fanouts length differs from layers',
    edit: (y) => replaceOnce(y, 'num_neighbors: [8, 4]', 'num_neighbors: [8, 4, 2]'),
    path: 'model.num_neighbors',
    message: /num_neighbors has 3 entries but layers is 2/,
    hint: /one fanout per layer, e\.g\. num_neighbors: \[16, 8\]/,
    at: 'num_neighbors',
  },
  {
    name: 'fanouts length differs from a task-level layers override',
    edit: (y) => replaceOnce(y, 'FOR EACH transactions.transaction_id\n', 'FOR EACH transactions.transaction_id\n    model: { layers: 3 }\n'),
    path: 'tasks.fraud.model',
    message: /num_neighbors has 2 entries but layers is 3/,
    hint: /num_neighbors: \[16, 8, 4\]/,
    at: 'model: { layers: 3 }',
  },
  {
    name: 'GAT heads that do not divide the channels',
    edit: (y) => replaceOnce(y, 'model: { layers: 2, channels: 16,', 'model: { encoder: gat, heads: 3, layers: 2, channels: 16,'),
    path: 'model.heads',
    message: /channels 16 is not divisible by heads 3/,
    hint: /channels: 18 or heads: 2/,
    at: 'heads: 3',
  },
  {
    name: 'a loss that does not fit the task kind (task-level override)',
    edit: (y) => replaceOnce(y, 'FOR EACH transactions.transaction_id\n', 'FOR EACH transactions.transaction_id\n    model: { loss: l1 }\n'),
    path: 'tasks.fraud.model.loss',
    message: /loss l1 does not fit task fraud, a binary classification task/,
    hint: /use bce/,
    at: 'loss: l1',
  },
  {
    name: 'fit_until that is not a time',
    edit: (y) => replaceOnce(y, 'data:\n', 'data:\n  fit_until: "2020-08-32"\n'),
    path: 'data.fit_until',
    message: /not a time \(got "2020-08-32"\)/,
    hint: /.*/,
    at: 'fit_until',
  },
  {
    name: 'unknown task in distillation',
    edit: (y) => replaceOnce(y, '  task: fraud', '  task: frad'),
    path: 'distillation.task',
    message: /unknown task "frad"/,
    hint: /did you mean "fraud"\?/,
    at: 'task: frad',
  },
  {
    name: 'embedding key that is not a foreign key',
    edit: (y) => replaceOnce(y, 'embedding_keys: [transactions.customer_id]', 'embedding_keys: [transactions.price]'),
    path: 'distillation.embedding_keys.0',
    message: /"transactions\.price" is not a foreign key, so there is no entity to embed/,
    hint: /did you mean "transactions\.article_id"\?/,
    at: 'transactions.price',
  },
  {
    name: 'hop path through a column that is not a foreign key to the parent',
    edit: (y) => replaceOnce(y, 'transactions.customer_id->customers.customer_id->transactions.customer_id: 16', 'transactions.customer_id->articles.article_id->transactions.article_id: 16'),
    path: 'distillation.real_time_interactions.transactions.customer_id->articles.article_id->transactions.article_id',
    message: /transactions\.customer_id is not a foreign key to articles/,
    hint: /^$/,
    at: 'transactions.customer_id->articles',
  },
  {
    name: 'hop path with two steps',
    edit: (y) => replaceOnce(y, 'transactions.customer_id->customers.customer_id->transactions.customer_id: 16', 'transactions.customer_id->customers.customer_id: 16'),
    path: 'distillation.real_time_interactions.transactions.customer_id->customers.customer_id',
    message: /a hop path has three steps/,
    hint: /^$/,
    at: 'transactions.customer_id->customers.customer_id: 16',
  },
  {
    name: 'bad duration text',
    edit: (y) => replaceOnce(y, 'max_embedding_offset: 14 days', 'max_embedding_offset: 14 dayz'),
    path: 'distillation.max_embedding_offset',
    message: /not a duration \(got "14 dayz"\); write e\.g\. "14 days"/,
    hint: /^$/,
    at: 'max_embedding_offset',
  },
  {
    name: 'bad enum value',
    edit: (y) => replaceOnce(y, 'model: { layers: 2,', 'model: { encoder: gcn, layers: 2,'),
    path: 'model.encoder',
    message: /./,
    hint: /use one of: "sage", "gat"/,
    at: 'encoder',
  },
  {
    name: 'query that does not parse (the caret message travels with the problem)',
    edit: (y) => replaceOnce(y, 'COUNT(transactions.*, 0, 7, days) = 0 FOR EACH', 'COUNT(transactions.*, 0, 7, weeks) = 0 FOR EACH'),
    path: 'tasks.churn.query',
    message: /expected a time unit \(days, hours or minutes\) \(got "weeks"\)\n.*\n\s+\^/,
    hint: /PQL/,
    at: 'query',
  },
  {
    name: 'query on an unknown table',
    edit: (y) => replaceOnce(y, 'FOR EACH customers.customer_id', 'FOR EACH customer.customer_id'),
    path: 'tasks.churn.query',
    message: /query refers to unknown table "customer"/,
    hint: /did you mean "customers"\?/,
    at: 'query',
    paths: ['tasks.churn.query', 'tasks.churn.query'],
  },
  {
    name: 'entity column that is not the primary key',
    edit: (y) => replaceOnce(y, 'FOR EACH customers.customer_id', 'FOR EACH customers.postal_code'),
    path: 'tasks.churn.query',
    message: /"postal_code" is not the primary key of customers/,
    hint: /use customers\.customer_id/,
    at: 'query',
  },
  {
    name: 'aggregate over a table without a foreign key to the entity',
    edit: (y) => replaceOnce(y, 'foreign_keys: { customer_id: customers, article_id: articles }', 'foreign_keys: { article_id: articles }').replace('embedding_keys: [transactions.customer_id]', 'embedding_keys: []').replace(/ {2}real_time_interactions:\n.*\n/, ''),
    path: 'tasks.churn.query',
    message: /transactions has no foreign key to customers/,
    hint: /add data\.tables\.transactions\.foreign_keys: \{ <column>: customers \}/,
    at: 'query',
  },
  {
    name: 'fact-row target on a table without time_column',
    edit: (y) => replaceOnce(y, '      time_column: t_dat\n', '').replace(/ {2}real_time_interactions:\n.*\n/, ''),
    path: 'tasks.fraud.query',
    message: /fact-row target on transactions, which has no time_column/,
    hint: /add data\.tables\.transactions\.time_column/,
    at: 'query',
    after: 'fraud:',
    // churn aggregates over transactions, which now has no time either
    paths: ['tasks.churn.query', 'tasks.fraud.query'],
  },
];

describe('each cross-field rule reports its config path, line and column, and a fix', () => {
  for (const c of RULES) {
    it(c.name, () => {
      const text = c.edit(BASE);
      const problems = problemsOf(text);
      expect(problems.map((p) => p.path)).toEqual(c.paths ?? [c.path]);
      const p = problems.find((x) => x.path === c.path)!;
      expect(p.message).toMatch(c.message);
      expect(p.hint ?? '').toMatch(c.hint);
      const from = c.after ? text.indexOf(c.after) : 0;
      expect({ line: p.line, col: p.col }).toEqual(positionOf(text, c.at, from));
    });
  }
});

describe('invalid YAML is reported with its line and column', () => {
  const cases: { name: string; text: string; message: RegExp; at: { line: number; col: number } }[] = [
    {
      name: 'duplicate key',
      text: `${BASE}model: { layers: 1 }\n`,
      message: /^invalid YAML: Map keys must be unique/,
      at: positionOf(`${BASE}model: { layers: 1 }\n`, 'model: { layers: 1 }'),
    },
    {
      name: 'unclosed flow mapping',
      text: replaceOnce(BASE, 'primary_key: customer_id }', 'primary_key: customer_id'),
      message: /^invalid YAML: /,
      // the parser notices at the next line, where the flow mapping should have ended
      at: positionOf(BASE, 'articles: {'),
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const problems = problemsOf(c.text);
      expect(problems.length).toBeGreaterThanOrEqual(1);
      expect(problems[0]!.message).toMatch(c.message);
      expect(problems[0]!.hint).toBe('fix the YAML syntax at that line');
      expect({ line: problems[0]!.line, col: problems[0]!.col }).toEqual(c.at);
    });
  }

  it('the ConfigError message names the file and describe() lists line, column and fix', () => {
    const text = `${BASE}model: { layers: 1 }\n`;
    try {
      parse(text);
      expect.unreachable();
    } catch (e) {
      const d = (e as ConfigError).describe();
      const line = positionOf(text, 'model: { layers: 1 }').line;
      expect(d).toMatch(new RegExp(`^/configs/shop\\.yaml: cannot parse YAML\n {2}- <root> \\(line ${line}, col 1\\): invalid YAML: Map keys must be unique`));
      expect(d).toContain('\n      fix: fix the YAML syntax at that line');
    }
  });
});

describe('time values with offsets', () => {
  it.each(['2020-08-01T00:00:00+02:00', '2020-08-01 00:00:00-0530', '2020-08-01T00:00:00Z', '2020-08-01'])('data.fit_until "%s" validates', (t) => {
    const cfg = parse(replaceOnce(BASE, 'data:\n', `data:\n  fit_until: "${t}"\n`));
    expect(cfg.data.fit_until).toBe(t);
  });

  it('a split anchor with an offset validates; a bad one names its path', () => {
    expect(() => parse(replaceOnce(BASE, 'FOR EACH transactions.transaction_id\n', 'FOR EACH transactions.transaction_id\n    split: { test_anchor: "2020-09-01T00:00:00+02:00" }\n'))).not.toThrow();
    const problems = problemsOf(replaceOnce(BASE, 'FOR EACH transactions.transaction_id\n', 'FOR EACH transactions.transaction_id\n    split: { val_anchor: "last week" }\n'));
    expect(problems.map((p) => p.path)).toEqual(['tasks.fraud.split.val_anchor']);
  });
});

describe('all problems are reported together', () => {
  it('two independent cross-field mistakes give two problems, each with its own path', () => {
    const text = replaceOnce(replaceOnce(BASE, 'primary_key: customer_id }', 'primary_key: customer_id, time_unit: ms }'), 'num_neighbors: [8, 4]', 'num_neighbors: [8]');
    const problems = problemsOf(text);
    // the fanout mistake is in the block both tasks inherit: reported once
    expect(problems.map((p) => p.path).sort()).toEqual(['data.tables.customers.time_unit', 'model.num_neighbors']);
  });

  it('two independent schema mistakes give two problems', () => {
    const text = replaceOnce(replaceOnce(BASE, 'channels: 16', 'chanels: 16'), 'model: { layers: 2,', 'model: { encoder: gcn, layers: 2,');
    const problems = problemsOf(text);
    expect(problems.map((p) => p.path).sort()).toEqual(['model', 'model.encoder']);
  });

  it('describe() prints one line per problem with its position and fix', () => {
    const text = replaceOnce(replaceOnce(BASE, 'primary_key: customer_id }', 'primary_key: customer_id, time_unit: ms }'), '  task: fraud', '  task: frad');
    try {
      parse(text);
      expect.unreachable();
    } catch (e) {
      const d = (e as ConfigError).describe();
      expect(d.split('\n')[0]).toBe('/configs/shop.yaml: 2 problems in the config');
      const tu = positionOf(text, 'time_unit');
      expect(d).toContain(`  - data.tables.customers.time_unit (line ${tu.line}, col ${tu.col}): \`time_unit\` without \`time_column\`\n      fix: add \`time_column\` or remove \`time_unit\``);
      expect(d).toContain('  - distillation.task (line 18, col 3): unknown task "frad"\n      fix: did you mean "fraud"?');
    }
  });

  // Known gap: zod problems stop the load before the cross-field rules run, so a schema mistake hides
  // every cross-field mistake until it is fixed (STYLE.md habit 3 asks for all problems at once).
  it('a schema mistake and a cross-field mistake give two problems', () => {
    const text = replaceOnce(replaceOnce(BASE, 'channels: 16', 'chanels: 16'), 'customer_id: customers,', 'customer_id: customer,');
    const problems = problemsOf(text);
    expect(problems.find((p) => p.path === 'model')?.message).toBe('unknown key "chanels"');
    expect(problems.find((p) => p.path === 'data.tables.transactions.foreign_keys.customer_id')?.message).toBe('references unknown table "customer"');
  });

  it('a rejected value does not also raise cross-field problems about itself', () => {
    // num_neighbors of the wrong type is pruned; the "fanouts match layers" rule must not then fire on the default.
    const problems = problemsOf(replaceOnce(BASE, 'layers: 2, channels: 16, num_neighbors: [8, 4]', 'layers: 3, channels: 16, num_neighbors: "8,4,2"'));
    expect(problems.map((p) => p.path)).toEqual(['model.num_neighbors']);
  });
});

describe('anomaly block', () => {
  it('makes data optional, fills defaults and reports bad sources and keys together', async () => {
    const { parseConfig } = await import('../../src/config/load.js');
    const ok = parseConfig('name: m\nanomaly:\n  metrics: { path: metrics.csv }\n  calls: { path: calls.csv }\n', '/tmp/m.yaml');
    expect(ok.anomaly?.window).toBe(6);
    expect(ok.anomaly?.metrics.service_column).toBe('service');
    expect(ok.anomaly?.threshold_quantile).toBe(0.99);
    let err: unknown;
    try {
      parseConfig('name: m\nanomaly:\n  metrics: { path: a.csv, database: b.duckdb }\n  calls: { path: c.csv }\n  threshold_quantile: 1.5\n', '/tmp/m.yaml');
    } catch (e) {
      err = e;
    }
    const paths = (err as { problems: { path: string }[] }).problems.map((p) => p.path).sort();
    expect(paths).toEqual(['anomaly.metrics', 'anomaly.threshold_quantile']);
  });
});
