/**
 * `serve --online-store`: fills a model's embedding input from the online store before the request is
 * batched. A model opts in through its `config.pbtxt` (what `export --embeddings-from-store` writes):
 *
 * ```
 * parameters { key: "online_store:<embedding input>"
 *              value { string_value: '{"table": "customers", "key": "<key input>", "missing": "<flag input>", "run_id": "<base run>"}' } }
 * parameters { key: "missing_value:<embedding input>" value { string_value: "0" } }
 * parameters { key: "missing_value:<flag input>" value { string_value: "1" } }
 * ```
 *
 * The embedding input is FP32 `[batch, dim]` and the flag input FP32 `[batch, 1]`; both are left out of
 * requests, so the decoder fills them with their missing values: every row on the model's fallback row.
 * The store then overwrites the rows it finds (flag 0). Rows it does not find in time keep the fallback
 * row, counted in `gnnctl_online_store_rows_total{source="fallback"}`; the request never fails for it.
 * So do all rows while the current version was published from another run than `run_id`.
 */
import { STORE_BINDING_PARAMETER_PREFIX, type StoreBindingValue } from '../artifacts/online_store.js';
import type { OnlineEmbeddingStore } from '../online_store/embedding_store.js';
import type { InferRequest } from './decode.js';
import { LATENCY_BUCKETS, type Counter, type Histogram, type Registry } from './metrics.js';
import type { ServedModelSpec } from './model_spec.js';

export const ONLINE_STORE_PREFIX = STORE_BINDING_PARAMETER_PREFIX;

export interface StoreBinding {
  /** The FP32 [batch, dim] input the store fills. */
  input: string;
  dim: number;
  /** The keyspace model (the entity table the embeddings were published under). */
  table: string;
  /** The request input holding each row's entity key ([batch, 1], BYTES or INT64). */
  key: string;
  /** The FP32 [batch, 1] input set to 1 where the row gets the fallback row. */
  missing: string;
  /** The deep run the model expects embeddings of (undefined: any). */
  runId?: string;
}

/** The store bindings a model's config declares (none for a model with baked-in embeddings). */
export function storeBindings(spec: ServedModelSpec): StoreBinding[] {
  const params = (spec.config.parameters ?? {}) as Record<string, { string_value?: string }>;
  const out: StoreBinding[] = [];
  for (const [k, v] of Object.entries(params)) {
    if (!k.startsWith(ONLINE_STORE_PREFIX)) continue;
    const input = k.slice(ONLINE_STORE_PREFIX.length);
    const b = JSON.parse(v.string_value ?? '{}') as Partial<StoreBindingValue>;
    const t = spec.inputByName.get(input);
    if (!t || t.datatype !== 'FP32' || t.dims.length !== 1 || !(t.dims[0]! > 0)) throw new Error(`${k}: the model has no FP32 input "${input}" of dims [dim]`);
    if (!b.table || !b.key || !b.missing || !spec.inputByName.has(b.key) || !spec.inputByName.has(b.missing)) {
      throw new Error(`${k}: the value must be {"table", "key", "missing"} naming the keyspace table and two inputs of the model (got ${v.string_value})`);
    }
    out.push({ input, dim: t.dims[0]!, table: b.table, key: b.key, missing: b.missing, ...(b.run_id ? { runId: b.run_id } : {}) });
  }
  return out;
}

export class StoreInputs {
  private readonly rows: Counter;
  private readonly fetchSeconds: Histogram;
  private readonly bindings = new WeakMap<ServedModelSpec, StoreBinding[]>();

  constructor(
    readonly store: OnlineEmbeddingStore,
    registry: Registry,
  ) {
    this.rows = registry.counter('gnnctl_online_store_rows_total', 'Embedding rows of requests by where they came from: lru (in-process cache), redis, miss (key not in the current version) or fallback (store down or past the deadline); miss and fallback rows use the model\'s fallback row.');
    this.fetchSeconds = registry.histogram('gnnctl_online_store_fetch_seconds', 'Time a request waited for Redis (requests the LRU answered whole are not observed).', LATENCY_BUCKETS);
  }

  /** Fills the store-backed inputs of `request` for the model of `spec` (no-op for other models). */
  async fill(spec: ServedModelSpec, request: InferRequest): Promise<void> {
    let bindings = this.bindings.get(spec);
    if (!bindings) this.bindings.set(spec, (bindings = storeBindings(spec)));
    for (const b of bindings) {
      const keyTensor = request.inputs.get(b.key);
      const emb = request.inputs.get(b.input);
      const flag = request.inputs.get(b.missing);
      if (!keyTensor || !emb || !flag) continue;
      const keys = Array.from(keyTensor.data as ArrayLike<string | bigint>, (k) => String(k));
      const r = await this.store.fetch(b.table, keys, b.dim, b.runId);
      (emb.data as Float32Array).set(r.values);
      (flag.data as Float32Array).set(r.missing);
      for (const source of ['lru', 'redis', 'miss', 'fallback'] as const) if (r[source] > 0) this.rows.inc({ model: spec.name, source }, r[source]);
      if (r.fetchMs > 0) this.fetchSeconds.observe({ model: spec.name }, r.fetchMs / 1000);
    }
  }
}
