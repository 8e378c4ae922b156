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
 * matrix natively, while TF.js had to copy each [1,024 × items] block into JS and scan it there; for
 * 100,000 users × 10,000 items the two JS-side steps cost about the same as the matmul itself.
 *
 * The model is a three-node graph (MatMul → ScatterElements(add) → TopK, opset 17) encoded with the ONNX
 * schema of `artifacts/onnx`. Unused slots of `index`/`value` must hold (0, 0): adding 0 changes no score.
 */
import { availableParallelism } from 'node:os';
import * as ort from 'onnxruntime-node';
import { onnx, tensorValueInfo, type IModelProto } from '../artifacts/onnx/onnx_schema.js';

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
    const F = onnx.TensorProto.DataType.FLOAT;
    const I64 = onnx.TensorProto.DataType.INT64;
    const I32 = onnx.TensorProto.DataType.INT32;
    const int = (name: string, i: number) => ({ name, type: onnx.AttributeProto.AttributeType.INT, i });
    const model: IModelProto = {
      irVersion: 8,
      opsetImport: [{ domain: '', version: 17 }],
      producerName: 'gnnctl',
      graph: {
        name: 'catalogue_top_k',
        initializer: [
          { name: 'vectors_t', dataType: F, dims: [dim, items], rawData: new Uint8Array(vt.buffer, vt.byteOffset, vt.byteLength) },
          { name: 'k', dataType: I64, dims: [1], int64Data: [k] },
        ],
        node: [
          { opType: 'MatMul', input: ['queries', 'vectors_t'], output: ['dense'] },
          { opType: 'ScatterElements', input: ['dense', 'extra_index', 'extra_value'], output: ['scores'], attribute: [int('axis', 1), { name: 'reduction', type: onnx.AttributeProto.AttributeType.STRING, s: new TextEncoder().encode('add') }] },
          { opType: 'TopK', input: ['scores', 'k'], output: ['top_scores', 'top_index64'], attribute: [int('axis', 1), int('largest', 1), int('sorted', 1)] },
          // int32 in and out: no BigInt per history entry or per result on the JS side (GC time on 1.2M results).
          { opType: 'Cast', input: ['top_index64'], output: ['top_index'], attribute: [int('to', I32)] },
        ],
        input: [tensorValueInfo('queries', F, ['rows', dim]), tensorValueInfo('extra_index', I32, ['rows', 'extras']), tensorValueInfo('extra_value', F, ['rows', 'extras'])],
        output: [tensorValueInfo('top_scores', F, ['rows', k]), tensorValueInfo('top_index', I32, ['rows', k])],
      },
    };
    const session = await ort.InferenceSession.create(onnx.ModelProto.encode(model).finish(), {
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
