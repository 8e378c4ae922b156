/**
 * Small hand-written tables for tests: a retail schema (customers, articles, transactions) whose every
 * count, degree and label can be checked by hand or with a DuckDB query.
 */
import { mkdtempSync, mkdirSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const CUSTOMERS = `customer_id,age,club_member_status,postal_code
c1,25,ACTIVE,p1
c2,,PRE-CREATE,p2
c3,40,ACTIVE,p3
c4,33,,p4
`;

export const ARTICLES = `article_id,product_type_no,colour_group_name
0108775015,253,Black
0108775044,253,White
0110065001,306,
`;

// Times deliberately out of file order: node ids must come out time-sorted anyway.
export const TRANSACTIONS = `transaction_id,t_dat,customer_id,article_id,price,sales_channel_id,fraud
1,2020-01-01 10:00:00,c1,0108775015,0.05,2,0
2,2020-01-02 11:00:00,c1,0108775044,0.03,1,0
3,2020-01-01 09:00:00,c2,0108775015,0.05,2,1
4,2020-01-09 09:00:00,c3,0110065001,0.02,2,0
5,2020-01-20 12:00:00,c3,0108775015,0.04,1,0
6,2020-01-25 12:00:00,c1,0110065001,,1,0
7,2020-01-26 08:30:00,c2,0108775015,0.06,2,1
8,2020-01-27 18:00:00,c1,0108775044,0.01,1,0
`;

export const CONFIG = `name: fixture
data:
  tables:
    customers: { path: customers.csv, primary_key: customer_id }
    articles: { path: articles.csv, primary_key: article_id }
    transactions:
      path: transactions.csv
      primary_key: transaction_id
      time_column: t_dat
      foreign_keys: { customer_id: customers, article_id: articles }
`;

export interface Fixture {
  dir: string;
  config: string;
  artifacts: string;
  cleanup: () => void;
}

/** Writes the fixture tables (with optional replacements) and a config into a fresh temp folder. */
export function retailFixture(overrides: Partial<Record<'customers' | 'articles' | 'transactions' | 'config', string>> = {}): Fixture {
  const dir = mkdtempSync(join(tmpdir(), 'gnnctl-fixture-'));
  writeFileSync(join(dir, 'customers.csv'), overrides.customers ?? CUSTOMERS);
  writeFileSync(join(dir, 'articles.csv'), overrides.articles ?? ARTICLES);
  writeFileSync(join(dir, 'transactions.csv'), overrides.transactions ?? TRANSACTIONS);
  const config = join(dir, 'config.yaml');
  writeFileSync(config, overrides.config ?? CONFIG);
  const artifacts = join(dir, 'artifacts');
  mkdirSync(artifacts);
  return { dir, config, artifacts, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

/**
 * TRANSACTIONS plus rows exactly on the edges of 7-day label windows at the anchors 2020-01-06, 2020-01-13
 * and 2020-01-20 (test/train/examples.e2e.test.ts): row 9 sits at 2020-01-20 00:00, row 10 at 2020-01-27 00:00
 * and row 11 at 2020-01-13 00:00. Every earlier row keeps its meaning.
 */
export const BOUNDARY_TRANSACTIONS = `${TRANSACTIONS}9,2020-01-20 00:00:00,c4,0110065001,0.10,2,0
10,2020-01-27 00:00:00,c4,0108775044,0.20,1,0
11,2020-01-13 00:00:00,c2,0108775044,0.07,1,1
`;

/** CONFIG with a `tasks:` block: name → query, each with the same explicit split. */
export function configWithTasks(tasks: Record<string, string>, split = '{ val_anchor: "2020-01-13", test_anchor: "2020-01-20" }', base = CONFIG): string {
  const lines = Object.entries(tasks).map(([name, query]) => `  ${name}:\n    query: ${JSON.stringify(query)}\n    split: ${split}\n`);
  return `${base}tasks:\n${lines.join('')}`;
}
