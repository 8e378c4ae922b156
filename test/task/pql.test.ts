import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/core/errors.js';
import { conditionAggregates, conditionColumns, parseQuery, PqlSyntaxError, targetWindow, type Aggregate, type PredictiveQuery } from '../../src/task/pql.js';

const DAY = 86400;

function agg(fn: Aggregate['fn'], table: string, column: string | null, a: number, b: number, unit: Aggregate['unit'] = 'days'): Aggregate {
  const s = { days: DAY, hours: 3600, minutes: 60 }[unit];
  return { kind: 'aggregate', fn, table, column, start: a * s, end: b * s, unit };
}

describe("RelBench rel-hm's tasks parse to the right AST and task type", () => {
  const cases: { name: string; query: string; expected: Omit<PredictiveQuery, 'text'> }[] = [
    {
      name: 'user-churn (no transaction next week, among customers active last week)',
      query: 'PREDICT COUNT(transactions.*, 0, 7, days) = 0 FOR EACH customers.customer_id WHERE COUNT(transactions.*, -7, 0, days) > 0',
      expected: {
        target: { kind: 'entity', aggregate: agg('COUNT', 'transactions', null, 0, 7), compare: { op: '=', value: 0 }, top_k: null },
        entity: { kind: 'column', table: 'customers', column: 'customer_id' },
        where: { kind: 'compare', left: agg('COUNT', 'transactions', null, -7, 0), op: '>', value: 0 },
        taskType: 'binary',
      },
    },
    {
      name: 'item-sales (sum of prices next week)',
      query: 'PREDICT SUM(transactions.price, 0, 7, days) FOR EACH articles.article_id',
      expected: {
        target: { kind: 'entity', aggregate: agg('SUM', 'transactions', 'price', 0, 7), compare: null, top_k: null },
        entity: { kind: 'column', table: 'articles', column: 'article_id' },
        where: null,
        taskType: 'regression',
      },
    },
    {
      name: 'fraud (fact-row task)',
      query: 'PREDICT transactions.fraud = 1 FOR EACH transactions.transaction_id',
      expected: {
        target: { kind: 'fact', column: { kind: 'column', table: 'transactions', column: 'fraud' }, compare: { op: '=', value: 1 } },
        entity: { kind: 'column', table: 'transactions', column: 'transaction_id' },
        where: null,
        taskType: 'binary',
      },
    },
    {
      name: 'fact-row regression (bare column)',
      query: 'PREDICT transactions.price FOR EACH transactions.transaction_id',
      expected: {
        target: { kind: 'fact', column: { kind: 'column', table: 'transactions', column: 'price' }, compare: null },
        entity: { kind: 'column', table: 'transactions', column: 'transaction_id' },
        where: null,
        taskType: 'regression',
      },
    },
    {
      name: 'EXISTS target without comparison is binary',
      query: 'PREDICT EXISTS(transactions.*, 0, 36, hours) FOR EACH customers.customer_id',
      expected: {
        target: { kind: 'entity', aggregate: agg('EXISTS', 'transactions', null, 0, 36, 'hours'), compare: null, top_k: null },
        entity: { kind: 'column', table: 'customers', column: 'customer_id' },
        where: null,
        taskType: 'binary',
      },
    },
    {
      name: 'lower-case keywords, singular unit, <> and a hyphenated column',
      query: "predict avg(transactions.unit-price, 0, 90, minute) <> 'x' for each articles.article_id",
      expected: {
        target: { kind: 'entity', aggregate: agg('AVG', 'transactions', 'unit-price', 0, 90, 'minutes'), compare: { op: '!=', value: 'x' }, top_k: null },
        entity: { kind: 'column', table: 'articles', column: 'article_id' },
        where: null,
        taskType: 'binary',
      },
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      expect(parseQuery(c.query)).toEqual({ text: c.query, ...c.expected });
    });
  }

  it('targetWindow is the label window length (entity tasks) or null (fact tasks)', () => {
    expect(targetWindow(parseQuery(cases[0]!.query))).toBe(7 * DAY);
    expect(targetWindow(parseQuery(cases[4]!.query))).toBe(36 * 3600);
    expect(targetWindow(parseQuery(cases[2]!.query))).toBeNull();
  });
});

describe('WHERE conditions', () => {
  it('AND binds tighter than OR; NOT applies to the next condition; parentheses group', () => {
    const q = parseQuery(
      'PREDICT COUNT(transactions.*, 0, 7, days) FOR EACH customers.customer_id ' +
        "WHERE NOT (COUNT(transactions.*, -30, 0, days) = 0 OR customers.age < 18) AND customers.club_member_status = 'ACTIVE' OR customers.FN = TRUE",
    );
    expect(q.where).toEqual({
      kind: 'or',
      left: {
        kind: 'and',
        left: {
          kind: 'not',
          inner: {
            kind: 'or',
            left: { kind: 'compare', left: agg('COUNT', 'transactions', null, -30, 0), op: '=', value: 0 },
            right: { kind: 'compare', left: { kind: 'column', table: 'customers', column: 'age' }, op: '<', value: 18 },
          },
        },
        right: { kind: 'compare', left: { kind: 'column', table: 'customers', column: 'club_member_status' }, op: '=', value: 'ACTIVE' },
      },
      right: { kind: 'compare', left: { kind: 'column', table: 'customers', column: 'FN' }, op: '=', value: true },
    });
    expect(conditionAggregates(q.where)).toEqual([agg('COUNT', 'transactions', null, -30, 0)]);
    expect(conditionColumns(q.where).map((c) => c.column)).toEqual(['age', 'club_member_status', 'FN']);
  });

  it('a bare EXISTS in WHERE means "= TRUE"; NOT EXISTS negates it', () => {
    const q = parseQuery('PREDICT COUNT(transactions.*, 0, 7, days) FOR EACH customers.customer_id WHERE NOT EXISTS(transactions.*, -7, 0, days)');
    expect(q.where).toEqual({ kind: 'not', inner: { kind: 'compare', left: agg('EXISTS', 'transactions', null, -7, 0), op: '=', value: true } });
  });

  it('a fact task filters on its own columns, with every comparison operator', () => {
    const ops = { '=': '=', '==': '=', '!=': '!=', '<>': '!=', '<': '<', '<=': '<=', '>': '>', '>=': '>=' } as const;
    for (const [written, op] of Object.entries(ops)) {
      const q = parseQuery(`PREDICT transactions.fraud = 1 FOR EACH transactions.transaction_id WHERE transactions.price ${written} -0.5`);
      expect(q.where).toEqual({ kind: 'compare', left: { kind: 'column', table: 'transactions', column: 'price' }, op, value: -0.5 });
    }
  });
});

describe('invalid queries fail with the position and what was expected', () => {
  // `at` is the text the caret must point at (its first occurrence after `after`, if given).
  const cases: { name: string; query: string; at: string; after?: string; expected: RegExp }[] = [
    {
      name: 'missing FOR EACH',
      query: 'PREDICT COUNT(transactions.*, 0, 7, days) = 0 customers.customer_id',
      at: 'customers.customer_id',
      expected: /expected FOR \(got "customers"\)/,
    },
    {
      name: 'missing PREDICT',
      query: 'COUNT(transactions.*, 0, 7, days) = 0 FOR EACH customers.customer_id',
      at: 'COUNT',
      expected: /expected PREDICT \(got "COUNT"\)/,
    },
    {
      name: 'bad unit',
      query: 'PREDICT COUNT(transactions.*, 0, 7, weeks) = 0 FOR EACH customers.customer_id',
      at: 'weeks',
      expected: /expected a time unit \(days, hours or minutes\) \(got "weeks"\)/,
    },
    {
      name: 'window start equal to end',
      query: 'PREDICT COUNT(transactions.*, 7, 7, days) = 0 FOR EACH customers.customer_id',
      at: '7, 7',
      expected: /expected a window with start < end \(got \(7, 7\)\)/,
    },
    {
      name: 'window start after end',
      query: 'PREDICT COUNT(transactions.*, 0, 7, days) FOR EACH customers.customer_id WHERE COUNT(transactions.*, -1, -7, days) > 0',
      at: '-1, -7',
      expected: /expected a window with start < end \(got \(-1, -7\)\)/,
    },
    {
      name: 'WHERE window reaching into the future',
      query: 'PREDICT COUNT(transactions.*, 0, 7, days) = 0 FOR EACH customers.customer_id WHERE COUNT(transactions.*, -7, 1, days) > 0',
      at: 'COUNT',
      after: 'WHERE',
      expected: /expected a WHERE window in the past \(end ≤ 0\): filters may not look after the anchor \(got end = 1\)/,
    },
    {
      name: 'target window entirely in the past',
      query: 'PREDICT COUNT(transactions.*, -7, 0, days) = 0 FOR EACH customers.customer_id',
      at: 'COUNT',
      expected: /expected a target window that ends after the anchor \(b > 0\) \(got \(-7, 0\)\)/,
    },
    {
      name: 'target window starting before the anchor',
      query: 'PREDICT SUM(transactions.price, -1, 7, days) FOR EACH articles.article_id',
      at: 'SUM',
      expected: /expected a target window that starts at or after the anchor \(a ≥ 0\): a label must come from the future \(got a = -1\)/,
    },
    {
      name: 'SUM(t.*)',
      query: 'PREDICT SUM(transactions.*, 0, 7, days) FOR EACH articles.article_id',
      at: '*',
      expected: /expected a column for SUM \(only COUNT and EXISTS take "\*"\) \(got "\*"\)/,
    },
    {
      name: 'unclosed quote',
      query: "PREDICT COUNT(transactions.*, 0, 7, days) FOR EACH customers.customer_id WHERE customers.club_member_status = 'ACTIVE",
      at: "'ACTIVE",
      expected: /expected a closing quote \(got end of query\)/,
    },
    {
      name: 'trailing garbage',
      query: 'PREDICT COUNT(transactions.*, 0, 7, days) FOR EACH customers.customer_id extra',
      at: 'extra',
      expected: /expected WHERE or the end of the query \(got "extra"\)/,
    },
    {
      name: 'trailing garbage after WHERE',
      query: 'PREDICT COUNT(transactions.*, 0, 7, days) FOR EACH customers.customer_id WHERE customers.age > 3 5',
      at: '5',
      after: '> 3',
      expected: /expected AND, OR or the end of the query \(got "5"\)/,
    },
    {
      name: 'fact target with FOR EACH on another table',
      query: 'PREDICT transactions.fraud = 1 FOR EACH customers.customer_id',
      at: 'customers',
      expected: /expected FOR EACH on the target's table "transactions" \(got "customers"\)/,
    },
    {
      name: 'unknown character',
      query: 'PREDICT COUNT(transactions.*, 0, 7, days) = 0 FOR EACH customers.customer_id; DROP TABLE x',
      at: ';',
      expected: /expected a name, number, operator or one of \( \) , \. \* \(got ";"\)/,
    },
    {
      name: 'a lone "!"',
      query: 'PREDICT COUNT(transactions.*, 0, 7, days) ! 0 FOR EACH customers.customer_id',
      at: '!',
      expected: /expected an operator/,
    },
    {
      name: 'comparison without a value',
      query: 'PREDICT COUNT(transactions.*, 0, 7, days) = FOR EACH customers.customer_id',
      at: 'FOR',
      expected: /expected a value \(number, quoted string, TRUE or FALSE\) \(got "FOR"\)/,
    },
    {
      name: 'empty query',
      query: '',
      at: '',
      expected: /expected PREDICT \(got end of query\)/,
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      let err: unknown;
      try {
        parseQuery(c.query);
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(PqlSyntaxError);
      expect(err).toBeInstanceOf(ConfigError);
      const e = err as PqlSyntaxError;
      const pos = c.query.indexOf(c.at, c.after ? c.query.indexOf(c.after) : 0);
      expect(pos).toBeGreaterThanOrEqual(0);
      expect(e.position).toBe(pos);
      expect(e.message).toMatch(c.expected);
      expect(e.message).toMatch(new RegExp(`^invalid predictive query at position ${pos + 1}: `));
      // the last two lines: the query, then a caret under the offending character
      const lines = e.message.split('\n');
      expect(lines[lines.length - 2]).toBe(`    ${c.query}`);
      expect(lines[lines.length - 1]).toBe(`    ${' '.repeat(pos)}^`);
    });
  }
});
