/**
 * Column-type inference: how a non-key column becomes a feature (numerical, categorical, timestamp) or
 * why it does not (id-like, text, unsupported type). `graph inspect` prints the role and the reason;
 * `columns:` in the config overrides it.
 */
import type { DataConfig } from '../config/schema.js';
import type { ColumnInfo } from '../data/source.js';
import type { ColumnRole } from '../artifacts/graph_manifest.js';

const INTEGER = /^(TINYINT|SMALLINT|INTEGER|BIGINT|HUGEINT|UTINYINT|USMALLINT|UINTEGER|UBIGINT|UHUGEINT)$/;
const FLOAT = /^(FLOAT|DOUBLE|REAL|DECIMAL)/;
const CODE_NAME = /(^|_)(id|no|nr|num|code|type|group|status|channel|category|cat|kind|class|level)$/i;
/** integer columns with at most this many distinct values are categories whatever their name */
const SMALL_INT_CARDINALITY = 16;
/** strings longer than this on average, with many distinct values, are free text */
const TEXT_LENGTH = 40;

export interface ColumnStats {
  distinct: number;
  nonNull: number;
  avgLength: number | null;
}

export function inferColumnRole(col: ColumnInfo, stats: ColumnStats, data: DataConfig): { role: ColumnRole; reason: string } {
  const d = stats.distinct;
  if (stats.nonNull === 0) return { role: 'ignore', reason: 'all values are NULL' };
  if (col.type === 'BOOLEAN') return { role: 'numerical', reason: 'boolean → 0/1' };
  if (INTEGER.test(col.type)) {
    if (CODE_NAME.test(col.name) && d <= data.max_vocab) return { role: 'categorical', reason: `integer code (name pattern, ~${d} distinct)` };
    if (d <= 2) return { role: 'numerical', reason: `integer flag (${d} distinct)` };
    // Few values that repeat a lot (a level, a rating) are categories; few values in a tiny table are not evidence.
    if (d <= SMALL_INT_CARDINALITY && stats.nonNull >= 10 * d) return { role: 'categorical', reason: `integer with few repeated values (~${d} distinct)` };
    return { role: 'numerical', reason: `integer (~${d} distinct)` };
  }
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
