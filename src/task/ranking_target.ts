/**
 * What a ranking task predicts, resolved against the tables: for each entity ("user") at an anchor t, the
 * distinct rows of an item table that the user's fact rows reference in the window (t + start, t + end].
 *
 *   PREDICT LIST_DISTINCT(transactions.article_id, 0, 7, days) RANK TOP 12 FOR EACH customers.customer_id
 *
 * → fact table `transactions`, item column `article_id` (a foreign key to `articles`), user table
 * `customers` reached through the fact table's foreign key to it, k = 12. The session recommender reads its
 * label definition only through this type, so the same code serves the task's own query once the PQL parser
 * knows ranking targets; until then `parseRankingQuery` reads this one form (no WHERE).
 */
import { ConfigError } from '../core/errors.js';

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

const UNIT: Record<string, number> = { days: 86400, hours: 3600, minutes: 60 };
const NAME = '([A-Za-z_][A-Za-z0-9_-]*)';
const QUERY = new RegExp(
  `^\\s*PREDICT\\s+LIST_DISTINCT\\s*\\(\\s*${NAME}\\.${NAME}\\s*,\\s*(-?\\d+)\\s*,\\s*(-?\\d+)\\s*,\\s*(days|hours|minutes)\\s*\\)\\s+RANK\\s+TOP\\s+(\\d+)\\s+FOR\\s+EACH\\s+${NAME}\\.${NAME}\\s*(.*)$`,
  'i',
);

export interface TablesView {
  [table: string]: { primary_key?: string; time_column?: string; foreign_keys: Record<string, string> } | undefined;
}

/** Parses and resolves a ranking query; throws a ConfigError at `where` naming what is wrong and how to fix it. */
export function parseRankingQuery(text: string, tables: TablesView, where: (string | number)[]): RankingTarget {
  const fail = (message: string, hint: string): never => {
    throw new ConfigError(`ranking query: ${message}`, [{ path: where.join('.'), message, hint }], { where: where.join('.'), value: text });
  };
  const m = QUERY.exec(text);
  if (!m) return fail(`not of the form PREDICT LIST_DISTINCT(<fact>.<item fk>, a, b, days|hours|minutes) RANK TOP k FOR EACH <user>.<primary key> (got "${text}")`, 'e.g. PREDICT LIST_DISTINCT(transactions.article_id, 0, 7, days) RANK TOP 12 FOR EACH customers.customer_id');
  const [, fact, itemColumn, a, b, unit, kText, userTable, userKey, rest] = m as unknown as string[];
  if (rest!.trim() !== '') fail(`WHERE and anything after FOR EACH are not supported for ranking queries yet (got "${rest!.trim()}")`, 'drop the WHERE clause');
  const ft = tables[fact!];
  if (!ft) return fail(`unknown table "${fact}"`, `one of ${Object.keys(tables).join(', ')}`);
  if (!ft.time_column) fail(`${fact} has no time_column, so "the items in the window after the anchor" is undefined`, `set data.tables.${fact}.time_column`);
  const itemTable = ft.foreign_keys[itemColumn!];
  if (!itemTable) fail(`${fact}.${itemColumn} is not a foreign key, so it names no item table`, `declare data.tables.${fact}.foreign_keys.${itemColumn}`);
  const it = tables[itemTable!];
  if (!it?.primary_key) fail(`the item table ${itemTable} has no primary key`, `set data.tables.${itemTable}.primary_key`);
  const ut = tables[userTable!];
  if (!ut) return fail(`unknown table "${userTable}"`, `one of ${Object.keys(tables).join(', ')}`);
  if (ut.primary_key !== userKey) fail(`${userTable}.${userKey} is not the primary key of ${userTable}`, `FOR EACH ${userTable}.${ut.primary_key ?? '<primary key>'}`);
  const userFks = Object.entries(ft.foreign_keys).filter(([, t]) => t === userTable).map(([c]) => c);
  if (userFks.length !== 1) fail(`${fact} needs exactly one foreign key to ${userTable} (found ${userFks.length})`, `declare one in data.tables.${fact}.foreign_keys`);
  const start = Number(a) * UNIT[unit!.toLowerCase()]!;
  const end = Number(b) * UNIT[unit!.toLowerCase()]!;
  if (start < 0 || end <= start) fail(`the window (${a}, ${b}] must start at or after the anchor and be non-empty`, 'e.g. LIST_DISTINCT(transactions.article_id, 0, 7, days)');
  const k = Number(kText);
  if (!(k >= 1 && k <= 1000)) fail(`RANK TOP ${kText}: k must be between 1 and 1000`, 'e.g. RANK TOP 12');
  return { query: text.trim(), user_table: userTable!, user_key: userKey!, fact_table: fact!, user_column: userFks[0]!, item_column: itemColumn!, item_table: itemTable!, item_key: it!.primary_key!, start, end, k };
}
