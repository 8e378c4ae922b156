/**
 * The anomaly run folder, `artifacts/runs/<id>/`, made by the run lifecycle (artifacts/run_lifecycle.ts:
 * a `running` manifest at the start, `complete` or `failed` at the end), each file written atomically:
 *
 *     manifest.json              kind "anomaly", status, config, fit period, columns, backend, seed, timings, metrics
 *     metrics.json               the fit's metrics (threshold, losses, ONNX parity)
 *     model/weights.{bin,json}   TAGAE weights;  model/flat_weights.{bin,json}: the flat baseline's
 *     model/tagae.onnx           the scorer as ONNX (tagae_onnx.ts), what score and watch run in onnxruntime
 *     model/feature_stats.json   the standardisation fitted on the normal period (re-applied, never refitted)
 *     model/baselines.json       per-service warm-up errors (TAGAE, flat), warm-up scores, static thresholds
 *     state.json                 the scorer's window state at the end of the normal period
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { AnomalyConfig } from '../config/anomaly_schema.js';
import { ArtifactError, assertUnreachable } from '../core/errors.js';
import { OnnxScorer, TfjsScorer, type ScorerRuntime, type SnapshotScorer } from './scorer.js';
import { resolveRun, type RunStatus } from '../artifacts/run_store.js';
import { writeFileAtomic, writeJsonAtomic } from '../core/atomic.js';
import type { ServiceBaselines, WindowState } from './detector.js';
import type { FeatureStats } from './features.js';
import { FlatAutoencoder } from './flat_autoencoder.js';
import type { WeightEntry } from './layers/params.js';
import { Tagae, type TagaeArgs } from './model.js';
import type { StaticThresholds } from './static_baseline.js';
import type { EdgeZScoreStats, ZScoreStats } from './zscore_baseline.js';
import { readFamilyWeights, type FamilyWeights } from './family_weights.js';

export interface AnomalyManifest {
  kind: 'anomaly';
  id: string;
  task: 'anomaly';
  status: RunStatus;
  gnnctl: string;
  created_at: string;
  finished_at?: string;
  /** a failed fit's error */
  error?: string;
  backend: string;
  seed: number;
  config: AnomalyConfig;
  fit: { from: string; until: string; train_snapshots: number; warmup_snapshots: number; first_train_ts: string; last_warmup_ts: string; warmup_ts: string[] };
  feature_columns: string[];
  edge_feature_columns: string[];
  model: ModelSpec;
  /** input files with sha256 and size */
  inputs: Record<string, unknown>;
  timings: Record<string, number>;
  metrics: Record<string, unknown>;
}

/** The model's settings as the manifest stores them (snake_case, like every key of an artifact). */
export interface ModelSpec {
  feat_dim: number;
  edge_extra: number;
  hidden: number;
  heads: number;
  embedding_dim: number;
  window: number;
  structure_weight: number;
  negative_ratio: number;
  all_pairs_max_nodes: number;
  seed: number;
}

export function modelSpec(a: TagaeArgs): ModelSpec {
  return { feat_dim: a.featDim, edge_extra: a.edgeExtra, hidden: a.hidden, heads: a.heads, embedding_dim: a.embeddingDim, window: a.window, structure_weight: a.structureWeight, negative_ratio: a.negativeRatio, all_pairs_max_nodes: a.allPairsMaxNodes, seed: a.seed };
}

export function tagaeArgs(m: ModelSpec): TagaeArgs {
  return { featDim: m.feat_dim, edgeExtra: m.edge_extra, hidden: m.hidden, heads: m.heads, embeddingDim: m.embedding_dim, window: m.window, structureWeight: m.structure_weight, negativeRatio: m.negative_ratio, allPairsMaxNodes: m.all_pairs_max_nodes, seed: m.seed };
}

export interface AnomalyBaselines {
  tagae: ServiceBaselines;
  warmup_scores: number[];
  flat: { services: Record<string, number>; median: number };
  flat_warmup_scores: number[];
  static: StaticThresholds | null;
  /** the per-service z-score baseline (absent in runs fitted before it existed) */
  zscore?: ZScoreStats;
  zscore_warmup_scores?: number[];
  /** per call edge, the normal period's edge-column statistics (edges without values there are absent) */
  edge_zscore?: EdgeZScoreStats;
}

export interface AnomalyRun {
  dir: string;
  manifest: AnomalyManifest;
  stats: FeatureStats;
  baselines: AnomalyBaselines;
  state: WindowState;
  model: Tagae;
  flat: FlatAutoencoder;
  /** `signals_learned` weights fitted on labelled validation faults (family_weights.ts), or null */
  familyWeights: FamilyWeights | null;
}

function saveBlob(dir: string, name: string, w: { index: WeightEntry[]; blob: Float32Array }): void {
  writeFileAtomic(join(dir, 'model', `${name}.bin`), new Uint8Array(w.blob.buffer, w.blob.byteOffset, w.blob.byteLength));
  writeFileAtomic(join(dir, 'model', `${name}.json`), `${JSON.stringify(w.index)}\n`);
}

function readBlob(dir: string, name: string): { index: WeightEntry[]; blob: Float32Array } {
  const buf = readFileSync(join(dir, 'model', `${name}.bin`));
  return { index: JSON.parse(readFileSync(join(dir, 'model', `${name}.json`), 'utf8')) as WeightEntry[], blob: new Float32Array(buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.byteLength)) };
}

/** Writes a run's model files into its folder (the lifecycle writes the manifest; `model/` exists). */
export function writeRun(dir: string, run: Omit<AnomalyRun, 'dir' | 'manifest' | 'familyWeights'> & { onnx: Uint8Array }): void {
  writeFileAtomic(join(dir, 'model', TAGAE_ONNX), run.onnx);
  saveBlob(dir, 'weights', run.model.params.export());
  saveBlob(dir, 'flat_weights', run.flat.params.export());
  writeJsonAtomic(join(dir, 'model', 'feature_stats.json'), run.stats);
  writeJsonAtomic(join(dir, 'model', 'baselines.json'), run.baselines);
  writeJsonAtomic(join(dir, 'state.json'), run.state);
}

export const TAGAE_ONNX = 'tagae.onnx';

/**
 * The scorer `score` and `watch` use: onnxruntime on the run's `model/tagae.onnx` (default), or the TF.js
 * model (`--runtime tfjs`). A run fitted before the ONNX export gets its graph built from its weights.
 */
export async function openScorer(run: AnomalyRun, runtime: ScorerRuntime): Promise<SnapshotScorer> {
  switch (runtime) {
    case 'tfjs':
      return new TfjsScorer(run.model);
    case 'onnx': {
      const path = join(run.dir, 'model', TAGAE_ONNX);
      return existsSync(path) ? OnnxScorer.open(path, run.model.args) : OnnxScorer.fromModel(run.model);
    }
    default:
      return assertUnreachable(runtime);
  }
}

/**
 * Resolves a run reference (id, folder, latest:anomaly) and loads everything scoring needs. `running`:
 * also a run still being fitted (fit's own detector choice replays its validation faults through it).
 */
export function loadRun(artifactsDir: string, ref: string, o: { running?: boolean } = {}): AnomalyRun {
  const listing = resolveRun(artifactsDir, ref === 'latest' ? 'latest:anomaly' : ref);
  const manifest = listing.manifest as unknown as AnomalyManifest;
  if (manifest.kind !== 'anomaly') {
    throw new ArtifactError(`run ${listing.id} is a ${String(manifest.kind)} run, not an anomaly run`, { where: '--run', value: ref, hint: 'pass a run written by `gnnctl anomaly fit`' });
  }
  const dir = listing.dir;
  if (manifest.status !== 'complete' && !(o.running && manifest.status === 'running')) {
    throw new ArtifactError(`run ${listing.id} is ${manifest.status}${manifest.error ? ` (${manifest.error})` : ''}: only a complete anomaly run can score`, { where: dir, value: ref, hint: 'fit again, or pass a complete run (gnnctl runs list)' });
  }
  for (const f of ['model/weights.bin', 'model/feature_stats.json', 'model/baselines.json', 'state.json']) {
    if (!existsSync(join(dir, f))) throw new ArtifactError(`run ${listing.id} lacks ${f}`, { where: dir, hint: 'the run folder is incomplete; fit again' });
  }
  const model = new Tagae(tagaeArgs(manifest.model));
  const flat = new FlatAutoencoder(manifest.feature_columns.length, manifest.seed + 1);
  try {
    const w = readBlob(dir, 'weights');
    model.params.load(w.index, w.blob);
    const fw = readBlob(dir, 'flat_weights');
    flat.params.load(fw.index, fw.blob);
  } catch (e) {
    model.params.dispose();
    flat.params.dispose();
    throw new ArtifactError(`run ${listing.id}: cannot load its weights: ${(e as Error).message}`, { where: dir, hint: 'the run was written by an incompatible gnnctl version; fit again' });
  }
  return {
    dir,
    manifest,
    stats: JSON.parse(readFileSync(join(dir, 'model', 'feature_stats.json'), 'utf8')) as FeatureStats,
    baselines: JSON.parse(readFileSync(join(dir, 'model', 'baselines.json'), 'utf8')) as AnomalyBaselines,
    state: JSON.parse(readFileSync(join(dir, 'state.json'), 'utf8')) as WindowState,
    model,
    flat,
    familyWeights: readFamilyWeights(dir),
  };
}

/**
 * The settings a run is scored with: the sources, threshold quantile and window and the suppression come
 * from today's config (alerting can be tuned without refitting); what shaped the warm-up scores the
 * threshold starts from — window, score_services, structure_weight — comes from the run.
 */
export function scoringConfig(current: AnomalyConfig, run: AnomalyRun): AnomalyConfig {
  const fitted = run.manifest.config;
  // an alert budget was turned into a quantile at fit time, on the normal period's snapshot interval
  const budget = current.threshold ? { threshold_quantile: fitted.threshold_quantile } : {};
  return { ...current, window: fitted.window, score_services: fitted.score_services, structure_weight: fitted.structure_weight, ...budget };
}
