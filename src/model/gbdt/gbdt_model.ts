/**
 * Histogram-based gradient-boosted trees (Friedman 2001; the binned, leaf-wise form of LightGBM, Ke et
 * al. 2017, and scikit-learn's HistGradientBoosting): `GbdtModel.fit` bins the features once, then each
 * round computes the loss's gradients, grows one tree on them and adds its shrunk leaf values to every
 * row's raw score. With validation rows it stops after `early_stopping_rounds` rounds without improving
 * the validation loss and keeps the trees up to the best round.
 *
 * Inputs are column-major float arrays with NaN for missing values; categorical features are numeric
 * codes. `predict` returns probabilities (binary) or values (regression, ranking scores), `toJSON` /
 * `fromJSON` round-trip a model exactly.
 */
import { DataError, ArtifactError } from '../../core/errors.js';
import { EarlyStopping } from '../../core/early_stopping.js';
import { BinMapper, type BinMapperJSON, type FeatureKind, type GbdtData } from './bin_mapper.js';
import { TreeGrower } from './grower.js';
import { SerialHistogramBuilder, type HistogramBuilder, type HistogramInputs } from './histogram.js';
import { makeLoss, type GbdtLoss } from './losses.js';
import { ParallelHistogramBuilder } from './parallel_histogram.js';
import { resolveGbdtParams, type GbdtLossName, type GbdtParams } from './params.js';
import { Tree, type TreeJSON } from './tree.js';

export interface GbdtFitInput {
  train: GbdtData;
  y: ArrayLike<number>;
  /** lambdarank: sizes of consecutive row groups (the candidates of one query). */
  groups?: Int32Array;
  valid?: { data: GbdtData; y: ArrayLike<number>; groups?: Int32Array };
  /** One kind per feature; default all numeric. */
  kinds?: FeatureKind[];
  /** One name per feature; default `f0`, `f1`, … */
  names?: string[];
}

/** What happened during fitting, per round (snake_case: it goes into metrics files as it is). */
export interface GbdtHistory {
  rounds: number;
  best_round: number;
  stopped_early: boolean;
  train_loss: number[];
  valid_loss: number[];
  threads: number;
  seconds: number;
}

export interface GbdtModelJSON {
  format: 'gnnctl-gbdt';
  version: 1;
  loss: GbdtLossName;
  baseline: number;
  feature_names: string[];
  bin_mapper: BinMapperJSON;
  trees: TreeJSON[];
  params: GbdtParams;
  history: GbdtHistory | null;
}

export class GbdtModel {
  private readonly loss: GbdtLoss;

  constructor(
    readonly params: GbdtParams,
    readonly mapper: BinMapper,
    readonly baseline: number,
    readonly trees: Tree[],
    readonly featureNames: string[],
    readonly history: GbdtHistory | null = null,
  ) {
    this.loss = makeLoss(params.loss, params.loss === 'lambdarank' ? new Int32Array(0) : null, params.ndcg_k);
  }

  static fit(input: GbdtFitInput, p: Partial<GbdtParams> = {}): GbdtModel {
    const t0 = performance.now();
    const params = resolveGbdtParams(p);
    const { train } = input;
    const n = train.rows;
    const F = train.columns.length;
    const kinds = input.kinds ?? Array.from({ length: F }, (): FeatureKind => 'numeric');
    const names = input.names ?? Array.from({ length: F }, (_, f) => `f${f}`);
    if (names.length !== F) throw new DataError(`${names.length} feature names for ${F} columns`, { hint: 'give one name per feature column' });
    if (n < 2) throw new DataError('gradient-boosted trees need at least 2 training rows', { value: n });
    const y = toLabels(input.y, n, 'y');
    checkGroups(input.groups, n, 'groups');
    const loss = makeLoss(params.loss, input.groups ?? null, params.ndcg_k);

    const parallel = params.threads === 2;
    const mapper = BinMapper.fit(train, kinds, params.max_bins, params.bin_sample, params.seed);
    const valueBins = kinds.map((_, f) => mapper.valueBins(f));
    const inp: HistogramInputs = {
      binned: mapper.transform(train, parallel),
      rows: n,
      features: F,
      partition: parallel ? new Uint32Array(new SharedArrayBuffer(n * 4)) : new Uint32Array(n),
      og: parallel ? new Float32Array(new SharedArrayBuffer(n * 4)) : new Float32Array(n),
      oh: parallel ? new Float32Array(new SharedArrayBuffer(n * 4)) : new Float32Array(n),
    };
    const slots = TreeGrower.slots(params.max_leaf_nodes);
    let builder: HistogramBuilder | null = parallel ? ParallelHistogramBuilder.start(inp, slots) : null;
    const threads = builder ? 2 : 1;
    builder ??= new SerialHistogramBuilder(inp, slots);

    let valid: { binned: Uint8Array; rows: number; y: Float64Array; groups: Int32Array | null; raw: Float64Array } | null = null;
    if (input.valid) {
      const vr = input.valid.data.rows;
      checkGroups(input.valid.groups, vr, 'valid.groups');
      if (params.loss === 'lambdarank' && !input.valid.groups) throw new DataError('ranking validation needs valid.groups', { hint: 'pass the group sizes of the validation rows' });
      valid = {
        binned: mapper.transform(input.valid.data),
        rows: vr,
        y: toLabels(input.valid.y, vr, 'valid.y'),
        groups: input.valid.groups ?? null,
        raw: new Float64Array(vr),
      };
    }

    const baseline = loss.baseline(y);
    const raw = new Float64Array(n).fill(baseline);
    valid?.raw.fill(baseline);
    const grad = new Float32Array(n);
    const hess = new Float32Array(n);
    const grower = new TreeGrower(inp, builder, kinds, valueBins, {
      maxLeaves: params.max_leaf_nodes,
      maxDepth: params.max_depth,
      learningRate: params.learning_rate,
      rules: { l2: params.l2_regularization, minSamplesLeaf: params.min_samples_leaf, minHessianLeaf: params.min_hessian_leaf },
    });
    const trees: Tree[] = [];
    const trainLoss: number[] = [];
    const validLoss: number[] = [];
    const stopping = new EarlyStopping({ monitor: `valid ${params.loss} loss`, mode: 'min', patience: params.early_stopping_rounds, min_delta: params.tol });
    let bestRound = 0;
    let stoppedEarly = false;
    try {
      for (let round = 0; round < params.max_iter; round++) {
        loss.gradients(y, raw, grad, hess);
        const { tree, leaves } = grower.grow(grad, hess);
        // A tree that could not split adds a constant the baseline already holds: boosting has converged.
        if (tree.nodes === 1) break;
        for (const leaf of leaves) {
          const rows = inp.partition.subarray(leaf.start, leaf.end);
          if (loss.refitLeaf) tree.value[leaf.node] = loss.refitLeaf(y, raw, rows) * params.learning_rate;
          const v = tree.value[leaf.node]!;
          for (let k = 0; k < rows.length; k++) raw[rows[k]!] = raw[rows[k]!]! + v;
        }
        trees.push(tree);
        trainLoss.push(loss.validationLoss(y, raw, input.groups ?? null));
        if (!valid) continue;
        for (let i = 0; i < valid.rows; i++) valid.raw[i] = valid.raw[i]! + tree.predictBinned(valid.binned, valid.rows, i);
        const v = loss.validationLoss(valid.y, valid.raw, valid.groups);
        validLoss.push(v);
        const step = stopping.update(v)!;
        bestRound = step.best_epoch;
        if (step.should_stop) {
          stoppedEarly = true;
          break;
        }
      }
    } finally {
      builder.close();
    }
    if (valid) trees.length = bestRound;
    const history: GbdtHistory = {
      rounds: trainLoss.length,
      best_round: valid ? bestRound : trees.length,
      stopped_early: stoppedEarly,
      train_loss: trainLoss,
      valid_loss: validLoss,
      threads,
      seconds: (performance.now() - t0) / 1000,
    };
    return new GbdtModel(params, mapper, baseline, trees, names, history);
  }

  get lossName(): GbdtLossName {
    return this.params.loss;
  }

  /** Raw scores: log-odds (binary), values (regression), ranking scores. */
  predictRaw(data: GbdtData): Float64Array {
    const n = data.rows;
    const binned = this.mapper.transform(data);
    const out = new Float64Array(n).fill(this.baseline);
    for (const t of this.trees) for (let i = 0; i < n; i++) out[i] = out[i]! + t.predictBinned(binned, n, i);
    return out;
  }

  /** Probabilities (binary), values (l1, l2) or scores (lambdarank). */
  predict(data: GbdtData): Float64Array {
    const raw = this.predictRaw(data);
    for (let i = 0; i < raw.length; i++) raw[i] = this.loss.transform(raw[i]!);
    return raw;
  }

  /** Total split gain per feature, by name, largest first. */
  featureImportance(): { feature: string; gain: number }[] {
    const g = new Float64Array(this.featureNames.length);
    for (const t of this.trees) for (let k = 0; k < t.nodes; k++) if (t.feature[k]! >= 0) g[t.feature[k]!] = g[t.feature[k]!]! + t.gain[k]!;
    return this.featureNames.map((feature, f) => ({ feature, gain: g[f]! })).sort((a, b) => b.gain - a.gain);
  }

  toJSON(): GbdtModelJSON {
    return {
      format: 'gnnctl-gbdt',
      version: 1,
      loss: this.params.loss,
      baseline: this.baseline,
      feature_names: [...this.featureNames],
      bin_mapper: this.mapper.toJSON(),
      trees: this.trees.map((t) => t.toJSON()),
      params: { ...this.params },
      history: this.history,
    };
  }

  static fromJSON(j: GbdtModelJSON): GbdtModel {
    if (j?.format !== 'gnnctl-gbdt' || j.version !== 1) {
      throw new ArtifactError('not a gnnctl gradient-boosted tree model', { value: `${j?.format} v${j?.version}`, hint: 'retrain the model with this gnnctl version' });
    }
    return new GbdtModel(resolveGbdtParams(j.params), BinMapper.fromJSON(j.bin_mapper), j.baseline, j.trees.map((t) => Tree.fromJSON(t)), j.feature_names, j.history);
  }
}

function toLabels(y: ArrayLike<number>, n: number, what: string): Float64Array {
  if (y.length !== n) throw new DataError(`${what} has ${y.length} labels for ${n} rows`, { hint: 'give one label per row' });
  const out = Float64Array.from(y);
  for (let i = 0; i < n; i++) if (!Number.isFinite(out[i]!)) throw new DataError(`${what}[${i}] is not a finite number`, { value: y[i], hint: 'drop rows without a label' });
  return out;
}

function checkGroups(groups: Int32Array | undefined, n: number, what: string): void {
  if (!groups) return;
  let s = 0;
  for (let i = 0; i < groups.length; i++) {
    if (groups[i]! < 1) throw new DataError(`${what}[${i}] is not a positive group size`, { value: groups[i] });
    s += groups[i]!;
  }
  if (s !== n) throw new DataError(`${what} sizes add up to ${s}, the data has ${n} rows`, { hint: 'give the size of every consecutive group of rows' });
}
