/**
 * What a ranking task predicts, resolved against the tables: for each entity ("user") at an anchor t, the
 * distinct rows of an item table that the user's fact rows reference in the window (t + start, t + end]
 * (the ranking task's labels, as `train/examples.ts` builds them for the deep recommender).
 *
 *   PREDICT LIST_DISTINCT(transactions.article_id, 0, 7, days) RANK TOP 12 FOR EACH customers.customer_id
 *
 * → fact table `transactions`, item column `article_id` (a foreign key to `articles`), user table
 * `customers` reached through the fact table's foreign key to it, k = 12. The session recommender reads its
 * label definition only through this type, resolved from the ranking task's parsed query.
 */
import { ConfigError } from '../core/errors.js';
import type { PredictiveQuery } from './pql.js';

export interface RankingTarget {
  query: string;
  user_table: string;
  user_key: string;
  fact_table: string;
  /** the fact table's foreign key to the user table */
  user_column: string;
  /** the fact table's foreign key to the item table */
  item_column: string;
  item_table: string;
  item_key: string;
  /** window relative to the anchor, seconds: (t + start, t + end] */
  start: number;
  end: number;
  k: number;
}

export interface TablesView {
  [table: string]: { primary_key?: string; time_column?: string; foreign_keys: Record<string, string> } | undefined;
}

/**
 * Resolves a parsed ranking query (`LIST_DISTINCT(…) RANK TOP k`) against the tables; throws a ConfigError
 * at `where` naming what is wrong and how to fix it. WHERE filters are not applied by the session
 * recommender and are refused rather than silently ignored.
 */
export function rankingTarget(q: PredictiveQuery, tables: TablesView, where: (string | number)[]): RankingTarget {
  const fail = (message: string, hint: string): never => {
    throw new ConfigError(`ranking query: ${message}`, [{ path: where.join('.'), message, hint }], { where: where.join('.'), value: q.text });
  };
  const t = q.target;
  if (t.kind !== 'entity' || t.top_k === null || t.aggregate.fn !== 'LIST_DISTINCT' || !t.aggregate.column) {
    return fail(`not a ranking query (got "${q.text}")`, 'e.g. PREDICT LIST_DISTINCT(transactions.article_id, 0, 7, days) RANK TOP 12 FOR EACH customers.customer_id');
  }
  if (q.where) fail('WHERE is not supported by the session recommender yet', 'drop the WHERE clause for the session_recommender task');
  const fact = t.aggregate.table;
  const itemColumn = t.aggregate.column;
  const ft = tables[fact];
  if (!ft?.time_column) return fail(`${fact} has no time_column, so "the items in the window after the anchor" is undefined`, `set data.tables.${fact}.time_column`);
  const itemTable = ft.foreign_keys[itemColumn];
  if (!itemTable) return fail(`${fact}.${itemColumn} is not a foreign key, so it names no item table`, `declare data.tables.${fact}.foreign_keys.${itemColumn}`);
  const itemKey = tables[itemTable]?.primary_key;
  if (!itemKey) return fail(`the item table ${itemTable} has no primary key`, `set data.tables.${itemTable}.primary_key`);
  const userTable = q.entity.table;
  const userFks = Object.entries(ft.foreign_keys).filter(([, x]) => x === userTable).map(([c]) => c);
  if (userFks.length !== 1) fail(`${fact} needs exactly one foreign key to ${userTable} (found ${userFks.length})`, `declare one in data.tables.${fact}.foreign_keys`);
  return { query: q.text.trim(), user_table: userTable, user_key: q.entity.column, fact_table: fact, user_column: userFks[0]!, item_column: itemColumn, item_table: itemTable, item_key: itemKey, start: t.aggregate.start, end: t.aggregate.end, k: t.top_k };
}
