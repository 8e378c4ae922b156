/**
 * The learned re-ranker of a ranking task, the standard strong recommender pattern: candidates from the
 * union of every heuristic's top-N list and the deep model's (train/rerank_candidates.ts), then a
 * LambdaMART ranker (model/gbdt's `lambdarank` loss, NDCG@k) over features of each (user, candidate) at
 * the anchor (train/rerank_features.ts) — each heuristic's rank and score, the model's, item popularity
 * and its trend, the user's history with the item and with its attribute values. It contains every
 * heuristic: a user's list can be any one of them, or a mix.
 *
 * Fitted on validation examples, not on the training anchors: there the deep model's rank and score are
 * in-sample (it fitted those very labels), the ranker learns to trust them, and the lead does not carry
 * to later anchors. `splitValidation` shares the validation examples out: the ranker fits on one part
 * (each window's items as labels), stops early on a second, and every list — heuristics, model,
 * re-ranker — is judged on the third, which neither model was fitted on (`judge`). Then it is evaluated
 * on every validation and test user. `RerankInputs` builds candidates and features for training and for
 * `predict` alike, so the served file scores what training recorded.
 */
import { join } from 'node:path';
import { existsSync, readFileSync } from 'node:fs';
import { writeJsonAtomic } from '../core/atomic.js';
import { ArtifactError } from '../core/errors.js';
import { info } from '../core/log.js';
import type { Graph } from '../graph/graph.js';
import type { RankingSpec } from '../model/context_gnn.js';
import { GbdtModel, type GbdtModelJSON, type GbdtParams } from '../model/gbdt/index.js';
import { meanInterval, perUserRanking, subset, subsetLists } from './ranking_intervals.js';
import { rankingMetrics, type RankingMetrics } from '../task/metrics.js';
import type { Examples } from '../task/task_spec.js';
import { seenItems, unseen } from './ranking_affinity.js';
import { RANKING_BASELINES, type RankingBaseline } from './ranking_baselines.js';
import { byAnchor, HeuristicLists, recordedParams, SEEN_MARGIN, type HeuristicParams, type HeuristicsRecord } from './ranking_heuristics.js';
import { candidateUnion, type Candidates, type SourceLists } from './rerank_candidates.js';
import { featureNames, rerankFeatures } from './rerank_features.js';

/** items each source lists per user (the union is bounded by RERANK_MAX_CANDIDATES) */
export const RERANK_SOURCE_WIDTH = 30;
/** candidates per user: keeps training rows and predict's scoring at users × 150 */
export const RERANK_MAX_CANDIDATES = 150;
/** examples the ranker fits on (an even stride; each brings up to 150 rows) */
const TRAIN_USERS = 4000;
/** examples the early stopping watches (an even stride) */
const STOP_USERS = 2000;
/** users scored per batch when evaluating (bounds the feature matrix's memory) */
const EVAL_CHUNK = 4000;
/**
 * Small trees, a slow rate and patient stopping: the validation users that stop it are few on small data
 * (76 at tiny), so one noisy round must not end the boosting.
 */
const GBDT: Partial<GbdtParams> = { loss: 'lambdarank', learning_rate: 0.05, max_iter: 300, max_leaf_nodes: 15, min_samples_leaf: 50, l2_regularization: 1, early_stopping_rounds: 40 };
export const RERANKER_FILE = 'reranker.json';

/** The deep model's top-n items (and scores) of users at one anchor, over the whole catalogue. */
export type ModelTopN = (users: Int32Array, anchor: number, n: number) => Promise<{ ids: Int32Array; scores: Float32Array }>;

/** What a run records about its re-ranker (`reranker` in metrics.json and --json). */
export interface RerankRecord {
  sources: string[];
  source_width: number;
  max_candidates: number;
  features: string[];
  /** validation examples (users at anchors) the ranker fitted on with a label among their candidates, and their candidate rows */
  train_users: number;
  train_rows: number;
  /** how the validation examples were shared out (splitValidation); `val` is measured on the `judge` ones only */
  val_split: { by: 'anchor' | 'user'; fit: number; stop: number; judge: number };
  /** share of the label items that made it into the candidates (the re-ranker's ceiling) */
  candidate_recall: { val: number; test: number };
  val: RankingMetrics;
  test: RankingMetrics;
  rounds: number;
  best_round: number;
  top_features: { feature: string; gain: number }[];
  /** 95% bootstrap intervals (test users resampled) of test MAP@k: the re-ranker, the model, popularity and the best heuristic */
  test_map_intervals: Record<string, [number, number]>;
  seconds: number;
}

/** reranker.json: the fitted trees and how their candidates were built. */
interface RerankerFile {
  format: 'gnnctl-reranker';
  version: 1;
  sources: string[];
  source_width: number;
  max_candidates: number;
  features: string[];
  gbdt: GbdtModelJSON;
}

/** Candidates and their features for users at one anchor: one implementation for training and predict. */
export class RerankInputs {
  readonly lists: HeuristicLists;
  readonly heuristics: HeuristicParams[];
  readonly sources: string[];
  readonly names: string[];

  constructor(
    readonly graph: Graph,
    readonly rs: RankingSpec,
    readonly record: HeuristicsRecord,
    readonly modelTopN: ModelTopN | null,
  ) {
    const exclude = record.exclude_seen.exclude;
    this.lists = new HeuristicLists(graph, rs, exclude, RERANK_SOURCE_WIDTH);
    // With seen items excluded the repeat rule lists nothing.
    this.heuristics = RANKING_BASELINES.filter((n) => !(exclude && n === 'repeat')).map((n) => recordedParams(record, n, this.lists.columns, rs));
    this.sources = [...this.heuristics.map((p) => p.name), ...(modelTopN ? ['model'] : [])];
    this.names = featureNames(this.lists.columns, this.sources);
  }

  get excludeSeen(): boolean {
    return this.record.exclude_seen.exclude;
  }

  /** Candidates, their features, and the model's own wide list (null without a model) of `users` at `anchor`. */
  async at(users: Int32Array, anchor: number): Promise<{ cand: Candidates; columns: Float32Array[]; model: SourceLists | null }> {
    const sources: SourceLists[] = this.heuristics.map((p) => ({ name: p.name, width: RERANK_SOURCE_WIDTH, ...this.lists.rank(p, users, anchor, RERANK_SOURCE_WIDTH) }));
    let model: SourceLists | null = null;
    if (this.modelTopN) {
      // Wider with seen items excluded, so the model's own top k (after dropping them) is inside the list.
      const width = RERANK_SOURCE_WIDTH + (this.excludeSeen ? SEEN_MARGIN : 0);
      model = { name: 'model', width, ...(await this.modelTopN(users, anchor, width)) };
      sources.push(model);
    }
    const g = this.lists.g;
    const cand = candidateUnion(sources, users.length, RERANK_MAX_CANDIDATES, this.excludeSeen ? (j) => seenItems(g, users[j]!, anchor) : undefined);
    const columns = rerankFeatures({ g, columns: this.lists.columns, anchor, countsAt: (w) => this.lists.countsAt(anchor, w) }, users, cand);
    return { cand, columns, model };
  }
}

/** Each user's k best candidates by the ranker's score (−1 / NaN where fewer than k). */
export function rerankTopK(gbdt: GbdtModel, cand: Candidates, columns: Float32Array[], users: number, k: number): { ids: Int32Array; scores: Float32Array } {
  const raw = gbdt.predictRaw({ rows: cand.items.length, columns });
  const ids = new Int32Array(users * k).fill(-1);
  const scores = new Float32Array(users * k).fill(Number.NaN);
  for (let j = 0; j < users; j++) {
    const lo = cand.ptr[j]!;
    // Ties keep candidate order: the sources' own ranks, round by round.
    const order = Array.from({ length: cand.ptr[j + 1]! - lo }, (_, i) => lo + i).sort((a, b) => raw[b]! - raw[a]! || a - b);
    for (let r = 0; r < Math.min(k, order.length); r++) {
      ids[j * k + r] = cand.items[order[r]!]!;
      scores[j * k + r] = raw[order[r]!]!;
    }
  }
  return { ids, scores };
}

/**
 * How the validation examples are shared out (indices into them). With two or more validation anchors, by
 * time like the run's own split: the ranker fits (and stops, on a quarter of the users by a hash of their
 * id) on the earlier half of the anchors, the lists are judged on the later half. With one anchor, by a
 * hash of the user's id: half judge, an eighth stop, the rest fit.
 */
export interface ValidationSplit {
  by: 'anchor' | 'user';
  fit: number[];
  stop: number[];
  judge: number[];
}

export function splitValidation(val: Examples): ValidationSplit {
  const anchors = [...new Set(val.anchors)].sort((a, b) => a - b);
  // The top 3 bits of a multiplicative hash: eight buckets of users, stable across anchors and runs.
  const bucket = (e: number) => Math.imul(val.nodes[e]! + 1, 0x9e3779b1) >>> 29;
  const out: ValidationSplit = { by: anchors.length >= 2 ? 'anchor' : 'user', fit: [], stop: [], judge: [] };
  const cut = anchors[Math.floor(anchors.length / 2)] ?? Number.POSITIVE_INFINITY;
  for (let e = 0; e < val.nodes.length; e++) {
    const b = bucket(e);
    if (out.by === 'anchor') (val.anchors[e]! >= cut ? out.judge : b < 2 ? out.stop : out.fit).push(e);
    else (b < 4 ? out.judge : b === 4 ? out.stop : out.fit).push(e);
  }
  return out;
}

/** A training (or early-stopping) set: the candidate rows of the examples `idx` with at least one label among them, grouped per example. */
async function groupedRows(inputs: RerankInputs, ex: Examples, idx: number[], maxUsers: number): Promise<{ columns: Float32Array[]; y: Float32Array; groups: Int32Array; users: number }> {
  const stride = Math.max(1, Math.ceil(idx.length / maxUsers));
  const byTime = new Map<number, number[]>();
  for (let i = 0; i < idx.length; i += stride) {
    const a = ex.anchors[idx[i]!]!;
    let rows = byTime.get(a);
    if (!rows) byTime.set(a, (rows = []));
    rows.push(idx[i]!);
  }
  const cols: Float32Array[][] = [];
  const ys: number[] = [];
  const groups: number[] = [];
  for (const [anchor, rows] of byTime) {
    const users = Int32Array.from(rows, (e) => ex.nodes[e]!);
    const { cand, columns } = await inputs.at(users, anchor);
    const keep: number[] = [];
    rows.forEach((e, j) => {
      const truth = labelSet(ex, e);
      const lo = cand.ptr[j]!;
      const hi = cand.ptr[j + 1]!;
      const y: number[] = Array.from(cand.items.subarray(lo, hi), (i) => (truth.has(i) ? 1 : 0));
      const pos = y.reduce((a, b) => a + b, 0);
      // A group with no label, or only labels, has no pair to learn from.
      if (pos === 0 || pos === y.length) return;
      for (let i = lo; i < hi; i++) keep.push(i);
      ys.push(...y);
      groups.push(hi - lo);
    });
    cols.push(columns.map((c) => Float32Array.from(keep, (i) => c[i]!)));
  }
  const columns = inputs.names.map((_, f) => concat(cols.map((c) => c[f]!)));
  return { columns, y: Float32Array.from(ys), groups: Int32Array.from(groups), users: groups.length };
}

/** The re-ranker's, the model's, popularity's and the best heuristic's top-k of every example of `ex`, and the candidates' label recall. */
async function evaluateSplit(inputs: RerankInputs, gbdt: GbdtModel, ex: Examples, best: RankingBaseline, k: number): Promise<{ lists: Record<string, Int32Array>; recall: number }> {
  const n = ex.nodes.length;
  const names = ['reranker', 'model', 'popularity', best];
  const lists: Record<string, Int32Array> = Object.fromEntries(names.map((m) => [m, new Int32Array(n * k).fill(-1)]));
  // The heuristics as training evaluated them (their own list depth), for the intervals.
  const plain = new HeuristicLists(inputs.graph, inputs.rs, inputs.excludeSeen);
  const params = (name: RankingBaseline) => recordedParams(inputs.record, name, plain.columns, inputs.rs);
  let found = 0;
  let total = 0;
  for (const [anchor, all] of byAnchor(ex, 1)) {
    for (let lo = 0; lo < all.length; lo += EVAL_CHUNK) {
      const idx = all.slice(lo, lo + EVAL_CHUNK);
      const users = Int32Array.from(idx, (e) => ex.nodes[e]!);
      const { cand, columns, model } = await inputs.at(users, anchor);
      const top = rerankTopK(gbdt, cand, columns, users.length, k);
      const pop = plain.rank(params('popularity'), users, anchor).ids;
      const heur = plain.rank(params(best), users, anchor).ids;
      idx.forEach((e, j) => {
        lists.reranker!.set(top.ids.subarray(j * k, (j + 1) * k), e * k);
        lists.popularity!.set(pop.subarray(j * k, (j + 1) * k), e * k);
        lists[best]!.set(heur.subarray(j * k, (j + 1) * k), e * k);
        if (model) lists.model!.set(unseen(model.ids.subarray(j * model.width, (j + 1) * model.width), inputs.excludeSeen ? seenItems(inputs.lists.g, users[j]!, anchor) : new Set(), k), e * k);
        const truth = labelSet(ex, e);
        const inCand = new Set(cand.items.subarray(cand.ptr[j]!, cand.ptr[j + 1]!));
        for (const i of truth) if (inCand.has(i)) found++;
        total += truth.size;
      });
    }
  }
  return { lists, recall: total > 0 ? found / total : 0 };
}

/**
 * Fits the re-ranker on the run's training examples (early stopping on validation), evaluates it on every
 * validation and test example, writes `reranker.json` into the run directory, and returns its record; null
 * when the training windows give it nothing to learn from (no example with a label among its candidates).
 */
export async function fitReranker(graph: Graph, rs: RankingSpec, data: { train: Examples; val: Examples; test: Examples }, record: HeuristicsRecord, best: RankingBaseline, modelTopN: ModelTopN | null, seed: number, runDir: string): Promise<{ record: RerankRecord; lists: { val: Int32Array; test: Int32Array }; judge: number[] } | null> {
  const t0 = performance.now();
  const k = rs.top_k;
  const inputs = new RerankInputs(graph, rs, record, modelTopN);
  const split = splitValidation(data.val);
  const train = await groupedRows(inputs, data.val, split.fit, TRAIN_USERS);
  const stop = await groupedRows(inputs, data.val, split.stop, STOP_USERS);
  if (train.users < 2 || stop.users < 1 || split.judge.length === 0) {
    info(`train: no re-ranker (${train.users} fitting and ${stop.users} stopping validation users have a label among their candidates, ${split.judge.length} left to judge)`);
    return null;
  }
  info(`train: re-ranker on ${train.users.toLocaleString('en-US')} validation users × their candidates (${train.y.length.toLocaleString('en-US')} rows, ${inputs.names.length} features; split by ${split.by}, ${split.judge.length.toLocaleString('en-US')} users judge)`);
  const gbdt = GbdtModel.fit(
    { train: { rows: train.y.length, columns: train.columns }, y: train.y, groups: train.groups, valid: { data: { rows: stop.y.length, columns: stop.columns }, y: stop.y, groups: stop.groups }, names: inputs.names },
    { ...GBDT, ndcg_k: k, seed },
  );
  const file: RerankerFile = { format: 'gnnctl-reranker', version: 1, sources: inputs.sources, source_width: RERANK_SOURCE_WIDTH, max_candidates: RERANK_MAX_CANDIDATES, features: inputs.names, gbdt: gbdt.toJSON() };
  writeJsonAtomic(join(runDir, RERANKER_FILE), file);
  const val = await evaluateSplit(inputs, gbdt, data.val, best, k);
  const test = await evaluateSplit(inputs, gbdt, data.test, best, k);
  const intervals: Record<string, [number, number]> = {};
  for (const [name, lists] of Object.entries(test.lists)) if (name !== 'model' || modelTopN) intervals[name] = mapInterval(data.test, lists, k, seed);
  const out: RerankRecord = {
    sources: inputs.sources,
    source_width: RERANK_SOURCE_WIDTH,
    max_candidates: RERANK_MAX_CANDIDATES,
    features: inputs.names,
    train_users: train.users,
    train_rows: train.y.length,
    candidate_recall: { val: round(val.recall), test: round(test.recall) },
    val_split: { by: split.by, fit: split.fit.length, stop: split.stop.length, judge: split.judge.length },
    val: rankingMetrics(subset(data.val, split.judge).label_items!, subsetLists(val.lists.reranker!, split.judge, k), k),
    test: rankingMetrics(data.test.label_items!, test.lists.reranker!, k),
    rounds: gbdt.history?.rounds ?? gbdt.trees.length,
    best_round: gbdt.history?.best_round ?? gbdt.trees.length,
    top_features: gbdt.featureImportance().slice(0, 10).map((f) => ({ feature: f.feature, gain: round(f.gain) })),
    test_map_intervals: intervals,
    seconds: round((performance.now() - t0) / 1000),
  };
  return { record: out, lists: { val: val.lists.reranker!, test: test.lists.reranker! }, judge: split.judge };
}

/** The run's fitted re-ranker (reranker.json), checked against the sources today's inputs build. */
export function loadReranker(runDir: string, inputs: RerankInputs): GbdtModel {
  const path = join(runDir, RERANKER_FILE);
  if (!existsSync(path)) throw new ArtifactError(`the run chose its re-ranker but has no ${RERANKER_FILE}`, { where: path, hint: 'retrain the run, or serve its deep model with --serve-model' });
  const f = JSON.parse(readFileSync(path, 'utf8')) as RerankerFile;
  if (f.format !== 'gnnctl-reranker' || f.features.join() !== inputs.names.join()) {
    throw new ArtifactError(`${RERANKER_FILE} was fitted on features that today's data does not give (${f.features.length} recorded, ${inputs.names.length} now)`, { where: path, hint: 'retrain the run on today\'s data, or serve its deep model with --serve-model' });
  }
  return GbdtModel.fromJSON(f.gbdt);
}

/** 95% percentile-bootstrap interval of MAP@k over the examples of `ex` (resampled with replacement). */
export function mapInterval(ex: Examples, ranked: Int32Array, k: number, seed: number): [number, number] {
  return meanInterval(perUserRanking(ex.label_items!, ranked, k).map_at_k, seed ^ 0x5eed) ?? [0, 0];
}

function labelSet(ex: Examples, e: number): Set<number> {
  const l = ex.label_items!;
  return new Set(l.items.subarray(l.offsets[e]!, l.offsets[e + 1]!));
}

function concat(parts: Float32Array[]): Float32Array {
  const out = new Float32Array(parts.reduce((a, p) => a + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

function round(x: number): number {
  return Math.round(x * 1e5) / 1e5;
}
