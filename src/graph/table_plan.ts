/** What graph build knows of a source table before encoding it. */
import type { TableSpec } from '../config/load.js';
import type { ColumnInfo } from '../data/source.js';

export const TIME_TYPES = /^(TIMESTAMP|DATE)/;

export const NUMERIC_TYPES = /^(TINYINT|SMALLINT|INTEGER|BIGINT|HUGEINT|UTINYINT|USMALLINT|UINTEGER|UBIGINT|UHUGEINT|FLOAT|DOUBLE|DECIMAL|REAL)/;

export interface TablePlan {
  spec: TableSpec;
  columns: ColumnInfo[];
  rows: number;
  timeExpr: string | null;
  pkType: string | null;
}
