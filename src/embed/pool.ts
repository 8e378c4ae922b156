/**
 * Embedding over worker threads. TF.js's wasm backend computes on one thread, so `embed` on a 2-core
 * machine left a core idle (the PyTorch reference uses both). Each worker holds its own TF.js instance
 * and a copy of the model's weights, and reads the graph through its SharedArrayBuffers (no copy, as
 * data-parallel training does); the main thread posts the pieces of each chunk round-robin as soon as
 * the chunk starts, and writes the previous chunk while they compute.
 *
 * The outputs are those of the single-thread code, whatever the number of workers:
 * - exact: an entity's layer-wise embedding depends only on its own neighbourhood, so a chunk splits
 *   into parts freely;
 * - sampled: a chunk is one seeded stream of `SAMPLED_BATCH`-entity batches (`DeepModel.embedSampled`). A worker
 *   given batch b replays the sampling of the batches before it that it did not compute (cheap: no
 *   features, no TF.js), so its random draws are the ones the single-thread loop would have made (a
 *   worker's batches come in increasing order). With
 *   `last` sampling nothing is drawn and nothing is replayed.
 */
import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import type { BackendName, BackendRequest } from '../compute/backend.js';
import type { Graph } from '../graph/graph.js';
import { SAMPLED_BATCH, type DeepModel } from '../model/deep_model.js';
import type { FeatureSpec } from '../model/features.js';
import type { ModelSpec } from '../model/hetero_gnn.js';
import { warn } from '../core/log.js';
import { compiledWorker, WorkerRpc } from '../core/worker_rpc.js';
import type { Examples } from '../task/task_spec.js';
import { predictOnWorkers } from '../train/engine.js';
import { shared, sharedArray } from '../core/shared_memory.js';

export interface EmbedWorkerInit {
  graph: ReturnType<Graph['shareable']>;
  spec: ModelSpec;
  featureSpec: FeatureSpec;
  weights: Float32Array;
  backend: BackendRequest;
  /** sampled jobs to come: the worker builds their sampling tree and static encodings while it starts */
  prepare?: SampledPrepare;
}

/** The table, depth and entity count of the sampled jobs a pool is started for. */
export interface SampledPrepare {
  table: string;
  depth: number;
  seeds: number;
}

/** What one piece of work asks a worker for. */
export type EmbedTask =
  | { kind: 'exact'; table: string; depth: number; nodes: Int32Array; anchor: number; degreeCap: number }
  | { kind: 'sampled'; job: number; table: string; depth: number; nodes: Int32Array; anchor: number; seed: number; batchSize: number; batch: number; out: Float32Array }
  | { kind: 'predict'; nodes: Int32Array; anchors: Float64Array; seed: number };

type Reply = { id: number; error?: string; out?: Float32Array };

export { SAMPLED_BATCH };

/**
 * Entities per exact-mode part. A part's layer-wise tensors are [its transactions × channels]: a 32,768-
 * customer part at `medium` (~650k transactions) grew each worker's wasm heap to ~0.5 GB, and `gnnctl
 * embed --mode exact` peaked at 1.45 GB; with parts of 8,192 it peaks at 1.05 GB, about as fast.
 */
export const EXACT_PART = 8192;

/** The compiled worker script, also when gnnctl runs from its TypeScript sources (tests). */
export function embedWorkerScript(): string | null {
  return compiledWorker(fileURLToPath(import.meta.url), 'embed_worker.js');
}

/** Workers for `auto`: 2 on a machine with 2+ cores when the backend computes on one thread (wasm, cpu). */
export function embedWorkers(requested: number | 'auto' | undefined, backend: BackendName): number {
  if (requested !== undefined && requested !== 'auto') return requested;
  return availableParallelism() >= 2 && (backend === 'wasm' || backend === 'cpu') ? 2 : 1;
}

export class EmbedPool {
  private nextJob = 1;

  private constructor(private readonly rpc: WorkerRpc<Reply>) {}

  get workers(): number {
    return this.rpc.size;
  }

  /**
   * Starts `n` workers holding `model`'s weights, or returns null (with a warning) when the compiled worker
   * script is missing. `prepare`: the sampled jobs to come, whose sampling tree and static encodings the
   * workers then build as they start (which the caller overlaps with its own work) instead of in the first job.
   */
  static async start(n: number, model: DeepModel, backend: BackendRequest, prepare?: SampledPrepare): Promise<EmbedPool | null> {
    const script = embedWorkerScript();
    if (!script) {
      warn('embedding over worker threads needs the compiled worker (npm run build); embedding on one thread');
      return null;
    }
    const weights = model.params.serialize().blob;
    const pool = new EmbedPool(new WorkerRpc<Reply>(script, n));
    try {
      const init: EmbedWorkerInit = { graph: model.graph.shareable(), spec: model.spec, featureSpec: model.featureSpec, weights, backend, ...(prepare ? { prepare } : {}) };
      await Promise.all(pool.rpc.workers.map((w) => pool.rpc.call(w, { type: 'init', init })));
    } catch (e) {
      await pool.close();
      throw e;
    }
    return pool;
  }

  /**
   * Runs `tasks` over the workers, outputs in task order. Every task is posted at once, round-robin, so a
   * worker goes from one task to its next without this thread: handed out from a queue here, they would
   * idle while this thread writes the previous chunk's Parquet row group (exact compute 2.5× as long in
   * the embed command as in a loop that only computes).
   */
  private async run(tasks: EmbedTask[]): Promise<Float32Array[]> {
    const replies = tasks.map((task, k) => this.rpc.call(this.rpc.workers[k % this.rpc.size]!, { type: 'embed', task }));
    return (await Promise.all(replies)).map((r) => r.out ?? new Float32Array(0));
  }

  /**
   * `embedExact` of `nodes`: one part per worker, or parts of at most `EXACT_PART` entities when the chunk
   * is larger, as many for each worker (a worker computes its parts one after another). Each part
   * re-encodes the articles etc. it touches, so parts are no smaller than they need to be.
   */
  async exact(table: string, depth: number, nodes: Int32Array, anchor: number, degreeCap: number, channels: number): Promise<Float32Array> {
    // A multiple of the workers: 5 parts on 2 workers leave one computing the fifth alone.
    const parts = Math.min(nodes.length, Math.ceil(Math.ceil(nodes.length / EXACT_PART) / this.rpc.size) * this.rpc.size);
    const bounds = Array.from({ length: parts + 1 }, (_, i) => Math.floor((nodes.length * i) / Math.max(1, parts)));
    const tasks: EmbedTask[] = bounds.slice(0, -1).map((lo, i) => ({ kind: 'exact', table, depth, nodes: nodes.slice(lo, bounds[i + 1]), anchor, degreeCap }));
    return concat(await this.run(tasks), nodes.length * channels);
  }

  /**
   * `DeepModel.embedSampled(table, depth, nodes, anchor, seed)`, one batch per task. The workers write
   * their batches straight into the chunk's output, in shared memory: no array per batch to post back, and
   * none to copy together here.
   */
  async sampled(table: string, depth: number, nodes: Int32Array, anchor: number, seed: number, channels: number): Promise<Float32Array> {
    const job = this.nextJob++;
    const all = shared(nodes);
    const out = sharedArray(Float32Array, nodes.length * channels);
    const tasks: EmbedTask[] = [];
    for (let b = 0; b * SAMPLED_BATCH < nodes.length; b++) tasks.push({ kind: 'sampled', job, table, depth, nodes: all, anchor, seed, batchSize: SAMPLED_BATCH, batch: b, out });
    await this.run(tasks);
    // Workers keep a job's sampling stream until told it is over. Not awaited: the message waits behind
    // the next chunk's tasks already queued on the workers (snapshot.ts queues chunks ahead).
    for (const w of this.rpc.workers) this.rpc.call(w, { type: 'done', job }).catch(() => {});
    return out;
  }

  /** The model's raw head outputs for examples: `predictInChunks`' numbers (train/engine.ts), its chunks over the workers. */
  async predictRaw(ex: Pick<Examples, 'nodes' | 'anchors'>, seed: number, onProgress?: (done: number) => void): Promise<Float32Array> {
    return predictOnWorkers(
      this.rpc.workers,
      ex.nodes.length,
      seed,
      async (w, lo, hi, chunk) => {
        const task: EmbedTask = { kind: 'predict', nodes: ex.nodes.slice(lo, hi), anchors: ex.anchors.slice(lo, hi), seed: chunk };
        return (await this.rpc.call(w, { type: 'embed', task })).out!;
      },
      onProgress,
    );
  }

  async close(): Promise<void> {
    await this.rpc.close();
  }
}

function concat(parts: Float32Array[], total: number): Float32Array {
  const out = new Float32Array(total);
  let o = 0;
  for (const p of parts) {
    out.set(p, o);
    o += p.length;
  }
  return out;
}
