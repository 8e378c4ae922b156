/**
 * The recommender's training step over worker threads. A step scores B users against M candidate items
 * (M up to 4,096 for B = 512). Each candidate's sampled tree (articles → transactions → customers) holds
 * ~8× the rows of a user's, so data parallelism over users, as the other tasks train, would compute the
 * whole item tower on every worker; here the *items* are split instead:
 *
 * 1. each worker samples the trees of its share of the candidates and runs the item tower forward,
 *    writes the embeddings g_w into shared memory, posts `ready` and waits (Atomics.wait), its gradient
 *    tape still open;
 * 2. meanwhile this thread builds the candidates and samples and gathers the user trees; once every share
 *    is ready it computes the loss (user tower, item ID vectors, scores, sampled softmax) with the item
 *    embeddings as a variable, which gives the gradients of the user tower and the head and ∂L/∂g;
 * 3. it writes each worker's rows of ∂L/∂g into shared memory and wakes them; each worker closes its tape
 *    with Σ g_w ⊙ ∂L/∂g_w, whose gradient is its share's contribution through the item tower
 *    (the chain rule, without computing the forward twice), and replies with it.
 *
 * While this thread computes the loss the workers would idle, blocked: so each step publishes the next
 * step's shares in shared memory, and a blocked worker samples and gathers its next item trees before it
 * goes back to waiting (the trees do not depend on the weights). The steps to come are planned (their
 * candidates built) while this thread waits for the workers' gradients, where it would idle.
 *
 * At `medium` (after the fused loss, fused.ts `rankingSoftmax`) a step's phases are about: the workers'
 * item trees ~100 ms (now prepared ahead), their forward ~70 ms and backward ~130 ms each on half the items;
 * this thread's loss ~200 ms (user tower, [B × M] scores, softmax); so the two cores take turns more
 * than they overlap, and an epoch is ~1.4× the one-thread step's speed, not 2×.
 *
 * The gradients add up to the one-thread step's (the same function; tested to float rounding when the
 * trees are deterministic). The draws differ: each share's trees are sampled with its own seed, so, as in
 * the other tasks' data-parallel training, a run's numbers depend on the number of workers.
 */
import { fileURLToPath } from 'node:url';
import { tf } from '../core/tf.js';
import type { BackendRequest } from '../compute/backend.js';
import { warn } from '../core/log.js';
import { Rng } from '../core/rng.js';
import { sharedArray } from '../core/shared_memory.js';
import { compiledWorker, WorkerRpc } from '../core/worker_rpc.js';
import type { Graph } from '../graph/graph.js';
import type { DeepModel } from '../model/deep_model.js';
import type { FeatureSpec } from '../model/features.js';
import type { ModelSpec } from '../model/hetero_gnn.js';
import type { Examples } from '../task/task_spec.js';
import { stepInputs, stepLoss, type StepInputs, type StepResult } from './ranking_step.js';

export interface RankingWorkerInit {
  graph: ReturnType<Graph['shareable']>;
  spec: ModelSpec;
  featureSpec: FeatureSpec;
  backend: BackendRequest;
}

/** A worker's share of a step's candidates, and the shared memory the two sides meet in. */
export interface ItemShare {
  /** the step's number: a share the worker prepared under this number is this one */
  seq: number;
  /** the trainer's weights (shared; read before the forward) */
  weights: Float32Array;
  items: Int32Array;
  anchor: number;
  seed: number;
  /** [items × C]: the worker writes its item embeddings here */
  g: Float32Array;
  /** [items × C]: the trainer writes ∂L/∂g of these items here */
  dg: Float32Array;
  /** [0]: WAIT, then GO (dg is written) or ABORT (the trainer's step failed); [1]: the seq of the last next share published in `nextMeta`/`nextItems` */
  flag: Int32Array;
  /** the next step's share, published while this one waits: `nextMeta` [seq, anchor, seed, items], then `nextItems` */
  nextMeta: Float64Array;
  nextItems: Int32Array;
}

export const WAIT = 0;
export const GO = 1;
export const ABORT = 2;

/** Initial room for a published next share's items (grown, for the steps after, when a share is larger). */
const NEXT_CAPACITY = 8192;

type Reply = { id: number; error?: string; grads?: Float32Array; timing?: { sample: number; gather: number } };

/** The compiled worker script, also when gnnctl runs from its TypeScript sources (tests). */
export function rankingWorkerScript(): string | null {
  return compiledWorker(fileURLToPath(import.meta.url), 'ranking_worker.js');
}

/** Per worker: the shared buffers of its share, grown when a step's share is larger. */
interface Channel {
  g: Float32Array;
  dg: Float32Array;
  flag: Int32Array;
  nextMeta: Float64Array;
  nextItems: Int32Array;
}

/** A step's inputs with its shares: bounds into the candidates, a seed each. */
interface Planned {
  seq: number;
  rows: Int32Array;
  inputs: StepInputs;
  bounds: number[];
  seeds: number[];
}

export class ItemSplitEngine {
  /** per worker: resolves the current step's wait for its item embeddings */
  private readonly ready: ((() => void) | null)[];
  private weights: Float32Array | null = null;
  private readonly channels: Channel[];
  private seq = 0;
  /** steps to come, planned during earlier ones (by their rows) */
  private readonly planned = new Map<Int32Array, Planned>();

  private constructor(
    private readonly rpc: WorkerRpc<Reply>,
    private readonly model: DeepModel,
    private readonly train: Examples,
    private readonly nItems: number,
    private readonly pop: (a: number) => Float32Array,
  ) {
    this.channels = rpc.workers.map(() => ({
      g: new Float32Array(0),
      dg: new Float32Array(0),
      flag: sharedArray(Int32Array, 2),
      nextMeta: sharedArray(Float64Array, 4),
      nextItems: sharedArray(Int32Array, NEXT_CAPACITY),
    }));
    this.ready = rpc.workers.map(() => null);
  }

  get workers(): number {
    return this.rpc.size;
  }

  /** Starts `n` workers, or returns null (with a warning) when the compiled worker script is missing. */
  static async start(n: number, model: DeepModel, train: Examples, nItems: number, pop: (a: number) => Float32Array, backend: BackendRequest): Promise<ItemSplitEngine | null> {
    const script = rankingWorkerScript();
    if (!script) {
      warn('training the recommender over worker threads needs the compiled worker (npm run build); training on one thread');
      return null;
    }
    let engine: ItemSplitEngine | null = null;
    const rpc = new WorkerRpc<Reply>(script, n, (msg, w) => {
      if (msg.event === 'ready') engine?.ready[rpc.workers.indexOf(w)]?.();
    });
    engine = new ItemSplitEngine(rpc, model, train, nItems, pop);
    try {
      const init: RankingWorkerInit = { graph: model.graph.shareable(), spec: model.spec, featureSpec: model.featureSpec, backend };
      await Promise.all(rpc.workers.map((w) => rpc.call(w, { type: 'init', init })));
    } catch (e) {
      await rpc.close();
      throw e;
    }
    return engine;
  }

  /**
   * The gradient of the step's loss at `weights` (which this thread's model already holds). `rng` draws
   * the candidates and the user trees, then one seed per item share. `upcoming`: the next steps' rows and
   * generators (two are used): planned ahead with the same draws as when they come, so the workers can
   * prepare their trees.
   */
  async step(weights: Float32Array, rows: Int32Array, rng: Rng, vars: tf.Variable[], upcoming: { rows: Int32Array; rng: Rng }[] = []): Promise<StepResult> {
    const model = this.model;
    const C = model.spec.channels;
    const w = this.share(weights);
    let t = performance.now();
    const plan = this.planned.get(rows) ?? this.plan(rows, rng);
    this.planned.delete(rows);
    let planning = performance.now() - t;
    const { inputs, bounds } = plan;
    const M = inputs.items.length;
    const n = bounds.length - 1;
    const calls = this.rpc.workers.slice(0, n).map((worker, i) => {
      const ch = this.channel(i, (bounds[i + 1]! - bounds[i]!) * C);
      Atomics.store(ch.flag, 0, WAIT);
      const share: ItemShare = {
        seq: plan.seq,
        weights: w,
        items: inputs.items.slice(bounds[i], bounds[i + 1]),
        anchor: inputs.anchor,
        seed: plan.seeds[i]!,
        g: ch.g,
        dg: ch.dg,
        flag: ch.flag,
        nextMeta: ch.nextMeta,
        nextItems: ch.nextItems,
      };
      const ready = new Promise<void>((resolve) => (this.ready[i] = resolve));
      const reply = this.rpc.call(worker, { type: 'items', share });
      return { ready, reply };
    });
    const next = upcoming[0] && this.planned.get(upcoming[0].rows);
    if (next) this.publish(next);
    const released = { done: false };
    const release = (flag: number): void => {
      if (released.done) return;
      released.done = true;
      for (const ch of this.channels) {
        Atomics.store(ch.flag, 0, flag);
        Atomics.notify(ch.flag, 0);
      }
    };
    try {
      // The user side while the workers run the item tower.
      t = performance.now();
      const userArrays = model.arrays(inputs.userSample);
      const gather = performance.now() - t;
      t = performance.now();
      // A worker that fails before it is ready replies with its error: do not wait for it forever.
      await Promise.all(calls.map((c) => Promise.race([c.ready, c.reply.then(() => Promise.reject(new Error('a recommender worker replied before its item embeddings were ready')))])));
      const g = new Float32Array(M * C);
      calls.forEach((_, i) => g.set(this.channels[i]!.g.subarray(0, (bounds[i + 1]! - bounds[i]!) * C), bounds[i]! * C));
      const gVar = tf.variable(tf.tensor2d(g, [M, C]), true);
      let loss: number;
      let blob: Float32Array;
      try {
        const { value, grads } = tf.variableGrads(() => stepLoss(model, inputs, userArrays, () => gVar), [...vars, gVar]);
        loss = value.dataSync()[0]!;
        value.dispose();
        const dg = grads[gVar.name]!.dataSync() as Float32Array;
        calls.forEach((_, i) => this.channels[i]!.dg.set(dg.subarray(bounds[i]! * C, bounds[i + 1]! * C)));
        release(GO);
        blob = model.params.gradientBlob(grads);
        for (const x of Object.values(grads)) x.dispose();
      } finally {
        gVar.dispose();
      }
      // While the workers run the item tower backward: plan the steps to come.
      const t1 = performance.now();
      for (const u of upcoming.slice(0, 2)) if (!this.planned.has(u.rows)) this.planned.set(u.rows, this.plan(u.rows, u.rng));
      planning += performance.now() - t1;
      const replies = await Promise.all(calls.map((c) => c.reply));
      for (const r of replies) {
        const gw = r.grads!;
        for (let k = 0; k < gw.length; k++) blob[k]! += gw[k]!;
      }
      return { loss, count: rows.length, grads: blob, timing: { sample: inputs.ms + planning, gather, step: performance.now() - t } };
    } catch (e) {
      this.planned.clear();
      release(ABORT);
      await Promise.allSettled(calls.map((c) => c.reply));
      throw e;
    } finally {
      this.ready.fill(null);
    }
  }

  /** A step's inputs and its shares (one per worker; fewer when there are fewer candidates than workers). */
  private plan(rows: Int32Array, rng: Rng): Planned {
    const inputs = stepInputs(this.model, this.train, rows, this.nItems, this.pop, rng);
    const M = inputs.items.length;
    const n = Math.min(this.rpc.size, M);
    const bounds = Array.from({ length: n + 1 }, (_, i) => Math.floor((M * i) / n));
    return { seq: ++this.seq, rows, inputs, bounds, seeds: bounds.slice(1).map(() => rng.nextU32()) };
  }

  /**
   * Writes each worker's share of `p` where a worker blocked in the current step reads it, and wakes it.
   * A share larger than the buffer is not published (that worker samples it when the step comes) and
   * the buffer grows for the steps after.
   */
  private publish(p: Planned): void {
    p.bounds.slice(1).forEach((hi, i) => {
      const lo = p.bounds[i]!;
      const ch = this.channels[i]!;
      if (hi - lo > ch.nextItems.length) {
        ch.nextItems = sharedArray(Int32Array, 2 * (hi - lo));
        return;
      }
      ch.nextItems.set(p.inputs.items.subarray(lo, hi));
      ch.nextMeta.set([p.seq, p.inputs.anchor, p.seeds[i]!, hi - lo]);
      // Stored after the share (Atomics order the writes before it), then the worker is woken to read it.
      Atomics.store(ch.flag, 1, p.seq);
      Atomics.notify(ch.flag, 0);
    });
  }

  /** `weights` in the shared blob the workers read (they read it only during a step, which has ended). */
  private share(weights: Float32Array): Float32Array {
    if (this.weights?.length !== weights.length) this.weights = sharedArray(Float32Array, weights.length);
    this.weights.set(weights);
    return this.weights;
  }

  /** Worker i's buffers, at least `size` floats each. */
  private channel(i: number, size: number): Channel {
    const ch = this.channels[i]!;
    if (ch.g.length < size) {
      ch.g = sharedArray(Float32Array, size);
      ch.dg = sharedArray(Float32Array, size);
    }
    return ch;
  }

  async close(): Promise<void> {
    await this.rpc.close();
  }
}
