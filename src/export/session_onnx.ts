/**
 * The session-aware recommender as an ONNX graph (formulas in `model/student/session_spec.ts`, TF.js in
 * `model/student/session_model.ts`). The base run's user and item embeddings are baked in and looked up by
 * key (ai.onnx.ml LabelEncoder → Gather); the catalogue side (v_i, β_i) does not depend on the request and
 * is precomputed here, so a request costs one [1, d] × [d, items] MatMul, a scatter of its session's
 * pair-wise scores, and a TopK.
 *
 * Inputs (names as the export contract gives them):
 *   `anchor_time` INT64 [b, 1]                        request time, ns since the epoch
 *   `<user table>.<pk>` STRING|INT64 [b, 1]           the user's key (unknown → the learned fallback)
 *   `<path>:<time column>` INT64 [b, seq, 1]          session element times (INT64 min = padding)
 *   `<path>:<item column>` STRING|INT64 [b, seq, 1]   session element item keys
 *   `candidates` STRING|INT64 [b, c]                  rank only these (padding "" / INT64 min); c = 0 or all
 *                                                     padding: the whole catalogue. ONNX has no optional
 *                                                     graph input that onnxruntime's bindings feed (an input
 *                                                     with a default initializer is hidden from them), so
 *                                                     the input is required in the graph; `gnnctl serve`
 *                                                     fills an empty [b, 0] when a request leaves it out
 *                                                     (`missing_value:candidates`), Triton clients send [b, 0]
 * Outputs:
 *   `<item table>.<pk>` STRING|INT64 [b, k]           the top-k item keys, best first
 *   `score` FLOAT [b, k]                              their scores; a slot with no item (fewer candidates
 *                                                     than k) has key "" (INT64 min) and score −1e9
 */
import { attr } from '../artifacts/onnx/attributes.js';
import { ML_DOMAIN, OnnxGraphBuilder } from '../artifacts/onnx/onnx_graph_builder.js';
import { cast, floatScalar, int64s, squeeze, unsqueeze } from '../artifacts/onnx/ops/basic.js';
import { dense } from '../artifacts/onnx/ops/dense.js';
import { lookupIndex, type Vocabulary } from '../artifacts/onnx/ops/lookup.js';
import { maskedAttentionPool, maskedMeanPool } from '../artifacts/onnx/ops/pooling.js';
import { INT64_MIN, relativeTime } from '../artifacts/onnx/ops/time.js';
import type { ElemType } from '../artifacts/onnx/types.js';
import { ArtifactError } from '../core/errors.js';
import { isIntegerType } from '../model/student/spec.js';
import { NO_ITEM_SCORE, SESSION_DELTA_CAP_DAYS, sessionElementInputDim, sessionHeadInputDim, type SessionSpec } from '../model/student/session_spec.js';
import type { RequestInput } from './student_onnx.js';

export const CANDIDATES_INPUT = 'candidates';
export const SCORE_OUTPUT = 'score';

export interface KeyedTable {
  /** keys in row order (strings, or bigints for integer keys) */
  keys: Vocabulary;
  /** [rows × dim] */
  vectors: Float32Array;
  dim: number;
}

export interface SessionOnnxInputs {
  spec: SessionSpec;
  weights: Map<string, Float32Array>;
  users: KeyedTable;
  /** the item catalogue: its row order is the order of E and β in the weights */
  items: KeyedTable;
  metadata?: Record<string, string>;
}

export function keyElemType(duckType: string): ElemType {
  return isIntegerType(duckType) ? 'INT64' : 'STRING';
}

function padKey(t: ElemType): string {
  return t === 'INT64' ? INT64_MIN.toString() : '';
}

export function itemOutputName(spec: SessionSpec): string {
  return `${spec.item.table}.${spec.item.column}`;
}

/** Every request input the model declares, in a stable order (config.pbtxt lists them in this order). */
export function sessionRequestInputs(spec: SessionSpec): (RequestInput & { dims: number[] })[] {
  const userType = keyElemType(spec.user.type);
  const itemType = keyElemType(spec.item.type);
  const p = spec.session.path;
  const N = spec.session.max_length;
  const out: (RequestInput & { dims: number[] })[] = [
    { name: 'anchor_time', elemType: 'INT64', sequence: false, dims: [1], doc: 'request time, ns since the epoch' },
    { name: `${spec.user.table}.${spec.user.column}`, elemType: userType, sequence: false, dims: [1], doc: `key of ${spec.user.table} (embedding lookup; unknown keys get the learned fallback)` },
  ];
  if (spec.use_rti) {
    out.push(
      { name: `${p}:${spec.session.time_column}`, elemType: 'INT64', sequence: true, dims: [-1, 1], padValue: INT64_MIN.toString(), maxLength: N, doc: 'session element time, ns since the epoch (INT64 min = padding)' },
      { name: `${p}:${spec.session.item_column}`, elemType: itemType, sequence: true, dims: [-1, 1], padValue: padKey(itemType), maxLength: N, doc: `session element: key of ${spec.item.table}` },
    );
  }
  out.push({
    name: CANDIDATES_INPUT,
    elemType: itemType,
    sequence: true,
    dims: [-1],
    padValue: padKey(itemType),
    missingValue: padKey(itemType),
    doc: `optional: keys of ${spec.item.table} to rank (absent or empty: the whole catalogue)`,
  });
  return out;
}

export function buildSessionOnnx(inp: SessionOnnxInputs): OnnxGraphBuilder {
  const { spec, weights, users, items } = inp;
  const w = (name: string): Float32Array => {
    const v = weights.get(name);
    if (!v) throw new Error(`session recommender weights lack ${name}`);
    return v;
  };
  const I = items.keys.length;
  if (I !== spec.items) throw new ArtifactError(`the item catalogue has ${I} keys but the model was trained on ${spec.items} items`, { hint: 'export with the item embeddings the run was distilled on' });
  if (I < spec.k) throw new ArtifactError(`the catalogue has ${I} items, fewer than k = ${spec.k}`, { hint: 'lower RANK TOP k in the ranking query' });
  const g = new OnnxGraphBuilder({ graphName: 'session_recommender', docString: `gnnctl session-aware recommender: ${spec.query}` });
  const inputs = sessionRequestInputs(spec);
  const name = new Map<string, string>();
  const itemType = keyElemType(spec.item.type);
  for (const i of inputs) {
    const shape = i.sequence ? (i.dims.length === 2 ? ['batch', 'seq', 1] : ['batch', 'candidates']) : ['batch', 1];
    name.set(i.name, g.addInput(i.name, i.elemType, shape, i.doc));
  }
  const input = (n: string): string => name.get(n)!;
  const anchor = input('anchor_time');

  const parts: string[] = [];
  let pair: string | null = null;
  if (spec.use_user) {
    const U = users.keys.length;
    const table = new Float32Array((U + 1) * spec.user.dim);
    table.set(users.vectors);
    table.set(w('user/fallback'), U * spec.user.dim);
    const index = lookupIndex(g, input(`${spec.user.table}.${spec.user.column}`), users.keys, U, 'user.lookup');
    const vec = g.op('Gather', [g.constant(table, [U + 1, spec.user.dim], { name: 'user.table' }), squeeze(g, index, [1])], { axis: attr.int(0) });
    const missing = cast(g, g.op('Equal', [index, g.constant(BigInt64Array.of(BigInt(U)), [], { name: 'user.fallback_row' })]), 'FLOAT');
    parts.push(dense(g, vec, { kernel: w('user/proj_w'), bias: w('user/proj_b'), inputDim: spec.user.dim, units: spec.user_dim, name: 'user.proj' }), missing);
  }
  if (spec.use_rti) {
    const p = spec.session.path;
    const t = squeeze(g, input(`${p}:${spec.session.time_column}`), [2]);
    const rel = relativeTime(g, t, anchor, { name: 'session.reltime' });
    const delta = g.op('Max', [rel.value, floatScalar(g, 0, 'zero')]);
    const itemTable = new Float32Array((I + 1) * spec.item.dim);
    itemTable.set(items.vectors);
    itemTable.set(w('item/fallback'), I * spec.item.dim);
    const idx = lookupIndex(g, squeeze(g, input(`${p}:${spec.session.item_column}`), [2]), items.keys, I, 'session.item.lookup');
    const base = g.op('Gather', [g.constant(itemTable, [I + 1, spec.item.dim], { name: 'item.table' }), idx], { axis: attr.int(0) });
    const logDelta = g.op('Div', [g.op('Log', [g.op('Add', [delta, floatScalar(g, 1, 'one')])]), floatScalar(g, 5, 'five')]);
    const capped = g.op('Div', [g.op('Min', [delta, floatScalar(g, SESSION_DELTA_CAP_DAYS, 'delta_cap')]), floatScalar(g, SESSION_DELTA_CAP_DAYS, 'delta_cap')]);
    const cols = [base, unsqueeze(g, logDelta, [2]), unsqueeze(g, capped, [2])];
    if (spec.element_context) cols.push(elementContext(g, delta, idx, rel.mask, spec.session.max_length));
    const x = g.op('Concat', cols, { axis: attr.int(2) });
    const h = dense(g, x, { kernel: w('rti/w'), bias: w('rti/b'), inputDim: sessionElementInputDim(spec), units: spec.element_dim, activation: 'relu', name: 'session.element' });
    const mean = maskedMeanPool(g, h, rel.mask);
    const att = maskedAttentionPool(g, h, rel.mask, { weight: w('rti/att_w'), bias: w('rti/att_b')[0]!, name: 'session.attention' });
    const count = g.op('ReduceSum', [rel.mask, int64s(g, [1], 'axes')], { keepdims: attr.int(1) });
    const countFeat = g.op('Div', [g.op('Log', [g.op('Add', [count, floatScalar(g, 1, 'one')])]), floatScalar(g, Math.log1p(spec.session.max_length), 'session.log_max')]);
    parts.push(mean, att, countFeat);
    // Pair-wise term: each element's score h_j · w_r + c_r scatter-added onto its item's column ([b, I + 1];
    // column I collects unknown items and padding, whose scores are masked to 0).
    const pairScore = g.op('Add', [g.op('MatMul', [h, g.constant(w('rti/pair_w'), [spec.element_dim, 1], { name: 'session.pair.weight' })]), g.constant(w('rti/pair_b'), [1], { name: 'session.pair.bias' })]);
    const a = g.op('Where', [cast(g, rel.mask, 'BOOL'), squeeze(g, pairScore, [2]), floatScalar(g, 0, 'zero')]);
    const rowsShape = g.op('Slice', [g.op('Shape', [idx]), int64s(g, [0], 'starts'), int64s(g, [1], 'ends')]);
    const pairZeros = g.op('ConstantOfShape', [g.op('Concat', [rowsShape, int64s(g, [I + 1], 'pair_width')], { axis: attr.int(0) })], { value: attr.tensor({ data: Float32Array.of(0), dims: [1] }) });
    const scattered = g.op('ScatterElements', [pairZeros, idx, a], { axis: attr.int(1), reduction: attr.string('add') });
    pair = g.op('Slice', [scattered, int64s(g, [0], 'starts'), int64s(g, [I], 'ends'), int64s(g, [1], 'slice_axes')]);
  }
  const z = g.op('Concat', parts, { axis: attr.int(1) });
  const hidden = dense(g, z, { kernel: w('head/w0'), bias: w('head/b0'), inputDim: sessionHeadInputDim(spec), units: spec.hidden, activation: 'relu', name: 'head.0' });
  const q = dense(g, hidden, { kernel: w('head/w1'), bias: w('head/b1'), inputDim: spec.hidden, units: spec.dim, name: 'head.1' });

  // Catalogue scores [b, I], then two extra columns that are never an item: I (an unknown candidate) and
  // I + 1 (candidate padding).
  const { vectorsT, bias } = catalogueConstants(spec, weights, items.vectors);
  let scores = g.op('Add', [g.op('MatMul', [q, g.constant(vectorsT, [spec.dim, I], { name: 'catalogue.vectors_t' })]), g.constant(bias, [I], { name: 'catalogue.bias' })]);
  if (pair) scores = g.op('Add', [scores, pair]);
  const noItem = floatScalar(g, NO_ITEM_SCORE, 'no_item_score');
  const extended = g.op('Pad', [scores, int64s(g, [0, 0, 0, 2], 'pads'), noItem], { mode: attr.string('constant') });

  // Candidates: a 0/1 hit per column, scattered from the candidates' rows; a row with no candidate (absent,
  // empty or all padding) keeps the whole catalogue.
  const candKeys = Array.from(items.keys as ArrayLike<string | bigint>);
  const candVocab = (itemType === 'INT64' ? BigInt64Array.from([...(candKeys as bigint[]), INT64_MIN]) : [...(candKeys as string[]), '']) as Vocabulary;
  const candIdx = g.op(
    'LabelEncoder',
    [input(CANDIDATES_INPUT)],
    {
      ...(itemType === 'INT64' ? { keys_int64s: attr.ints(candVocab as BigInt64Array) } : { keys_strings: attr.strings(candVocab as string[]) }),
      values_int64s: attr.ints(BigInt64Array.from({ length: I + 1 }, (_, i) => BigInt(i < I ? i : I + 1))),
      default_int64: attr.int(I),
    },
    { domain: ML_DOMAIN, name: 'candidates.lookup' },
  );
  const zeros = g.op('ConstantOfShape', [g.op('Shape', [extended])], { value: attr.tensor({ data: Float32Array.of(0), dims: [1] }) });
  const ones = g.op('ConstantOfShape', [g.op('Shape', [candIdx])], { value: attr.tensor({ data: Float32Array.of(1), dims: [1] }) });
  const hit = g.op('ScatterElements', [zeros, candIdx, ones], { axis: attr.int(1) });
  const realHits = g.op('Slice', [hit, int64s(g, [0], 'starts'), int64s(g, [I + 1], 'ends'), int64s(g, [1], 'slice_axes')]);
  const hasCandidates = g.op('Greater', [g.op('ReduceMax', [realHits], { axes: attr.ints([1]), keepdims: attr.int(1) }), floatScalar(g, 0, 'zero')]);
  const keep = g.op('Or', [g.op('Not', [hasCandidates]), g.op('Greater', [hit, floatScalar(g, 0, 'zero')])]);
  const ranked = g.op('Where', [keep, extended, noItem]);

  const [topScores, topIdx] = g.addNode('TopK', [ranked, int64s(g, [spec.k], 'k')], 2, { attributes: { axis: attr.int(1), largest: attr.int(1), sorted: attr.int(1) }, name: 'top_k' }) as [string, string];
  const keyTable = itemType === 'INT64' ? BigInt64Array.from([...(candKeys as bigint[]), INT64_MIN, INT64_MIN]) : [...(candKeys as string[]), '', ''];
  const keys = g.op('Gather', [g.constant(keyTable, [I + 2], { name: 'catalogue.keys' }), topIdx], { axis: attr.int(0) });
  const valid = g.op('Greater', [topScores, floatScalar(g, NO_ITEM_SCORE / 2, 'no_item_threshold')]);
  const noKey = itemType === 'INT64' ? g.constant(BigInt64Array.of(INT64_MIN), [], { name: 'no_item_key' }) : g.constant([''], [], { name: 'no_item_key' });
  g.addOutput(itemOutputName(spec), itemType, ['batch', spec.k], { from: g.op('Where', [valid, keys, noKey]) });
  g.addOutput(SCORE_OUTPUT, 'FLOAT', ['batch', spec.k], { from: g.op('Where', [valid, topScores, noItem]) });
  for (const [k, v] of Object.entries(inp.metadata ?? {})) g.setMetadata(k, v);
  return g;
}

/**
 * Each element's place in its session [b, seq, 4], as `SessionModel`'s `elementContext` computes it: recency
 * rank r_j = #{real k: Δ_k < Δ_j} and count c_j = #{real k: i_k = i_j} over the [seq, seq] grid, then
 * exp(−r), exp(−r/4), log(1 + r)/log(1 + N), log(max(c, 1))/log(1 + N). The request's elements may come in any
 * order: the rank is read from the times, not the positions.
 */
function elementContext(g: OnnxGraphBuilder, delta: string, idx: string, mask: string, N: number): string {
  const other = unsqueeze(g, mask, [1]);
  const grid = (op: 'Less' | 'Equal', x: string): string => g.op('ReduceSum', [g.op('Mul', [cast(g, g.op(op, [unsqueeze(g, x, [1]), unsqueeze(g, x, [2])]), 'FLOAT'), other]), int64s(g, [2], 'axes')], { keepdims: attr.int(0) });
  const rank = grid('Less', delta);
  const count = grid('Equal', idx);
  const logN = floatScalar(g, Math.log1p(N), 'session.context.log_max');
  const feats = [
    g.op('Exp', [g.op('Neg', [rank])]),
    g.op('Exp', [g.op('Div', [rank, floatScalar(g, -4, 'session.context.minus_four')])]),
    g.op('Div', [g.op('Log', [g.op('Add', [rank, floatScalar(g, 1, 'one')])]), logN]),
    g.op('Div', [g.op('Log', [g.op('Max', [count, floatScalar(g, 1, 'one')])]), logN]),
  ];
  return g.op('Concat', feats.map((f) => unsqueeze(g, f, [2])), { axis: attr.int(2) });
}

/**
 * The request-independent catalogue side in float32, as TF.js computes it: Vᵀ [dim, I] with
 * v_i = B[i] · W_v + b_v + E[i], and β [I].
 */
export function catalogueConstants(spec: SessionSpec, weights: Map<string, Float32Array>, itemBase: Float32Array): { vectorsT: Float32Array; bias: Float32Array } {
  const I = spec.items;
  const di = spec.item.dim;
  const d = spec.dim;
  const W = weights.get('item/proj_w')!;
  const b = weights.get('item/proj_b')!;
  const E = weights.get('item/vector')!;
  const vectorsT = new Float32Array(d * I);
  const acc = new Float64Array(d);
  for (let i = 0; i < I; i++) {
    acc.fill(0);
    for (let a = 0; a < di; a++) {
      const x = itemBase[i * di + a]!;
      if (x === 0) continue;
      for (let c = 0; c < d; c++) acc[c]! += x * W[a * d + c]!;
    }
    for (let c = 0; c < d; c++) vectorsT[c * I + i] = Math.fround(Math.fround(acc[c]! + b[c]!) + E[i * d + c]!);
  }
  return { vectorsT, bias: Float32Array.from(weights.get('item/bias')!) };
}
