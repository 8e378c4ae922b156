/**
 * Column-type inference: how a non-key column becomes a feature (numerical, categorical, timestamp) or
 * why it does not (id-like, text, unsupported type). `graph inspect` prints the role and the reason;
 * `columns:` in the config overrides it.
 */
import type { DataConfig } from '../config/schema.js';
import type { ColumnInfo } from '../data/source.js';
import type { ColumnRole } from '../artifacts/graph_manifest.js';

export const INTEGER_TYPE = /^(TINYINT|SMALLINT|INTEGER|BIGINT|HUGEINT|UTINYINT|USMALLINT|UINTEGER|UBIGINT|UHUGEINT)$/;
const FLOAT = /^(FLOAT|DOUBLE|REAL|DECIMAL)/;
/** tested on the snake_case form of the name, so `statusId` reads as `status_id` */
const CODE_NAME = /(^|_)(id|no|nr|num|code|type|group|status|channel|category|cat|kind|class|level)$/i;
/** integer columns with at most this many distinct values are categories whatever their name */
const SMALL_INT_CARDINALITY = 16;
/**
 * integer columns with at most this many distinct values, spread over more than GAP_SPREAD × as many
 * integers, are codes (1, 2, 11, 31, 104): a quantity with so few values fills its range
 */
const GAP_CODES = 64;
const GAP_SPREAD = 4;
/** strings longer than this on average, with many distinct values, are free text */
const TEXT_LENGTH = 40;

export interface ColumnStats {
  distinct: number;
  nonNull: number;
  avgLength: number | null;
  /** integer columns: the smallest and largest value (null for other types or no values) */
  min?: number | null;
  max?: number | null;
}

/** `statusId` → `status_id`, `raceID` → `race_id`: the name patterns are written for snake_case. */
export function snakeName(name: string): string {
  return name.replace(/([a-z0-9])([A-Z])/g, '$1_$2').replace(/([A-Z]+)([A-Z][a-z])/g, '$1_$2').toLowerCase();
}

export function inferColumnRole(col: ColumnInfo, stats: ColumnStats, data: DataConfig): { role: ColumnRole; reason: string } {
  const d = stats.distinct;
  if (stats.nonNull === 0) return { role: 'ignore', reason: 'all values are NULL' };
  if (col.type === 'BOOLEAN') return { role: 'numerical', reason: 'boolean → 0/1' };
  if (INTEGER_TYPE.test(col.type)) return inferInteger(col, stats, data);
  if (FLOAT.test(col.type)) return { role: 'numerical', reason: 'floating point' };
  if (/^(TIMESTAMP|DATE)/.test(col.type)) return { role: 'timestamp', reason: 'time value → relative to the anchor' };
  if (col.type === 'VARCHAR') {
    if (d > 1000 && d > data.id_like_ratio * stats.nonNull) {
      return { role: 'ignore', reason: `id-like (~${d} distinct in ${stats.nonNull} values); excluded — set columns.${col.name}: categorical to keep the ${data.max_vocab} most frequent` };
    }
    if ((stats.avgLength ?? 0) > TEXT_LENGTH && d > 1000) {
      return { role: 'text', reason: `free text (avg length ${Math.round(stats.avgLength ?? 0)}); text encoders are not implemented, so it is not used` };
    }
    return { role: 'categorical', reason: `string (~${d} distinct${d > data.max_vocab ? `; the ${data.max_vocab} most frequent kept` : ''})` };
  }
  return { role: 'ignore', reason: `type ${col.type} is not supported as a feature` };
}

/**
 * An integer column is a code (categorical) when its name says so (`*_id`, `*Id`, `status*`, `*_code`, …)
 * and its values repeat, when it has few values that repeat a lot, or when its few values leave most of
 * their range empty (non-ordinal gaps); otherwise a quantity. A code name on nearly unique values is an
 * identifier: no value repeats, so no code would be learned.
 */
function inferInteger(col: ColumnInfo, stats: ColumnStats, data: DataConfig): { role: ColumnRole; reason: string } {
  const d = stats.distinct;
  const n = stats.nonNull;
  if (CODE_NAME.test(snakeName(col.name))) {
    if (d > SMALL_INT_CARDINALITY && d > data.id_like_ratio * n) {
      return { role: 'ignore', reason: `id-like integer (name ${col.name}, ~${d} distinct in ${n} values: values do not repeat); excluded — set columns.${col.name}: categorical or numerical to keep it` };
    }
    if (d <= data.max_vocab) return { role: 'categorical', reason: `integer code: the name ${col.name} reads as an id/code/status, ~${d} distinct in ${n} values` };
  }
  if (d <= 2) return { role: 'numerical', reason: `integer flag (${d} distinct)` };
  // Few values that repeat a lot (a level, a rating) are categories; few values in a tiny table are not evidence.
  if (d <= SMALL_INT_CARDINALITY && n >= 10 * d) return { role: 'categorical', reason: `integer with few repeated values (~${d} distinct in ${n} values)` };
  const span = stats.min != null && stats.max != null ? stats.max - stats.min + 1 : null;
  if (span !== null && d <= GAP_CODES && n >= 10 * d && span > GAP_SPREAD * d) {
    return { role: 'categorical', reason: `integer code: ~${d} distinct values with gaps over ${stats.min}…${stats.max} (non-ordinal), ${n} values` };
  }
  return { role: 'numerical', reason: `integer (~${d} distinct${span !== null ? ` over ${stats.min}…${stats.max}` : ''})` };
}
