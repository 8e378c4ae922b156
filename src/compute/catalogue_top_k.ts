/**
 * Exact top-k over a whole catalogue for a batch of query vectors, in onnxruntime-node:
 *
 *   S = Q · Vᵀ                      [rows, items]   (Q [rows, dim]; Vᵀ [dim, items] baked into the session)
 *   S[r, index[r, j]] += value[r, j]                 sparse per-row additions (e.g. a recommender's pair-wise
 *                                                    scores for the items in a user's own history)
 *   top-k of each row of S: indices and scores, best first; equal scores: the lower index first
 *
 * Why onnxruntime and not TF.js: its MatMul runs on every core (≈ 220 GFLOP/s on this kind of 2-core
 * machine against ≈ 29 for single-threaded tfjs-wasm, docs/architecture.md) and its TopK scans the score
 * matrix natively, where TF.js would copy each [1,024 × items] block into JS and scan it there (for
 * 100,000 users × 10,000 items, as costly as the matmul itself).
 *
 * The model is a three-node graph (MatMul → ScatterElements(add) → TopK) built with the ONNX writer of
 * `artifacts/onnx`. Unused slots of `index`/`value` must hold (0, 0): adding 0 changes no score.
 */
import { availableParallelism } from 'node:os';
import * as ort from 'onnxruntime-node';
import { attr, ElemType, OnnxGraphBuilder } from '../artifacts/onnx/index.js';

export interface CatalogueTopKOptions {
  /** onnxruntime intra-op threads (default: every core) */
  threads?: number;
  /** whether idle pool threads spin-wait for work (onnxruntime's default) */
  spinning?: boolean;
}

export interface TopKBlock {
  /** [rows × k] item rows, best first */
  ids: Int32Array;
  /** [rows × k] their scores */
  scores: Float32Array;
}

export class CatalogueTopK {
  private constructor(
    private readonly session: ort.InferenceSession,
    readonly dim: number,
    readonly items: number,
    readonly k: number,
  ) {}

  /** `vectors` [items × dim] row-major; `k` ≤ items. */
  static async create(vectors: Float32Array, dim: number, k: number, opts: CatalogueTopKOptions = {}): Promise<CatalogueTopK> {
    const items = vectors.length / dim;
    if (!Number.isInteger(items) || items < 1) throw new RangeError(`catalogue top-k: ${vectors.length} values are not rows of ${dim}`);
    if (k < 1 || k > items) throw new RangeError(`catalogue top-k: k = ${k} with ${items} items`);
    const vt = new Float32Array(dim * items);
    for (let i = 0; i < items; i++) for (let c = 0; c < dim; c++) vt[c * items + i] = vectors[i * dim + c]!;
    const g = new OnnxGraphBuilder({ graphName: 'catalogue_top_k' });
    const queries = g.addInput('queries', 'FLOAT', ['rows', dim]);
    const extraIndex = g.addInput('extra_index', 'INT32', ['rows', 'extras']);
    const extraValue = g.addInput('extra_value', 'FLOAT', ['rows', 'extras']);
    const dense = g.op('MatMul', [queries, g.addInitializer('vectors_t', vt, [dim, items])]);
    const scores = g.op('ScatterElements', [dense, extraIndex, extraValue], { axis: attr.int(1), reduction: attr.string('add') });
    g.addNode('TopK', [scores, g.addInitializer('k', BigInt64Array.of(BigInt(k)), [1])], ['top_scores', 'top_index64'], {
      attributes: { axis: attr.int(1), largest: attr.int(1), sorted: attr.int(1) },
    });
    // int32 in and out: no BigInt per history entry or per result on the JS side (GC time on 1.2M results).
    g.addNode('Cast', ['top_index64'], ['top_index'], { attributes: { to: attr.int(ElemType.INT32) } });
    g.addOutput('top_scores', 'FLOAT', ['rows', k]);
    g.addOutput('top_index', 'INT32', ['rows', k]);
    const session = await ort.InferenceSession.create(g.toBytes(), {
      intraOpNumThreads: opts.threads ?? availableParallelism(),
      interOpNumThreads: 1,
      executionMode: 'sequential',
      graphOptimizationLevel: 'all',
      ...(opts.spinning === undefined ? {} : { extra: { session: { intra_op: { allow_spinning: opts.spinning ? '1' : '0' } } } }),
    });
    return new CatalogueTopK(session, dim, items, k);
  }

  /**
   * Top-k of `rows` queries [rows × dim]; `index`/`value` [rows × extras] (extras ≥ 1) are added onto the
   * listed columns first.
   */
  async run(queries: Float32Array, rows: number, index: Int32Array, value: Float32Array, extras: number): Promise<TopKBlock> {
    const out = await this.session.run({
      queries: new ort.Tensor('float32', queries, [rows, this.dim]),
      extra_index: new ort.Tensor('int32', index, [rows, extras]),
      extra_value: new ort.Tensor('float32', value, [rows, extras]),
    });
    return { ids: out.top_index!.data as Int32Array, scores: out.top_scores!.data as Float32Array };
  }

  async release(): Promise<void> {
    await this.session.release();
  }
}
