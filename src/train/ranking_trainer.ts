/**
 * Training of the deep recommender (model/context_gnn.ts) for ranking tasks: batches of users that share
 * an anchor, so one candidate set and one item tree batch serve the whole batch; each step's candidates
 * and loss are ranking_step.ts's; MAP@k on the validation anchor after each epoch with exact top-k over
 * the whole catalogue; early stopping; the best checkpoint saved at every improvement; and the simple
 * heuristics (train/ranking_heuristics.ts) on the same validation and test users. Seen items are dropped
 * from the model's lists and the heuristics' alike when the run's seen-items decision says so.
 *
 * With `workers` > 1 each step's item tower is split over worker threads (ranking_engine.ts); with one,
 * or without the compiled worker, the step runs on this thread.
 */
import { tf } from '../core/tf.js';
import { saveWeights } from '../artifacts/run_store.js';
import { info } from '../core/log.js';
import { Progress, formatRate } from '../core/progress.js';
import { Rng } from '../core/rng.js';
import { EarlyStopping, SCORE_NOISE_DELTA } from '../core/early_stopping.js';
import type { DeepModel } from '../model/deep_model.js';
import { FlatAdam } from '../model/optim.js';
import { catalogueKernel, popularityCache, rankCatalogueOnnx, userHistories } from '../model/context_gnn.js';
import { rankingMetrics, type RankingMetrics } from '../task/metrics.js';
import type { Examples } from '../task/task_spec.js';
import { EpochTally, type EpochRecord } from './loop.js';
import type { RankingBaseline } from './ranking_baselines.js';
import { rankingHeuristics, seenDecision, SEEN_MARGIN, type ExcludeSeenSetting, type HeuristicsRecord, type SeenDecision } from './ranking_heuristics.js';
import { interactionCsr } from './ranking_baselines.js';
import { seenItems, unseen } from './ranking_affinity.js';
import { ItemSplitEngine } from './ranking_engine.js';
import { fitReranker, type ModelTopN, type RerankRecord } from './rerank.js';
import { judgeRanking, type RankingChoiceRecord, type RankingIntervalsRecord, type ServedChoice } from './ranking_choice.js';
import { localStep } from './ranking_step.js';
import type { BackendRequest } from '../compute/backend.js';


export interface RankingLoopOptions {
  epochs: number;
  batchSize: number;
  patience: number;
  maxSteps?: number;
  lr: number;
  /** threads for the steps (default 1: this one); more split each step's item tower over workers */
  workers?: number;
  /** the workers' TF.js backend (default auto) */
  backend?: BackendRequest;
  /** rank.exclude_seen (default auto: learned from the training windows' repeat rate) */
  excludeSeen?: ExcludeSeenSetting;
  /** fit the learned re-ranker over the heuristics' and the model's candidates (train/rerank.ts; default true) */
  rerank?: boolean;
}

export interface RankingFit {
  /** threads the steps ran on (1 when the workers could not start) */
  workers: number;
  best: Float32Array;
  bestEpoch: number;
  epochs: EpochRecord[];
  val: RankingMetrics;
  test: RankingMetrics;
  baselines: Record<RankingBaseline, { val: RankingMetrics; test: RankingMetrics }>;
  /** the baseline with the best validation MAP@k (what a user would have deployed instead) */
  best_baseline: RankingBaseline;
  /** each heuristic's choices on validation and the seen-items decision */
  heuristics: HeuristicsRecord;
  /** the re-ranker over the heuristics' and the model's candidates, null when not fitted */
  reranker: RerankRecord | null;
  /** what is served (train/ranking_choice.ts) */
  chosen: ServedChoice;
  chosen_reason: string;
  choice: RankingChoiceRecord;
  intervals: RankingIntervalsRecord;
}

/** Trains, then evaluates the best checkpoint and the baselines on val and test. */
export async function fitRanking(model: DeepModel, data: { train: Examples; val: Examples; test: Examples }, mc: RankingLoopOptions, seed: number, stop: { requested: boolean }, runDir: string): Promise<RankingFit> {
  const rs = model.spec.ranking!;
  const k = rs.top_k;
  const pop = popularityCache(model.graph, rs);
  const rng = new Rng(seed);
  const { index, blob: weights } = model.params.serialize();
  const optimizer = new FlatAdam(weights.length, mc.lr);
  const vars = [...model.params.vars.values()];
  const nItems = model.graph.tables[rs.item_table]!.rows;
  const seen = seenDecision(model.graph, rs, data.train, mc.excludeSeen ?? 'auto');
  info(`train: ${seen.reason}`);

  // Examples grouped by anchor: a batch never mixes anchors.
  const byAnchor = groups(data.train);
  const records: EpochRecord[] = [];
  let best = weights.slice();
  const stopping = new EarlyStopping({ monitor: `val map@${k}`, patience: mc.patience, min_delta: SCORE_NOISE_DELTA });
  /** the best epoch's validation metrics: the final evaluation reuses them (same weights, deterministic trees) */
  let bestVal: { metrics: RankingMetrics; ranked: Int32Array } | null = null;
  const progress = new Progress();
  const engine = (mc.workers ?? 1) > 1 ? await ItemSplitEngine.start(mc.workers!, model, data.train, nItems, pop, mc.backend ?? 'auto') : null;
  if (engine) info(`train: each step's item tower split over ${engine.workers} worker threads`);
  try {
    for (let epoch = 0; epoch < mc.epochs && !stop.requested; epoch++) {
      const batches: Int32Array[] = [];
      for (const rows of byAnchor.values()) {
        const order = rng.shuffle(Int32Array.from(rows));
        for (let s = 0; s < order.length; s += mc.batchSize) batches.push(order.subarray(s, s + mc.batchSize));
      }
      rng.shuffle(batches);
      const steps = Math.min(batches.length, mc.maxSteps ?? Infinity);
      const tally = new EpochTally();
      progress.begin(`epoch ${epoch + 1}/${mc.epochs}`, batches.slice(0, steps).reduce((a, b) => a + b.length, 0));
      // The steps' generators, drawn up front (the same sequence of draws as one at each step), so the
      // engine can plan the steps to come.
      const stepRngs = Array.from({ length: steps }, () => new Rng(rng.nextU32()));
      for (let s = 0; s < steps && !stop.requested; s++) {
        model.params.assignBlob(weights);
        const upcoming = [1, 2].filter((k) => s + k < steps).map((k) => ({ rows: batches[s + k]!, rng: stepRngs[s + k]! }));
        const r = engine ? await engine.step(weights, batches[s]!, stepRngs[s]!, vars, upcoming) : localStep(model, data.train, batches[s]!, nItems, pop, stepRngs[s]!, vars);
        optimizer.update(weights, r.grads);
        tally.add(r);
        progress.update(tally.seen, `loss ${tally.meanLoss().toFixed(4)}`);
        // Ctrl-C (SIGINT) is delivered on the event loop.
        await new Promise((resolve) => setImmediate(resolve));
      }
      const seconds = tally.seconds();
      if (tally.seen === 0) break;
      model.params.assignBlob(weights);
      const evaluated = await evaluateLists(model, data.val, k, pop, `epoch ${epoch + 1}/${mc.epochs} validation`, seen);
      const val = evaluated.metrics;
      const record = tally.record(epoch + 1, val, seconds);
      records.push(record);
      const step = stopping.update(val.map_at_k)!;
      progress.end(`epoch ${epoch + 1}/${mc.epochs}: loss ${record.loss.toFixed(4)}, val map@${k} ${val.map_at_k.toFixed(4)}${step.improved ? ' (best)' : ''}, ${formatRate(record.seeds_per_s)} users/s, ${record.seconds.toFixed(1)}s`);
      if (step.improved) {
        bestVal = evaluated;
        best = weights.slice();
        saveWeights(runDir, index, best);
      } else if (step.should_stop) {
        info(`early stopping: no val improvement for ${mc.patience} epoch(s)`);
        break;
      }
    }
  } finally {
    await engine?.close();
  }
  const bestEpoch = stopping.bestEpoch > 0 ? stopping.bestEpoch : -1;
  if (bestEpoch < 0) saveWeights(runDir, index, (best = weights.slice()));

  model.params.assignBlob(best);
  const val = bestVal ?? (await evaluateLists(model, data.val, k, pop, 'evaluation: validation', seen));
  const test = await evaluateLists(model, data.test, k, pop, 'evaluation: test', seen);
  const h = rankingHeuristics(model.graph, rs, data, seen);
  const rr = mc.rerank === false ? null : await fitReranker(model.graph, rs, data, h.record, h.best_baseline, modelTopN(model, pop), seed, runDir);
  const lists = { model: { val: val.ranked, test: test.ranked }, ...h.lists, ...(rr ? { reranker: rr.lists } : {}) };
  const judged = judgeRanking(data, lists, h.best_baseline, k, seed, rr?.judge);
  return { workers: engine?.workers ?? 1, best, bestEpoch, epochs: records, val: val.metrics, test: test.metrics, baselines: h.baselines, best_baseline: h.best_baseline, heuristics: h.record, reranker: rr?.record ?? null, ...judged };
}

/**
 * The model's top-n over the whole catalogue for users at one anchor, by the formula `evaluate` ranks with
 * (sampled trees with the most recent neighbours): the re-ranker's model source in training and predict.
 */
export function modelTopN(model: DeepModel, pop: (anchor: number) => Float32Array): ModelTopN {
  // The catalogue side of the last anchor: predict asks chunk by chunk at one anchor.
  let cached: { anchor: number; items: Float32Array } | null = null;
  return async (users, anchor, n) => {
    const rs = model.spec.ranking!;
    const C = model.spec.channels;
    if (cached?.anchor !== anchor) cached = { anchor, items: catalogueVectors(model, anchor) };
    const items = cached.items;
    const kernel = await catalogueKernel(items, pop(anchor), items.length / C, C, n);
    const ids = new Int32Array(users.length * n).fill(-1);
    const scores = new Float32Array(users.length * n).fill(Number.NaN);
    try {
      for (let lo = 0; lo < users.length; lo += EVAL_CHUNK) {
        const chunk = users.subarray(lo, lo + EVAL_CHUNK);
        const histories = userHistories(model.graph, rs, chunk, new Float64Array(chunk.length).fill(anchor), pop);
        const r = await rankCatalogueOnnx(model.ranking!, kernel, userVectors(model, chunk, anchor), histories, n);
        // A catalogue smaller than n gives shorter lists.
        const w = r.ids.length / chunk.length;
        for (let j = 0; j < chunk.length; j++) {
          ids.set(r.ids.subarray(j * w, (j + 1) * w), (lo + j) * n);
          scores.set(r.scores.subarray(j * w, (j + 1) * w), (lo + j) * n);
        }
      }
    } finally {
      await kernel.release();
    }
    return { ids, scores };
  };
}

/** e_i at an anchor for the whole catalogue [N × C], from sampled trees with the deterministic (most recent) neighbours. */
export function catalogueVectors(model: DeepModel, anchor: number, chunk = 4096): Float32Array {
  const rs = model.spec.ranking!;
  const C = model.spec.channels;
  const N = model.graph.tables[rs.item_table]!.rows;
  const out = new Float32Array(N * C);
  for (let lo = 0; lo < N; lo += chunk) {
    const hi = Math.min(N, lo + chunk);
    const items = Int32Array.from({ length: hi - lo }, (_, i) => lo + i);
    const arrays = model.batch(items, new Float64Array(hi - lo).fill(anchor), null, model.itemPlan!, model.itemSampler!);
    const e = tf.tidy(() => model.ranking!.itemEmbeddings(model.gnn.forward(model.itemPlan!, arrays, false).embedding, items));
    out.set(e.dataSync() as Float32Array, lo * C);
    e.dispose();
  }
  return out;
}

/** h_u of users at one anchor [n × C] (sampled trees, most recent neighbours). */
function userVectors(model: DeepModel, users: Int32Array, anchor: number, chunk = 2048): Float32Array {
  const C = model.spec.channels;
  const out = new Float32Array(users.length * C);
  for (let lo = 0; lo < users.length; lo += chunk) {
    const hi = Math.min(users.length, lo + chunk);
    const arrays = model.batch(users.subarray(lo, hi), new Float64Array(hi - lo).fill(anchor), null);
    const h = tf.tidy(() => model.gnn.forward(model.plan, arrays, false).embedding);
    out.set(h.dataSync() as Float32Array, lo * C);
    h.dispose();
  }
  return out;
}

/**
 * Examples' indices per anchor, in example order (val and test have one anchor each; the train split
 * several). Linear: copying the list at every example (as this once did) never finished on `large`'s
 * millions of training users.
 */
export function groups(ex: Pick<Examples, 'anchors'>): Map<number, number[]> {
  const m = new Map<number, number[]>();
  for (let i = 0; i < ex.anchors.length; i++) {
    const a = ex.anchors[i]!;
    let list = m.get(a);
    if (!list) m.set(a, (list = []));
    list.push(i);
  }
  return m;
}

/** users per scoring chunk of `evaluate` (a progress line each) */
const EVAL_CHUNK = 16384;

/**
 * The model's top k for every example, over the whole catalogue, and its metrics. The catalogue side
 * [e_i, pop_i] goes into an onnxruntime session per anchor and each chunk of users is one MatMul + TopK on
 * every core (`rankCatalogueOnnx`, as `predict` ranks): with tfjs-wasm on one thread plus a JS scan, the
 * validation pass of one epoch at `large` (hundreds of thousands of users × 105k articles) ran for
 * minutes, printing nothing. `label` names the pass in the progress line.
 */
export async function evaluate(model: DeepModel, ex: Examples, k: number, pop: (a: number) => Float32Array, label = 'evaluation', seen?: SeenDecision): Promise<RankingMetrics> {
  return (await evaluateLists(model, ex, k, pop, label, seen)).metrics;
}

/** `evaluate`'s metrics and the top-k lists they were computed from (n × k, example order). */
export async function evaluateLists(model: DeepModel, ex: Examples, k: number, pop: (a: number) => Float32Array, label = 'evaluation', seen?: SeenDecision): Promise<{ metrics: RankingMetrics; ranked: Int32Array }> {
  const rs = model.spec.ranking!;
  const C = model.spec.channels;
  // With seen items excluded, a wider list is ranked and each user's seen items are dropped from it.
  const exclude = seen?.exclude ?? false;
  const wide = exclude ? k + SEEN_MARGIN : k;
  const g = exclude ? interactionCsr(model.graph, rs) : null;
  const ranked = new Int32Array(ex.nodes.length * k).fill(-1);
  const progress = new Progress();
  progress.begin(`${label}: top ${k} of the catalogue`, ex.nodes.length);
  let done = 0;
  for (const [anchor, idx] of groups(ex)) {
    const items = catalogueVectors(model, anchor);
    const kernel = await catalogueKernel(items, pop(anchor), items.length / C, C, wide);
    try {
      for (let lo = 0; lo < idx.length; lo += EVAL_CHUNK) {
        const rows = idx.slice(lo, lo + EVAL_CHUNK);
        const users = Int32Array.from(rows, (i) => ex.nodes[i]!);
        const histories = userHistories(model.graph, rs, users, new Float64Array(users.length).fill(anchor), pop);
        const { ids } = await rankCatalogueOnnx(model.ranking!, kernel, userVectors(model, users, anchor), histories, wide);
        rows.forEach((e, j) => ranked.set(g ? unseen(ids.subarray(j * wide, (j + 1) * wide), seenItems(g, users[j]!, anchor), k) : ids.subarray(j * k, (j + 1) * k), e * k));
        progress.update((done += rows.length));
      }
    } finally {
      await kernel.release();
    }
  }
  progress.end(`${label}: ${ex.nodes.length.toLocaleString('en-US')} users ranked`);
  return { metrics: rankingMetrics(ex.label_items!, ranked, k), ranked };
}
