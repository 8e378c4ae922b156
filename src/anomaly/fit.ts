/**
 * `gnnctl anomaly fit`: train TAGAE on the period taken as normal and calibrate its alerting.
 *
 * The normal period [from, until) is split in two: `warmup_snapshots` snapshots spread evenly over it are
 * held out — the warm-up window, which the model never trains on, so its errors are honest: each
 * service's mean error there becomes its baseline, and the scores there become the threshold's first
 * window — and the rest train the model (and fit the feature statistics). The baselines (static per-service thresholds, the
 * flat autoencoder) are fitted on the same split, so every detector is judged on equal terms.
 */
import { existsSync, statSync } from 'node:fs';
import { hashFile } from '../core/hash.js';
import { tf } from '../core/tf.js';
import type { Config } from '../config/load.js';
import { selectBackend, type BackendRequest } from '../compute/backend.js';
import { withDuck } from '../data/duck.js';
import { ArtifactError, DataError } from '../core/errors.js';
import { newRunId, weightMap } from '../artifacts/run_store.js';
import { RunLifecycle } from '../artifacts/run_lifecycle.js';
import { isoSeconds } from '../core/duration.js';
import { parseIsoTime } from '../core/time.js';
import { info } from '../core/log.js';
import { Rng } from '../core/rng.js';
import { VERSION } from '../core/version.js';
import { Detector, emptyState, type ServiceBaselines, type SnapshotScore } from './detector.js';
import { fitFeatureStats, standardise, type FeatureStats } from './features.js';
import { FlatAutoencoder, FlatDetector } from './flat_autoencoder.js';
import { buildGraph } from './graph.js';
import { Tagae, type TagaeArgs } from './model.js';
import { CheckedScorer, OnnxScorer, TfjsScorer } from './scorer.js';
import { tagaeOnnx } from './tagae_onnx.js';
import { loadRun, modelSpec, tagaeArgs, writeRun, type AnomalyBaselines, type AnomalyManifest, type AnomalyRun } from './run.js';
import { anomalyConfig, loadEvents, loadSnapshots, sourcePaths, type PlannedEvent, type Snapshot } from './source.js';
import { fitStatic } from './static_baseline.js';
import { fitEdgeZScore, fitZScore, zScores } from './zscore_baseline.js';
import { FAMILY_WEIGHTS_FILE, fitRunFamilyWeights, writeFamilyWeights } from './family_weights.js';
import { SlidingThreshold } from './threshold.js';
import { eventsBetween } from './events_between.js';
import { DETECTOR_FILE, writeDetectorChoice } from './detector_choice.js';
import { chooseRunDetector } from './fit_detector.js';

export interface FitOptions {
  /** epoch seconds */
  from?: number;
  until?: number;
  backend?: BackendRequest;
  epochs?: number;
  /**
   * Fine-tune: start from this run's weights and keep its feature statistics (a periodic re-fit on a
   * newer normal period then sees its inputs encoded as before); baselines and τ are recomputed on the
   * new warm-up. The model settings (window, sizes) and columns must match the run's.
   */
  initFrom?: string;
}

export interface FitResult {
  run_id: string;
  /** the run fine-tuned from (--init-from), if any */
  init_from: string | null;
  run_dir: string;
  fit_from: string;
  fit_until: string;
  train_snapshots: number;
  warmup_snapshots: number;
  services: number;
  mean_edges: number;
  feature_columns: string[];
  edge_feature_columns: string[];
  dropped_edges: number;
  /** snapshots of the normal period with no call edge, and what fitting did about them */
  snapshots_without_edges: number;
  empty_graph_action: string | null;
  epochs: number;
  loss: number[];
  threshold: number;
  flat_threshold: number;
  /** the latency/error columns the static baseline watches (empty: none found, no static baseline) */
  static_baseline_columns: string[];
  /** per-family root-cause weights fitted on the labelled validation faults (model/family_weights.json), and whether alerts use them */
  root_cause_weights: { file: string; method: 'signals_learned' | 'signals'; incidents: number; validation_ac_at_1: { signals: number; signals_learned: number } } | null;
  /** the detector and threshold chosen on the labelled validation faults (model/detector.json), which score/watch alert on unless anomaly.detector is set; null: no labels, TAGAE at its sliding τ */
  detector: { file: string; method: string; threshold: number; rule: string; incidents: number; validation_auroc: number | null } | null;
  backend: string;
  seconds: number;
}

export { eventsBetween } from './events_between.js';

export async function fitAnomaly(cfg: Config, opts: FitOptions = {}): Promise<FitResult> {
  const t0 = performance.now();
  const backend = await selectBackend(opts.backend ?? 'auto');
  const base = opts.initFrom === undefined ? null : loadRun(cfg.artifactsDir, opts.initFrom);
  const { a, loaded, events, until } = await loadNormalPeriod(cfg, opts, base);
  const snaps = loaded.snapshots;
  const W = a.window;
  const { isWarm, trainIdx, warmIdx } = splitWarmup(snaps.length, W, a.warmup_snapshots);
  const train = trainIdx.map((k) => snaps[k]!);
  const warm = warmIdx.map((k) => snaps[k]!);
  const stats = base ? base.stats : fitFeatureStats(train, loaded.featureColumns, loaded.edgeFeatureColumns);
  // Graphs of every snapshot: held-out ones still serve as history (inputs), never as targets.
  const graphs = snaps.map((s) => buildGraph(s, stats));
  const seed = cfg.seed;
  const args = modelArgs(a, loaded, seed);
  const model = new Tagae(args);
  const flat = new FlatAutoencoder(args.featDim, seed + 1);
  if (base) loadInitWeights(base, args, model, flat);
  const epochs = opts.epochs ?? a.epochs;
  const timings: Record<string, number> = {};
  const manifest = await manifestHead(cfg, { a, backend: backend.name, t0, args, loaded, base, fit: fitPeriod(snaps, train, warm, until), timings });
  // From here on the run folder exists with a `running` manifest; an error leaves it `failed`.
  const run = RunLifecycle.start(cfg.artifactsDir, manifest, { t0 });
  try {
    return await run.guard(async () => {
      const tTrain = performance.now();
      const losses = trainEpochs(model, graphs, trainIdx, { epochs, lr: a.lr, window: W, seed });
      timings.train_seconds = (performance.now() - tTrain) / 1000;

      // Warm-up: the detector steps through the whole period in order (the window needs every snapshot);
      // only the held-out snapshots are judged.
      const tWarm = performance.now();
      const allEvents = eventsBetween(events, snaps);
      const warmEvents = warmIdx.map((k) => allEvents[k]!);
      const { onnxModel, scorer, tagaeBaselines, warmupScores, state } = await calibrateTagae(model, args, stats, a, snaps, allEvents, isWarm);

      // Baselines, fitted on the same split.
      const { flatBaselines, flatScores, flatLoss, staticThresholds, zscore, zscoreWarmup, edgeZscore } = fitBaselineDetectors(flat, a, stats, {
        trainRows: concat(trainIdx.map((k) => graphs[k]!.x)),
        train,
        warm,
        warmEvents,
        featureColumns: loaded.featureColumns,
        edgeFeatureColumns: loaded.edgeFeatureColumns,
        epochs,
        seed,
      });
      timings.warmup_seconds = (performance.now() - tWarm) / 1000;

      const baselines: AnomalyBaselines = { tagae: tagaeBaselines, warmup_scores: warmupScores, flat: flatBaselines, flat_warmup_scores: flatScores, static: staticThresholds, zscore, zscore_warmup_scores: zscoreWarmup, edge_zscore: edgeZscore };
      const threshold = new SlidingThreshold(a.threshold_quantile, a.threshold_window, warmupScores).value;
      const flatThreshold = new SlidingThreshold(a.threshold_quantile, a.threshold_window, flatScores).value;
      const meanEdges = train.reduce((sum, x) => sum + x.src.length, 0) / train.length;
      const nServices = new Set(snaps.flatMap((s) => s.services)).size;
      const metrics: Record<string, unknown> = { final_loss: losses[losses.length - 1], onnx_parity: { snapshots: scorer.checked, skipped_without_edges: scorer.skippedEmpty, max_abs_diff: scorer.maxAbsDiff, max_rel_diff: scorer.maxRelDiff, tolerance: ONNX_PARITY_TOLERANCE, relative_to: 'max(1, |value|)' }, threshold, flat_threshold: flatThreshold, flat_loss: flatLoss, services: nServices, mean_edges: meanEdges };
      const familyWeights = await withDuck(({ conn }) => fitRunFamilyWeights(conn, cfg, { featureColumns: loaded.featureColumns, edgeFeatureColumns: loaded.edgeFeatureColumns, zscore, edgeZscore }));
      if (familyWeights) metrics.root_cause_weights = { file: `model/${FAMILY_WEIGHTS_FILE}`, method: familyWeights.method, incidents: familyWeights.fitted_on.incidents, validation_ac_at_1: familyWeights.validation_ac_at_1 };
      state.run_id = run.id;
      writeRun(run.dir, { stats, baselines, state, model, flat, onnx: onnxModel });
      if (familyWeights) writeFamilyWeights(run.dir, familyWeights);
      const detector = await chooseRunDetector(cfg, run.dir);
      if (detector) writeDetectorChoice(run.dir, detector);
      metrics.detector = detector ? { file: `model/${DETECTOR_FILE}`, method: detector.method, threshold: detector.threshold, rule: detector.rule, incidents: detector.chosen_on.incidents, validation_auroc: detector.candidates[detector.method]?.auroc ?? null } : null;
      timings.total_seconds = run.seconds();
      run.finish(metrics, metrics);
      return fitResult(run.manifest, run.dir, loaded, { losses, epochs, staticColumns: staticThresholds?.columns ?? [], emptyGraphAction: emptyGraphAction(loaded.emptySnapshots, cfg) });
    });
  } finally {
    model.params.dispose();
    flat.params.dispose();
  }
}

/** The normal period as the manifest records it: its bounds, the train/warm-up split and the warm-up times. */
function fitPeriod(snaps: Snapshot[], train: Snapshot[], warm: Snapshot[], until: number | undefined): AnomalyManifest['fit'] {
  return {
    from: isoSeconds(snaps[0]!.ts),
    until: isoSeconds(until ?? snaps[snaps.length - 1]!.ts + 1),
    train_snapshots: train.length,
    warmup_snapshots: warm.length,
    first_train_ts: isoSeconds(train[0]!.ts),
    last_warmup_ts: isoSeconds(warm[warm.length - 1]!.ts),
    warmup_ts: warm.map((x) => isoSeconds(x.ts)),
  };
}

/** The manifest as the run starts (`running`): everything known before training; metrics come at the end. */
async function manifestHead(
  cfg: Config,
  o: { a: ReturnType<typeof anomalyConfig>; backend: string; t0: number; args: TagaeArgs; loaded: { featureColumns: string[]; edgeFeatureColumns: string[] }; base: AnomalyRun | null; fit: AnomalyManifest['fit']; timings: Record<string, number> },
): Promise<AnomalyManifest> {
  return {
    kind: 'anomaly',
    id: newRunId('anomaly'),
    task: 'anomaly',
    status: 'running',
    gnnctl: VERSION,
    created_at: new Date(o.t0 + performance.timeOrigin).toISOString(),
    backend: o.backend,
    seed: cfg.seed,
    config: o.a,
    fit: o.fit,
    feature_columns: o.loaded.featureColumns,
    edge_feature_columns: o.loaded.edgeFeatureColumns,
    model: modelSpec(o.args),
    inputs: { ...(await inputHashes(cfg)), ...(o.base ? { init_from: o.base.manifest.id } : {}) },
    timings: o.timings,
    metrics: {},
  };
}

/** What `fit` prints and returns, read off the manifest it wrote. */
function fitResult(m: AnomalyManifest, runDir: string, loaded: { featureColumns: string[]; edgeFeatureColumns: string[]; droppedEdges: number; emptySnapshots: number }, o: { losses: number[]; epochs: number; staticColumns: string[]; emptyGraphAction: string | null }): FitResult {
  const metrics = m.metrics as { threshold: number; flat_threshold: number; services: number; mean_edges: number; root_cause_weights?: FitResult['root_cause_weights']; detector?: FitResult['detector'] };
  const initFrom = m.inputs.init_from;
  return {
    run_id: m.id,
    init_from: typeof initFrom === 'string' ? initFrom : null,
    run_dir: runDir,
    fit_from: m.fit.from,
    fit_until: m.fit.until,
    train_snapshots: m.fit.train_snapshots,
    warmup_snapshots: m.fit.warmup_snapshots,
    services: metrics.services,
    mean_edges: Math.round(metrics.mean_edges * 10) / 10,
    feature_columns: loaded.featureColumns,
    edge_feature_columns: loaded.edgeFeatureColumns,
    dropped_edges: loaded.droppedEdges,
    snapshots_without_edges: loaded.emptySnapshots,
    empty_graph_action: o.emptyGraphAction,
    epochs: o.epochs,
    loss: o.losses,
    threshold: metrics.threshold,
    flat_threshold: metrics.flat_threshold,
    static_baseline_columns: o.staticColumns,
    root_cause_weights: metrics.root_cause_weights ?? null,
    detector: metrics.detector ?? null,
    backend: m.backend,
    seconds: Math.round((m.timings.total_seconds ?? 0) * 10) / 10,
  };
}

/**
 * The normal period's snapshots and planned events, with the config's alert budget turned into a
 * quantile; refuses a period too short to hold the warm-up, one window and something to train on.
 */
async function loadNormalPeriod(cfg: Config, opts: FitOptions, base: AnomalyRun | null) {
  const configured = anomalyConfig(cfg);
  const from = opts.from ?? (configured.fit_from ? parseIsoTime(configured.fit_from)! : undefined);
  const until = opts.until ?? (configured.fit_until ? parseIsoTime(configured.fit_until)! : undefined);
  const fixedColumns = base ? { featureColumns: base.manifest.feature_columns, edgeFeatureColumns: base.manifest.edge_feature_columns } : undefined;
  const { loaded, events } = await withDuck(async ({ conn }) => ({
    loaded: await loadSnapshots(conn, cfg, { from, until }, fixedColumns),
    events: await loadEvents(conn, cfg, { from, until }),
  }));
  const snaps = loaded.snapshots;
  const a = withAlertBudget(configured, snaps);
  if (loaded.emptySnapshots > 0) info(`anomaly fit: ${loaded.emptySnapshots} of ${snaps.length} snapshots have no call edges; ${emptyGraphAction(loaded.emptySnapshots, cfg)}`);
  const need = a.warmup_snapshots + a.window + 10;
  if (snaps.length < need) {
    throw new DataError(`the normal period has ${snaps.length} snapshots; fitting needs at least ${need} (warmup_snapshots ${a.warmup_snapshots} + window ${a.window} + 10 to train on)`, {
      where: 'anomaly.metrics',
      hint: 'widen --from/--until (anomaly.fit_from/fit_until), or lower anomaly.warmup_snapshots',
    });
  }
  return { a, loaded, events, until };
}

/**
 * The warm-up snapshots are held out of training and spread evenly over the normal period (after the
 * first window), so the baselines and the first τ they set cover its whole daily cycle — a warm-up taken
 * from the period's last hours only would see one time of day and mistake the others for anomalies.
 */
function splitWarmup(n: number, window: number, warmup: number): { isWarm: Uint8Array; trainIdx: number[]; warmIdx: number[] } {
  const isWarm = new Uint8Array(n);
  const span = n - window;
  for (let k = 0; k < warmup; k++) isWarm[window + Math.floor(((k + 0.5) * span) / warmup)] = 1;
  const trainIdx: number[] = [];
  const warmIdx: number[] = [];
  for (let k = 0; k < n; k++) (isWarm[k] ? warmIdx : trainIdx).push(k);
  return { isWarm, trainIdx, warmIdx };
}

function modelArgs(a: ReturnType<typeof anomalyConfig>, loaded: { featureColumns: string[]; edgeFeatureColumns: string[] }, seed: number): TagaeArgs {
  return {
    featDim: loaded.featureColumns.length,
    edgeExtra: loaded.edgeFeatureColumns.length,
    hidden: a.hidden,
    heads: a.heads,
    embeddingDim: a.embedding_dim,
    window: a.window,
    structureWeight: a.structure_weight,
    negativeRatio: a.negative_ratio,
    allPairsMaxNodes: a.all_pairs_max_nodes,
    seed,
  };
}

/** --init-from: the run's weights as the start (its model must match the config's); the run's params are freed. */
function loadInitWeights(base: ReturnType<typeof loadRun>, args: TagaeArgs, model: Tagae, flat: FlatAutoencoder): void {
  const fitted = tagaeArgs(base.manifest.model);
  const differs = (['featDim', 'edgeExtra', 'hidden', 'heads', 'embeddingDim', 'window'] as const).filter((k) => fitted[k] !== args[k]);
  try {
    if (differs.length) {
      throw new ArtifactError(`--init-from ${base.manifest.id}: the run's model differs from the config's (${differs.map((k) => `${k} ${fitted[k]} vs ${args[k]}`).join(', ')})`, {
        where: '--init-from',
        hint: 'fine-tune with the settings the run was fitted with, or fit from scratch',
      });
    }
    const w = base.model.params.export();
    model.params.load(w.index, w.blob);
    const fw = base.flat.params.export();
    flat.params.load(fw.index, fw.blob);
  } catch (e) {
    model.params.dispose();
    flat.params.dispose();
    throw e;
  } finally {
    base.model.params.dispose();
    base.flat.params.dispose();
  }
}

/** Training: every train snapshot once per epoch, in a seeded shuffled order, with its W − 1 predecessors. */
function trainEpochs(model: Tagae, graphs: ReturnType<typeof buildGraph>[], trainIdx: number[], o: { epochs: number; lr: number; window: number; seed: number }): number[] {
  const losses: number[] = [];
  const optimizer = tf.train.adam(o.lr);
  const rng = new Rng(o.seed ^ 0x5eed);
  const order = Int32Array.from(trainIdx);
  const bank = new Map<(typeof graphs)[number], Float32Array>();
  try {
    for (let ep = 0; ep < o.epochs; ep++) {
      rng.shuffle(order);
      let sum = 0;
      for (const t of order) {
        const window = [];
        for (let k = 0; k < o.window && t - k >= 0; k++) window.push(graphs[t - k]!);
        sum += model.trainStep(optimizer, window, bank);
      }
      losses.push(sum / order.length);
      info(`anomaly fit: epoch ${ep + 1}/${o.epochs} loss ${(sum / order.length).toFixed(5)}`);
    }
  } finally {
    optimizer.dispose();
  }
  return losses;
}

/**
 * The scorer `score` and `watch` will run — the ONNX graph of the trained weights in onnxruntime, held to
 * TF.js on the first snapshots of the first pass — stepped through the normal period twice: pass 1's
 * held-out errors become each service's baselines; pass 2's scores under them are τ's first window, and
 * its detector state is where scoring right after the normal period continues from.
 */
async function calibrateTagae(model: Tagae, args: TagaeArgs, stats: FeatureStats, a: ReturnType<typeof anomalyConfig>, snaps: Snapshot[], allEvents: PlannedEvent[][], isWarm: Uint8Array) {
  const onnxModel = tagaeOnnx(args, weightMap(model.params.export()), { 'gnnctl.kind': 'anomaly', 'gnnctl.version': VERSION });
  const scorer = new CheckedScorer(await OnnxScorer.open(onnxModel, args), new TfjsScorer(model), ONNX_PARITY_SNAPSHOTS);
  const pass = async (baselines: ServiceBaselines | null): Promise<{ detector: Detector; scores: SnapshotScore[] }> => {
    const detector = new Detector(scorer, stats, a, baselines, emptyState('', []));
    const scores: SnapshotScore[] = [];
    for (let k = 0; k < snaps.length; k++) {
      const r = await detector.step(snaps[k]!, allEvents[k]!, { keepRaw: isWarm[k] === 1, prime: !isWarm[k] || baselines === null });
      if (isWarm[k]) scores.push(r);
    }
    return { detector, scores };
  };
  let second: Awaited<ReturnType<typeof pass>>;
  let tagaeBaselines: ServiceBaselines;
  try {
    const first = await pass(null);
    if (!(scorer.maxRelDiff <= ONNX_PARITY_TOLERANCE)) {
      throw new ArtifactError(`the ONNX scorer disagrees with the trained model (max |Δ|/max(1, |value|) ${scorer.maxRelDiff}, max |Δ| ${scorer.maxAbsDiff} over ${scorer.checked} snapshots, tolerance ${ONNX_PARITY_TOLERANCE})`, {
        hint: 'this is a bug in gnnctl; please report it with the config',
      });
    }
    tagaeBaselines = serviceBaselines(first.scores);
    second = await pass(tagaeBaselines);
  } finally {
    await scorer.close();
  }
  const warmupScores = second.scores.map((s) => s.score);
  const state = { ...second.detector.exportState(), threshold_history: warmupScores.slice(-a.threshold_window) };
  return { onnxModel, scorer, tagaeBaselines, warmupScores, state };
}

/** The flat autoencoder, static thresholds and z-scores, fitted on the train/warm-up split TAGAE uses. */
function fitBaselineDetectors(
  flat: FlatAutoencoder,
  a: ReturnType<typeof anomalyConfig>,
  stats: FeatureStats,
  d: { trainRows: Float32Array; train: Snapshot[]; warm: Snapshot[]; warmEvents: PlannedEvent[][]; featureColumns: string[]; edgeFeatureColumns: string[]; epochs: number; seed: number },
) {
  const flatLoss = flat.fit(d.trainRows, Math.min(d.epochs, 20), a.lr, d.seed + 2);
  const flatErr = new Map<string, [number, number]>();
  for (const s of d.warm) {
    const e = flat.errors(standardise(s.features, stats.node));
    s.services.forEach((name, i) => {
      const v = flatErr.get(name) ?? [0, 0];
      v[0] += e[i]!;
      v[1]++;
      flatErr.set(name, v);
    });
  }
  const flatServices = Object.fromEntries([...flatErr].map(([k, [s, n]]) => [k, s / n]));
  const flatBaselines = { services: flatServices, median: median(Object.values(flatServices)) };
  const flatDet = new FlatDetector(flat, flatBaselines, a.score_services, null);
  const flatScores = d.warm.map((s, k) => flatDet.step(s.services, standardise(s.features, stats.node), new Set(d.warmEvents[k]!.map((e) => e.service))).score);
  const zscore = fitZScore(d.train, d.featureColumns);
  return {
    flatLoss,
    flatBaselines,
    flatScores,
    staticThresholds: fitStatic(d.warm, d.featureColumns),
    zscore,
    zscoreWarmup: d.warm.map((s) => Math.max(0, ...zScores(zscore, s))),
    edgeZscore: fitEdgeZScore(d.train, d.edgeFeatureColumns),
  };
}

/**
 * `threshold: {false_alarms_per_day: N}` → the quantile that lets N of a normal day's snapshots alert
 * (1 − N × interval / 1 day), recorded in the run's config as threshold_quantile; no budget: as configured.
 */
export function withAlertBudget(a: ReturnType<typeof anomalyConfig>, snaps: Snapshot[]): ReturnType<typeof anomalyConfig> {
  if (!a.threshold) return a;
  const steps = snaps.slice(1).map((s, k) => s.ts - snaps[k]!.ts).sort((x, y) => x - y);
  const step = steps[steps.length >> 1] ?? 60;
  const q = 1 - (a.threshold.false_alarms_per_day * step) / 86400;
  return { ...a, threshold_quantile: Math.min(0.9999, Math.max(0.5, q)) };
}

/** What happens to snapshots without call edges (they still train and score on their node features). */
function emptyGraphAction(empty: number, cfg: Config): string | null {
  if (empty === 0) return null;
  const spans = anomalyConfig(cfg).spans;
  const fix = spans ? 'set anomaly.spans.service_map: true to give them the edges seen in the spans' : 'build calls from spans with anomaly.spans.service_map: true, or fill the calls table';
  return `kept: their structure error covers self-loops only and their node features carry the score; ${fix}`;
}

/** TF.js and onnxruntime must agree this closely on Â, X̂ and Z (relative to max(1, |value|)) before a run is written. */
const ONNX_PARITY_TOLERANCE = 1e-4;
/** Snapshots of the first warm-up pass scored by both runtimes (the window fills in the first W). */
const ONNX_PARITY_SNAPSHOTS = 24;

function median(xs: number[]): number {
  return xs.sort((x, y) => x - y)[Math.floor(xs.length / 2)] ?? 1;
}

/**
 * Each service's median structure and feature errors over the warm-up snapshots (pass 1): the median, not
 * the mean, so a few noisy warm-up minutes (an unlabelled blip in the normal period) do not inflate the
 * scale every later error is divided by.
 */
function serviceBaselines(scores: SnapshotScore[]): ServiceBaselines {
  const values = new Map<string, [number[], number[]]>();
  for (const sc of scores) {
    sc.raw!.services.forEach((name, i) => {
      let v = values.get(name);
      if (!v) values.set(name, (v = [[], []]));
      v[0].push(sc.raw!.structure[i]!);
      v[1].push(sc.raw!.feature[i]!);
    });
  }
  const services = Object.fromEntries([...values].map(([k, [s, f]]) => [k, [median(s), median(f)] as [number, number]]));
  return { services, median: [median(Object.values(services).map((v) => v[0])), median(Object.values(services).map((v) => v[1]))] };
}

/** Each input file with its sha256 and size, so a run can be traced to the exact data it was fitted on. */
async function inputHashes(cfg: Config): Promise<Record<string, unknown>> {
  const out: Record<string, unknown> = {};
  const file = async (p: string): Promise<unknown> => (existsSync(p) ? { path: p, sha256: await hashFile(p), bytes: statSync(p).size } : { path: p });
  if (cfg.path) out.config = await file(cfg.path);
  for (const name of ['metrics', 'calls', 'events', 'labels'] as const) {
    const paths = sourcePaths(cfg, name);
    if (paths.length) out[name] = await Promise.all(paths.map(file));
  }
  return out;
}

function concat(parts: Float32Array[]): Float32Array {
  const out = new Float32Array(parts.reduce((s, p) => s + p.length, 0));
  let o = 0;
  for (const p of parts) {
    out.set(p, o);
    o += p.length;
  }
  return out;
}

export type { FeatureStats, Snapshot };
