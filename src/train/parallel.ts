/**
 * Data-parallel training over worker threads. TF.js's wasm backend computes on one thread, so a
 * 2-core machine leaves a core idle; here each worker holds its own TF.js instance and model replica,
 * reads the graph and the examples through SharedArrayBuffers (no copy), and computes the gradients of
 * its share of each batch. The trainer averages them (weighted by rows), updates the one weight blob and
 * the next step starts. The weights reach the workers through one SharedArrayBuffer (copied in once per
 * step, read by each worker before it computes), the gradients come back as transferred buffers, and the
 * row shares travel as copies of their few hundred ids: a message never carries more than it needs (a
 * subarray of the shuffled order posts its whole buffer, a plain weight blob is cloned per worker: ~4 MB
 * per step at medium).
 *
 * Results are deterministic for a given number of workers (each share is sampled with a seed derived
 * from the step and the worker index); they differ between worker counts, as batch splits do anywhere.
 */
import { fileURLToPath } from 'node:url';
import type { BackendRequest } from '../compute/backend.js';
import type { Graph } from '../graph/graph.js';
import { warn } from '../core/log.js';
import { compiledWorker, WorkerRpc } from '../core/worker_rpc.js';
import { predictOnWorkers, type EngineData, type GradientEngine, type StepResult } from './engine.js';
import type { Examples } from '../task/task_spec.js';
import type { FeatureSpec } from '../model/features.js';
import type { ModelSpec } from '../model/hetero_gnn.js';
import { shared } from '../core/shared_memory.js';

export interface WorkerInit {
  graph: ReturnType<Graph['shareable']>;
  spec: ModelSpec;
  featureSpec: FeatureSpec;
  data: EngineData;
  backend: BackendRequest;
  index: number;
}

type Reply = { id: number; error?: string } & Partial<StepResult> & { out?: Float32Array };

/** The compiled worker script, also when gnnctl runs from its TypeScript sources (tests). */
export function workerScript(): string | null {
  return compiledWorker(fileURLToPath(import.meta.url), 'train_worker.js');
}

function sharedExamples(e: Examples): Examples {
  return { nodes: shared(e.nodes), anchors: shared(e.anchors), labels: shared(e.labels) };
}

/** The sampling seed of worker i's share of a step. */
function shareSeed(rngSeed: number, i: number): number {
  return (rngSeed * 31 + i) >>> 0;
}

export class WorkerEngine implements GradientEngine {
  /** the weights the workers read, shared (allocated on the first call) */
  private shared: Float32Array | null = null;

  private constructor(
    private readonly rpc: WorkerRpc<Reply>,
    private readonly data: EngineData,
  ) {}

  /**
   * `weights` in the shared blob. Safe to overwrite here: the workers read it only while handling a step or
   * predict message, and every such message has been answered before the caller changes the weights.
   */
  private share(weights: Float32Array): Float32Array {
    if (this.shared?.length !== weights.length) this.shared = new Float32Array(new SharedArrayBuffer(weights.length * 4));
    this.shared.set(weights);
    return this.shared;
  }

  get workers(): number {
    return this.rpc.size;
  }

  /** Starts `n` workers, or returns null (with a warning) when the compiled worker script is missing. */
  static async start(n: number, graph: Graph, spec: ModelSpec, featureSpec: FeatureSpec, data: EngineData, backend: BackendRequest): Promise<WorkerEngine | null> {
    const script = workerScript();
    if (!script) {
      warn('data-parallel training needs the compiled worker (npm run build); training on one thread');
      return null;
    }
    const sharedData: EngineData = { train: sharedExamples(data.train), val: sharedExamples(data.val), test: sharedExamples(data.test) };
    const engine = new WorkerEngine(new WorkerRpc<Reply>(script, n), sharedData);
    await Promise.all(engine.rpc.workers.map((w, index) => engine.rpc.call(w, { type: 'init', init: { graph: graph.shareable(), spec, featureSpec, data: sharedData, backend, index } satisfies WorkerInit })));
    return engine;
  }

  async step(weights: Float32Array, rows: Int32Array, rngSeed: number, next?: { rows: Int32Array; rngSeed: number }): Promise<StepResult> {
    const parts = this.shares(rows);
    const nextParts = next ? this.shares(next.rows) : null;
    const w = this.share(weights);
    // Each worker gets its share of the next step too: it samples and gathers it while we update the weights.
    const replies = await Promise.all(
      this.rpc.workers.map((worker, i) =>
        parts[i]!.length
          ? this.rpc.call(worker, { type: 'step', weights: w, rows: parts[i], rngSeed: shareSeed(rngSeed, i), next: nextParts ? { rows: nextParts[i], rngSeed: shareSeed(next!.rngSeed, i) } : undefined })
          : null,
      ),
    );
    const grads = new Float32Array(weights.length);
    let loss = 0;
    const timing = { sample: 0, gather: 0, step: 0 };
    for (const r of replies) {
      if (!r) continue;
      const share = r.count! / rows.length;
      loss += r.loss! * share;
      const g = r.grads!;
      for (let k = 0; k < g.length; k++) grads[k]! += g[k]! * share;
      // Workers run side by side: the step takes as long as the slowest.
      timing.sample = Math.max(timing.sample, r.timing!.sample);
      timing.gather = Math.max(timing.gather, r.timing!.gather);
      timing.step = Math.max(timing.step, r.timing!.step);
    }
    return { loss, count: rows.length, grads, timing };
  }

  /** The workers' contiguous shares of a batch, as copies (a subarray would post its whole buffer). */
  private shares(rows: Int32Array): Int32Array[] {
    const n = this.rpc.size;
    return this.rpc.workers.map((_, i) => rows.slice(Math.floor((rows.length * i) / n), Math.floor((rows.length * (i + 1)) / n)));
  }

  /** Chunks handed out from one queue: a worker slowed by another process on its core takes fewer. */
  async predict(weights: Float32Array, split: 'val' | 'test', seed: number, onProgress?: (done: number) => void): Promise<Float32Array> {
    const shared = this.share(weights);
    return predictOnWorkers(
      this.rpc.workers,
      this.data[split].nodes.length,
      seed,
      async (w, lo, hi, chunk) => (await this.rpc.call(w, { type: 'predict', weights: shared, split, lo, hi, seed: chunk })).out!,
      onProgress,
    );
  }

  async close(): Promise<void> {
    await this.rpc.close();
  }
}
