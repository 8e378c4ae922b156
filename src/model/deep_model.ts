/**
 * A deep model bound to a graph: the saved spec and feature encoders, the weights, the sampling plan.
 * Training creates one; embed, distill and fine-tuning load one from a run folder and get exactly the
 * model that was trained (same encoders, same plan, same weights).
 */
import { tf } from '../core/tf.js';
import { ArtifactError } from '../core/errors.js';
import type { Graph } from '../graph/graph.js';
import { loadWeights, readModelJson } from '../artifacts/run_store.js';
import { Rng } from '../core/rng.js';
import { predictValues } from '../task/objective/objective.js';
import { buildBatchArrays, type BatchArrays } from './batch.js';
import type { Examples } from '../task/task_spec.js';
import { bindFeatures, numericDim, type FeatureSpec, type TableFeatures } from './features.js';
import { HeteroGnn, type ModelSpec } from './hetero_gnn.js';
import { ParamStore } from './params.js';
import { buildPlan, type Plan } from './plan.js';
import { TemporalSampler, type SampledBatch } from './sampler.js';
import { RankingHead } from './context_gnn.js';
import { Scratch, type Alloc } from './scratch.js';
import { copyOut } from '../compute/backend.js';

/** rows per encoder call when encoding a whole table (`staticEncodings`) */
const STATIC_CHUNK = 16384;

/**
 * Entities per batch of `embedSampled`, which defines its seeded stream (a worker replays it, see
 * embed/pool.ts). 1024, not 4096: a 4096-entity forward grows a TF.js wasm heap to 165 MB, and a fresh
 * worker's first batch spent ~0.85 s touching those pages (against ~0.1 s warm); at 1024 the heap stays at
 * 40 MB, the first batch costs 0.14 s, and the warm rate per thread is higher too (~46k against ~39k
 * entities/s at `medium`: the batch's intermediates stay in cache). 512 is slower again (per-kernel overhead).
 */
export const SAMPLED_BATCH = 1024;

export class DeepModel {
  readonly plan: Plan;
  readonly sampler: TemporalSampler;
  readonly features: Record<string, TableFeatures>;
  readonly params: ParamStore;
  readonly gnn: HeteroGnn;
  /** ranking runs: the recommender's own weights, and the tree rooted at an item (see model/context_gnn.ts) */
  readonly ranking: RankingHead | null = null;
  readonly itemPlan: Plan | null = null;
  readonly itemSampler: TemporalSampler | null = null;

  constructor(
    readonly graph: Graph,
    readonly spec: ModelSpec,
    readonly featureSpec: FeatureSpec,
    seed: number,
  ) {
    this.plan = buildPlan(graph, spec.root, spec.fanouts);
    this.sampler = new TemporalSampler(graph, this.plan, spec.sampling);
    this.features = bindFeatures(graph, featureSpec);
    this.params = new ParamStore(seed);
    this.gnn = new HeteroGnn(this.params, spec);
    if (spec.ranking) {
      this.ranking = new RankingHead(this.params, spec.ranking, spec.channels);
      this.itemPlan = buildPlan(graph, spec.ranking.item_table, spec.fanouts);
      this.itemSampler = new TemporalSampler(graph, this.itemPlan, spec.sampling);
    }
  }

  /** Loads a trained model from a run folder onto `graph` (which may be newer than the training graph). */
  static load(runDir: string, graph: Graph): DeepModel {
    const spec = readModelJson<ModelSpec>(runDir, 'spec.json');
    const featureSpec = readModelJson<FeatureSpec>(runDir, 'features.json');
    for (const [type, t] of Object.entries(spec.types)) {
      const now = featureSpec.tables[type] ? numericDim(featureSpec.tables[type]) : -1;
      if (now !== t.num_dim) {
        throw new ArtifactError(`run ${runDir} was trained with ${t.num_dim} numeric inputs for ${type}, but this gnnctl encodes ${type} with ${now}`, {
          hint: 'the run comes from another gnnctl version whose feature encoding differs; retrain it with gnnctl train',
        });
      }
    }
    const model = new DeepModel(graph, spec, featureSpec, 0);
    const { index, blob } = loadWeights(runDir);
    model.params.load(index, blob);
    return model;
  }

  batch(seeds: Int32Array, anchors: Float64Array, rng: Rng | null, plan: Plan = this.plan, sampler: TemporalSampler = this.sampler): BatchArrays {
    return buildBatchArrays(plan, sampler.sample(seeds, anchors, rng), this.features, this.spec.degree ?? 'sampled');
  }

  /** Dense model inputs for an already sampled batch (`alloc`: see scratch.ts). */
  arrays(sampled: SampledBatch, plan: Plan = this.plan, encoded?: ReadonlySet<string>, alloc?: Alloc): BatchArrays {
    return buildBatchArrays(plan, sampled, this.features, this.spec.degree ?? 'sampled', encoded, alloc);
  }

  /**
   * Raw head outputs (logits, or standardized regression values) for examples, in batches. Sampling is
   * seeded, so the same call gives the same numbers.
   */
  predictRaw(ex: Pick<Examples, 'nodes' | 'anchors'>, batchSize = 2048, seed = 1234): Float32Array {
    const out = new Float32Array(ex.nodes.length);
    const rng = new Rng(seed);
    const scratch = new Scratch();
    for (let i = 0; i < ex.nodes.length; i += batchSize) {
      const j = Math.min(ex.nodes.length, i + batchSize);
      scratch.reset();
      const arrays = this.arrays(this.sampler.sample(ex.nodes.subarray(i, j), ex.anchors.subarray(i, j), rng, scratch), this.plan, undefined, scratch);
      const logits = tf.tidy(() => this.gnn.forward(this.plan, arrays, false).logits!);
      out.set(logits.dataSync() as Float32Array, i);
      logits.dispose();
    }
    return out;
  }

  /** Predictions in the task's units: probabilities (binary) or label units (regression). */
  predict(ex: Pick<Examples, 'nodes' | 'anchors'>, batchSize = 2048, seed = 1234): Float32Array {
    return this.toOutput(this.predictRaw(ex, batchSize, seed));
  }

  toOutput(raw: Float32Array): Float32Array {
    return predictValues(this.spec.output, raw);
  }

  /**
   * Sampled embeddings of `nodes` of `table` at one anchor: the layer-(L − depth) representation of a
   * tree rooted at the table, sampled with the training fanouts of the hops below `depth` (seeded).
   */
  embedSampled(table: string, depth: number, nodes: Int32Array, anchor: number, seed: number, batchSize = SAMPLED_BATCH): Float32Array {
    const tree = this.samplingTree(table, depth);
    const C = this.spec.channels;
    const out = new Float32Array(nodes.length * C);
    const rng = new Rng(seed);
    const anchors = new Float64Array(batchSize).fill(anchor);
    const encoded = this.staticEncodings(tree.plan, nodes.length);
    const scratch = new Scratch();
    try {
      for (let i = 0; i < nodes.length; i += batchSize) {
        const j = Math.min(nodes.length, i + batchSize);
        scratch.reset();
        this.embedSampledBatch(tree, tree.sampler.sample(nodes.subarray(i, j), anchors.subarray(0, j - i), rng, scratch), encoded, scratch, { out, offset: i * C });
      }
    } finally {
      for (const t of encoded.values()) t.dispose();
    }
    return out;
  }

  /** The tree `embedSampled` samples for `table` at `depth` (the training plan when that is the root's). */
  samplingTree(table: string, depth: number): { plan: Plan; sampler: TemporalSampler } {
    const plan = depth === 0 && table === this.spec.root ? this.plan : buildPlan(this.graph, table, this.spec.fanouts.slice(depth));
    return { plan, sampler: plan === this.plan ? this.sampler : new TemporalSampler(this.graph, plan, this.spec.sampling) };
  }

  /**
   * Encoder outputs of every node of the plan's anchor-independent types (articles: their inputs are the
   * same at every anchor) whose table is smaller than the rows `seeds` sampled trees could hold of it:
   * embedding 100k customers encodes each of 10k articles once instead of once per batch it appears in
   * (thousands of them in every batch). The same numbers, since the encoder works row by row.
   * Inference only (the caller disposes the tensors; they go stale when the weights change).
   */
  staticEncodings(plan: Plan, seeds: number): Map<string, tf.Tensor2D> {
    const C = this.spec.channels;
    const width = new Map<string, number>();
    for (const s of plan.slots) if (s.depth > 0) width.set(s.type, (width.get(s.type) ?? 0) + s.width);
    const out = new Map<string, tf.Tensor2D>();
    for (const [type, w] of width) {
      const f = this.features[type]!;
      if (f.timeDependent || f.rows === 0 || f.rows > seeds * w) continue;
      const all = new Float32Array(f.rows * C);
      for (let lo = 0; lo < f.rows; lo += STATIC_CHUNK) {
        const n = Math.min(f.rows, lo + STATIC_CHUNK) - lo;
        const num = new Float32Array(n * f.num_dim);
        const cat = new Int32Array(n * f.catCount);
        f.gather(Int32Array.from({ length: n }, (_, i) => lo + i), () => 0, null, num, cat);
        const t = tf.tidy(() => this.gnn.encode(type, num, cat, n));
        all.set(t.dataSync() as Float32Array, lo * C);
        t.dispose();
      }
      out.set(type, tf.tensor2d(all, [f.rows, C]));
    }
    return out;
  }

  /**
   * The root embeddings of one sampled batch of `tree` ([batch × channels]); `encoded` from
   * `staticEncodings`. `into`: written there (from `offset`) and returned as that part of it, instead of
   * into a new array.
   */
  embedSampledBatch(tree: { plan: Plan }, sampled: SampledBatch, encoded?: ReadonlyMap<string, tf.Tensor2D>, alloc?: Alloc, into?: { out: Float32Array; offset: number }): Float32Array {
    const arrays = this.arrays(sampled, tree.plan, encoded && new Set(encoded.keys()), alloc);
    const emb = tf.tidy(() => this.gnn.forward(tree.plan, arrays, false, encoded).embedding);
    try {
      if (!into) return emb.dataSync() as Float32Array;
      copyOut(emb, into.out, into.offset);
      return into.out.subarray(into.offset, into.offset + emb.size);
    } finally {
      emb.dispose();
    }
  }

  dispose(): void {
    this.params.dispose();
  }
}
