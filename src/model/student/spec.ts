/**
 * The distilled (student) model's contract: which raw request fields it reads, how each becomes a
 * feature, and the layer sizes. Training (TF.js) and export (ONNX) are both built from this spec, so the
 * two compute the same function; every formula below is implemented twice (`features.ts` in TypeScript,
 * `export/student_onnx.ts` in ONNX ops) and tested for agreement.
 *
 * Fact features, per request row:
 *   numeric column x:      isNaN(x) ? 0 : (x − mean) / std,  null flag
 *   categorical column v:  embedding of its code (0 null, 1 unknown, 2 + i vocab[i])
 *   time column t:         sin/cos(2π · hour(t) / 24), sin/cos(2π · (⌊t / day⌋ mod 7) / 7)
 * Entity embeddings, per embedding key: E[key] (or a learned fallback when the key is unknown or has no
 * embedding yet) · P + b, and the missing flag.
 * RTI elements, per hop path, each element:
 *   numeric / categorical columns as for facts;
 *   Δ = max(0, anchor − t) in days:  log(1 + Δ) / 5,  min(Δ, 60) / 60,
 *     and with minute_recency also log(1 + 1440 · Δ) / 10 (Δ in minutes: resolves minutes from hours);
 *   for numeric columns the fact row also has: clip(log(|x_fact| + ε) − log(|x_elem| + ε), ±5) (0 if null);
 *   for foreign keys the fact row also has: 1 if both reference the same known entity;
 * then h = ReLU(e · W + b), pooled by masked mean and masked attention, plus log(1 + n) / log(1 + N).
 * Head: ReLU(W₁ ·) → ReLU(W₂ ·) → W₃ → sigmoid over [fact ‖ embeddings ‖ pooled RTI].
 */

/** A column of a request: its name in the table and how the model reads it. */
import type { OutputSpec } from '../../task/objective/objective.js';

export interface NumericSpec {
  column: string;
  mean: number;
  std: number;
  /** DuckDB type of the source column (for the request's datatype) */
  type: string;
}

export interface CategoricalSpec {
  column: string;
  vocab: string[];
  /** DuckDB type: integer types are sent as INT64, everything else as strings */
  type: string;
  /** offset of this column's codes in the model's categorical embedding table */
  offset: number;
}

export interface KeySpec {
  column: string;
  /** the referenced table */
  target: string;
  /** DuckDB type of the key column */
  type: string;
}

export interface RtiSpec {
  /** hop path text, the prefix of its request inputs (`<path>:<column>`) */
  path: string;
  child_table: string;
  /** the child's FK to the shared parent (always equal to the fact's, so not an input) */
  child_key: string;
  fact_key: string;
  max_length: number;
  time_column: string;
  numeric: NumericSpec[];
  categorical: CategoricalSpec[];
  /** numeric columns (by name) also on the fact row: log-ratio features */
  ratios: string[];
  /** FK columns also on the fact row (same target): same-entity flags */
  same_keys: KeySpec[];
  /**
   * Also log(1 + Δ in minutes) / 10 per element (distillation.rti_minute_recency). The day-scale Δ
   * features put an item bought 10 minutes ago and one bought 6 hours ago within 0.05 of each other; an
   * account takeover's earlier items are minutes old. Absent in runs distilled before it (false).
   */
  minute_recency?: boolean;
}

export interface EmbeddingKeySpec extends KeySpec {
  dim: number;
}

export interface StudentSpec {
  task: string;
  /** the serving table: the fact table, or an entity task's entity table */
  fact_table: string;
  /** the row's time column (fact-row tasks); null for entity tasks, whose clock features read anchor_time */
  time_column: string | null;
  primary_key: KeySpec | null;
  numeric: NumericSpec[];
  categorical: CategoricalSpec[];
  /** total size of the categorical code space (fact and RTI columns share one embedding table) */
  categorical_size: number;
  categorical_dim: number;
  embeddings: EmbeddingKeySpec[];
  rti: RtiSpec[];
  proj_dim: number;
  element_dim: number;
  hidden: number[];
  use_embeddings: boolean;
  use_rti: boolean;
  /** binary: probability = sigmoid(logit); regression: prediction = logit · labelStd + labelMean */
  output: OutputSpec;
}

export const LOG_RATIO_EPS = 1e-6;
export const LOG_RATIO_CLIP = 5;
export const DELTA_CAP_DAYS = 60;
export const MINUTES_PER_DAY = 1440;
/** log(1 + minutes) / 10: 0.07 at 1 minute, 0.24 at 10 minutes, 0.41 at 1 hour, 0.73 at 1 day, 1.14 at 60 days */
export const MINUTE_RECENCY_SCALE = 10;

export function factNumericDim(s: StudentSpec): number {
  return 2 * s.numeric.length + 4;
}

export function elementNumericDim(r: RtiSpec): number {
  return 2 * r.numeric.length + 2 + (r.minute_recency ? 1 : 0) + r.ratios.length + r.same_keys.length;
}

export function headInputDim(s: StudentSpec): number {
  let d = factNumericDim(s) + s.categorical.length * s.categorical_dim;
  if (s.use_embeddings) d += s.embeddings.length * (s.proj_dim + 1);
  if (s.use_rti) d += s.rti.length * (2 * s.element_dim + 1);
  return d;
}

export function isIntegerType(t: string): boolean {
  return /^(TINYINT|SMALLINT|INTEGER|BIGINT|UTINYINT|USMALLINT|UINTEGER|UBIGINT|HUGEINT)$/.test(t);
}
