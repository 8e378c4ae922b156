/**
 * `export --embeddings-from-store`: the distilled model with each entity embedding as a request input
 * instead of a table inside the ONNX file, so `gnnctl serve --online-store redis://…` fills it per request
 * from the published version (`serve/store_inputs.ts` reads the binding this file writes into
 * config.pbtxt; `artifacts/online_store.ts` owns its names). The model's size no longer grows with the
 * entity count, and a fresher embedding is a publish, not a new model version.
 *
 * Per embedding key the graph takes `entity.<table>.embedding` FP32 [b, dim] and `entity.<table>.missing`
 * FP32 [b, 1] and computes what the baked-in lookup computes: the row, or the student's learned fallback
 * row where `missing` is 1, projected, beside the missing flag. For a key the store holds, the features are
 * bit for bit the baked-in model's (a `Where`, not a blend), so the two exports agree to float rounding.
 */
import { STORE_BINDING_PARAMETER_PREFIX, type StoreBindingValue } from '../artifacts/online_store.js';
import type { OnnxGraphBuilder } from '../artifacts/onnx/onnx_graph_builder.js';
import { cast, floatScalar } from '../artifacts/onnx/ops/basic.js';
import { dense } from '../artifacts/onnx/ops/dense.js';
import type { TritonModelConfig } from '../artifacts/triton/pbtxt.js';
import { UsageError } from '../core/errors.js';
import type { StudentSpec } from '../model/student/spec.js';

/** One embedding key served from the store: the two inputs that replace its table. */
export interface StoreEntityInput {
  kind: 'store';
  /** The entity table (the keyspace model the embeddings are published under). */
  table: string;
  dim: number;
  /** FP32 [batch, dim]: the entity's embedding. */
  input: string;
  /** FP32 [batch, 1]: 1 where the row gets the fallback row. */
  missing: string;
  /** The request input with the entity key (`<fact table>.<key column>`). */
  key: string;
  /** The base run whose embeddings the model expects (a version of another run is not served). */
  runId: string;
}

export function isStoreInput(t: object): t is StoreEntityInput {
  return (t as { kind?: string }).kind === 'store';
}

/** The store inputs of a student, one per embedding key (`_<i>` when two keys embed the same table). */
export function storeEntityInputs(spec: StudentSpec, baseRun: string): StoreEntityInput[] {
  if (!spec.use_embeddings || spec.embeddings.length === 0) {
    throw new UsageError(`the distilled model of task ${spec.task} uses no entity embeddings, so there is nothing to serve from the store`, {
      where: '--embeddings-from-store',
      hint: 'export without --embeddings-from-store',
    });
  }
  return spec.embeddings.map((k, i) => {
    const shared = spec.embeddings.filter((e) => e.target === k.target).length > 1;
    const base = `entity.${k.target}${shared ? `_${i}` : ''}`;
    return { kind: 'store', table: k.target, dim: k.dim, input: `${base}.embedding`, missing: `${base}.missing`, key: `${spec.fact_table}.${k.column}`, runId: baseRun };
  });
}

/**
 * The features of one store-backed embedding key: declares its two inputs and returns [projected row,
 * missing flag] as the baked-in lookup does.
 */
export function storeEntityFeatures(
  g: OnnxGraphBuilder,
  t: StoreEntityInput,
  fallback: Float32Array,
  projDim: number,
  proj: { kernel: Float32Array; bias: Float32Array },
): string[] {
  if (fallback.length !== t.dim) throw new Error(`entity ${t.table}: the fallback row has ${fallback.length} values, the embedding ${t.dim}`);
  const emb = g.addInput(t.input, 'FLOAT', ['batch', t.dim], `embedding of ${t.table} from the online store (filled by gnnctl serve --online-store)`);
  const missing = g.addInput(t.missing, 'FLOAT', ['batch', 1], `1 where ${t.table} has no embedding: the model's fallback row is used`);
  const useFallback = g.op('Greater', [missing, floatScalar(g, 0.5, 'half')]);
  const row = g.constant(fallback, [1, t.dim], { name: `${t.input}.fallback_row` });
  const vec = g.op('Where', [useFallback, row, emb]);
  // The flag feature is exactly 0 or 1, as the baked-in lookup's Equal → Cast gives.
  const flag = cast(g, useFallback, 'FLOAT');
  return [dense(g, vec, { kernel: proj.kernel, bias: proj.bias, inputDim: t.dim, units: projDim, name: `entity.${t.table}.proj` }), flag];
}

/** config.pbtxt with the store inputs declared (optional, filled by the server) and bound to the keyspace. */
export function storeModelConfig(config: TritonModelConfig, inputs: readonly StoreEntityInput[]): TritonModelConfig {
  const params: Record<string, { string_value: string }> = {};
  for (const t of inputs) {
    const binding: StoreBindingValue = { table: t.table, key: t.key, missing: t.missing, run_id: t.runId };
    params[`${STORE_BINDING_PARAMETER_PREFIX}${t.input}`] = { string_value: JSON.stringify(binding) };
    // What a request without the inputs (every request: the server fills them) starts from: the fallback row.
    params[`missing_value:${t.input}`] = { string_value: '0' };
    params[`missing_value:${t.missing}`] = { string_value: '1' };
  }
  return {
    ...config,
    input: [...(config.input ?? []), ...inputs.flatMap((t) => [
      { name: t.input, data_type: 'TYPE_FP32' as const, dims: [t.dim], optional: true },
      { name: t.missing, data_type: 'TYPE_FP32' as const, dims: [1], optional: true },
    ])],
    parameters: { ...(config.parameters ?? {}), ...params },
  };
}

/**
 * Adds the store inputs' values to parity requests: the vectors and missing flags the student side
 * looked up (`rawRequests`' `data.embeddings`, spec.embeddings order), as the server would fill them.
 */
export function addStoreParityInputs(
  requests: { n: number; values: Map<string, Float32Array | BigInt64Array | string[]> },
  embeddings: readonly { values: { subarray(begin: number, end: number): Float32Array }; missing: Float32Array }[],
  inputs: readonly StoreEntityInput[],
): { name: string; width: number }[] {
  return inputs.flatMap((t, i) => {
    const e = embeddings[i]!;
    requests.values.set(t.input, e.values.subarray(0, requests.n * t.dim));
    requests.values.set(t.missing, e.missing);
    return [
      { name: t.input, width: t.dim },
      { name: t.missing, width: 1 },
    ];
  });
}
