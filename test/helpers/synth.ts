/**
 * Tiny synthetic H&M-shaped data for tests (`generateSynthetic`, size `tiny`: ~500 customers, ~200 articles,
 * ~10k transactions over 2020-02-26 … 2020-09-22), a config for it, and a way to append "future" rows.
 */
import { appendFileSync, cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generateSynthetic } from '../../src/datasets/synth.js';
import { Rng } from '../../src/core/rng.js';

export interface SynthFixture {
  /** folder holding customers.csv, articles.csv, transactions.csv and config.yaml */
  dir: string;
  config: string;
  artifacts: string;
  cleanup: () => void;
}

const TABLES = `    customers: { path: customers.csv, primary_key: customer_id }
    articles: { path: articles.csv, primary_key: article_id }
    transactions:
      path: transactions.csv
      primary_key: transaction_id
      time_column: t_dat
      foreign_keys: { customer_id: customers, article_id: articles }
`;

/** A config over the synthetic tables; `extra` is appended verbatim (tasks, model, …). */
export function synthConfig(extra: string, data = ''): string {
  return `name: synth\ndata:\n${data}  tables:\n${TABLES}${extra}`;
}

/** Generates tiny synthetic data (seeded, ~2 s) into a fresh temp folder with `config.yaml` = `config`. */
export async function tinySynth(config: string, seed = 0): Promise<SynthFixture> {
  const root = mkdtempSync(join(tmpdir(), 'gnnctl-synth-'));
  const dir = join(root, 'data');
  await generateSynthetic({ out: dir, size: 'tiny', seed, format: 'csv' });
  return withConfig(root, dir, config);
}

function withConfig(root: string, dir: string, config: string): SynthFixture {
  const path = join(dir, 'config.yaml');
  writeFileSync(path, config);
  const artifacts = join(root, 'artifacts');
  mkdirSync(artifacts, { recursive: true });
  return { dir, config: path, artifacts, cleanup: () => rmSync(root, { recursive: true, force: true }) };
}

/** A copy of a fixture's data folder next to it (sharing its artifact folder), for variants of the data. */
export function copyFixture(fx: SynthFixture, name: string): SynthFixture {
  const dir = join(fx.dir, '..', name);
  cpSync(fx.dir, dir, { recursive: true });
  return { dir, config: join(dir, 'config.yaml'), artifacts: fx.artifacts, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

export interface FutureRows {
  /** keys of the appended rows */
  transactions: string[];
  customers: string[];
  articles: string[];
}

/**
 * Appends transactions dated strictly after `after` (interleaved with the existing rows after it), by old
 * and new customers on old and new articles, and the new customers and articles themselves (with
 * categorical values the data never had).
 */
export function appendFutureRows(dir: string, after: string, opts: { transactions: number; customers: number; articles: number; seed: number; days: number }): FutureRows {
  const rng = new Rng(opts.seed);
  const csv = (name: string): string[] => readFileSync(join(dir, `${name}.csv`), 'utf8').trimEnd().split('\n');
  const cust = csv('customers');
  const art = csv('articles');
  const tx = csv('transactions');
  const oldCustomers = cust.slice(1).map((l) => l.split(',')[0]!);
  const oldArticles = art.slice(1).map((l) => l.split(',')[0]!);

  const newCustomers = Array.from({ length: opts.customers }, () => Array.from({ length: 64 }, () => '0123456789abcdef'[rng.int(16)]).join(''));
  appendFileSync(join(dir, 'customers.csv'), newCustomers.map((id) => `${id},1.0,1.0,VIP,Daily,${18 + rng.int(60)},${id}\n`).join(''));

  const header = art[0]!.split(',');
  const colour = header.indexOf('colour_group_name');
  const plain = art.slice(1).filter((l) => !l.includes('"'));
  const newArticles = Array.from({ length: opts.articles }, (_, k) => `09${String(9_000_000 + k).padStart(8, '0')}`);
  appendFileSync(
    join(dir, 'articles.csv'),
    newArticles
      .map((id) => {
        const f = plain[rng.int(plain.length)]!.split(',');
        f[0] = id;
        f[colour] = 'Ultraviolet';
        return `${f.join(',')}\n`;
      })
      .join(''),
  );

  const maxId = Math.max(...tx.slice(1).map((l) => Number(l.split(',')[0])));
  const t0 = Date.parse(after) / 1000;
  const rows: string[] = [];
  const ids: string[] = [];
  for (let k = 0; k < opts.transactions; k++) {
    const t = t0 + 1 + rng.int(opts.days * 86400);
    const c = rng.next() < 0.2 ? newCustomers[rng.int(newCustomers.length)]! : oldCustomers[rng.int(oldCustomers.length)]!;
    const a = rng.next() < 0.2 ? newArticles[rng.int(newArticles.length)]! : oldArticles[rng.int(oldArticles.length)]!;
    const id = String(maxId + 1 + k);
    ids.push(id);
    rows.push(`${id},${new Date(t * 1000).toISOString().slice(0, 19).replace('T', ' ')},${c},${a},${(0.01 + rng.next() * 0.1).toFixed(6)},${1 + rng.int(2)},${rng.next() < 0.3 ? 1 : 0}\n`);
  }
  appendFileSync(join(dir, 'transactions.csv'), rows.join(''));
  return { transactions: ids, customers: newCustomers, articles: newArticles };
}
