/**
 * The session-aware distilled recommender's contract (Kumo's online path for ranking tasks): which request
 * fields it reads, how each becomes a feature, and the layer sizes. Training (TF.js, `session_model.ts`)
 * and export (ONNX, `export/session_onnx.ts`) are both built from this spec and compute the same function.
 *
 * Request, per row:
 *   user key k                     → u = (k known ? U[k] : f_u) · W_u + b_u,  m = [k unknown]
 *   session elements j = 1…n       item key i_j and time t_j (n variable, 0 allowed; padded slots masked)
 *     Δ_j = max(0, anchor − t_j) in days
 *     x_j = [B[i_j] (or the learned fallback f_i for an unknown item) ‖ log(1 + Δ_j) / 5 ‖ min(Δ_j, 60) / 60
 *            ‖ (element_context) exp(−r_j) ‖ exp(−r_j / 4) ‖ log(1 + r_j) / log(1 + N) ‖ log(c_j) / log(1 + N)]
 *       r_j = #{k: Δ_k < Δ_j} (elements strictly newer; equal times share a rank), c_j = #{k: i_k = i_j}
 *       (both over the real elements). Why: a habit re-buys one of the last few distinct articles, so
 *       "among the newest" and "bought twice" are the repeat signal; Δ in days cannot tell apart the items of
 *       one basket, and a per-element score cannot see the other elements.
 *     h_j = ReLU(x_j · W_e + b_e);  pooled by masked mean and masked attention; count log(1 + n) / log(1 + N)
 *   query  q = W₂ · ReLU(W₁ · [u ‖ m ‖ mean ‖ attn ‖ count] + b₁) + b₂          (dim d)
 * Catalogue, per item i (precomputed at export: it does not depend on the request):
 *   v_i = B[i] · W_v + b_v + E[i],  score_i = q · v_i + β_i + r_i
 * Pair-wise session term (ContextGNN's pair-wise scores for the items in the user's own neighbourhood):
 *   r_i = Σ_{j: i_j = i} (h_j · w_r + c_r)    learned from the element's item embedding and recency
 * B and U are the base run's item and user embeddings (as of a snapshot); E (a learned per-item vector) and β
 * (a learned per-item bias: popularity) are the student's own.
 * Output: the k highest scores and their item keys (ONNX TopK), over the whole catalogue, or over the
 * request's candidates when it sends some.
 */

export interface SessionKeySpec {
  table: string;
  /** primary-key column of `table` (the request's key values) */
  column: string;
  /** DuckDB type of the key column: integer keys travel as INT64, everything else as strings */
  type: string;
  /** width of the base run's embeddings of `table` */
  dim: number;
}

export interface SessionSpec {
  /** the ranking query's text (lineage) */
  query: string;
  user: SessionKeySpec;
  item: SessionKeySpec;
  /** items in the catalogue (rows of E and β, in the order of the exported key list) */
  items: number;
  /** RTI: the user's own interactions `<user table>.<pk>-><fact table>.<user fk>` */
  session: {
    path: string;
    fact_table: string;
    /** the fact table's foreign key to the item table (request input `<path>:<item_column>`) */
    item_column: string;
    /** the fact table's time column (request input `<path>:<time_column>`) */
    time_column: string;
    max_length: number;
  };
  /** top-k of the output */
  k: number;
  dim: number;
  user_dim: number;
  element_dim: number;
  hidden: number;
  use_user: boolean;
  use_rti: boolean;
  /**
   * Each session element also sees where it sits in the session: its recency rank r_j (how many elements
   * are newer) and how often its item occurs in the session (c_j). Runs distilled before this existed
   * lack the field and read as false.
   */
  element_context?: boolean;
}

export const SESSION_DELTA_CAP_DAYS = 60;
/** Score of a slot with no item (fewer candidates than k): far below any real score, finite for JSON. */
export const NO_ITEM_SCORE = -1e9;

export function sessionHeadInputDim(s: SessionSpec): number {
  let d = 0;
  if (s.use_user) d += s.user_dim + 1;
  if (s.use_rti) d += 2 * s.element_dim + 1;
  return d;
}

/** Features of an element's place in its session (`element_context`): exp(−r), exp(−r/4), log(1 + r)/log(1 + N), log(c)/log(1 + N). */
export const ELEMENT_CONTEXT_FEATURES = 4;

export function sessionElementInputDim(s: SessionSpec): number {
  return s.item.dim + 2 + (s.element_context ? ELEMENT_CONTEXT_FEATURES : 0);
}
