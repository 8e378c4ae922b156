/**
 * A train run's chosen trees (`model.kind` gbdt) as one Triton model version, served the way
 * feature-store-backed tree models are: the caller computes the features (its feature store, or
 * `gnnctl predict`'s columns) and sends them; the model is the tree ensemble alone.
 *
 *   input  `features` FP32 [-1, F]: the run's feature order (own columns, then relational aggregates),
 *          NaN for a missing value (the trees' missing branch); a categorical column as the 1-based
 *          position of its value in the run's vocabulary (manifest.json `features[].vocab`), NaN for a
 *          null or a value the vocabulary lacks (the trees route unseen categories as missing)
 *   output `score`    FP32 [-1, 1]: the probability (binary) or the value (regression)
 *
 * The names and kinds are in manifest.json and in config.pbtxt's parameters, so a client knows what to
 * send. Before publishing, onnxruntime scores rows drawn around every split threshold (and NaN, unseen
 * codes) and must agree with the trees within 1e-5, or nothing is written.
 */
import * as ort from 'onnxruntime-node';
import { join } from 'node:path';
import type { Config } from '../config/load.js';
import { ArtifactError } from '../core/errors.js';
import { Rng } from '../core/rng.js';
import { VERSION } from '../core/version.js';
import type { RunListing, RunManifestBase } from '../artifacts/run_store.js';
import type { TritonModelConfig } from '../artifacts/triton/pbtxt.js';
import { GbdtModel, gbdtOnnxGraph } from '../model/gbdt/index.js';
import type { TreeModelFile } from '../train/tree_model.js';
import { featureKinds, featureNames } from '../train/tree_features.js';
import { publishVersion, repositoryTarget, versionResult } from './model_repository.js';

export const TREE_INPUT = 'features';
export const TREE_OUTPUT = 'score';
/** Largest |Δ score| / max(1, |score|) between onnxruntime and the trees that export accepts (float32 leaf sums). */
export const TREE_PARITY_TOLERANCE = 1e-5;
const PARITY_ROWS = 512;

/** One input column as a client sends it. */
export interface TreeFeatureColumn {
  name: string;
  kind: 'numeric' | 'categorical';
  /** categorical: value → code is its 1-based position here; anything else → NaN */
  vocab?: string[];
  /** aggregates: what it computes, strictly before the request's time */
  reason?: string;
}

export interface TreeExportOptions {
  cfg: Config;
  run: RunListing;
  manifest: RunManifestBase;
  tree: TreeModelFile;
  out?: string;
  name?: string;
  version?: number;
}

export interface TreeExportResult {
  repository: string;
  model: string;
  version: number;
  dir: string;
  model_bytes: number;
  model_kind: 'gbdt';
  train_run: string;
  task: string;
  input: { name: string; datatype: 'FP32'; shape: [number, number] };
  output: { name: string; datatype: 'FP32'; shape: [number, number] };
  features: TreeFeatureColumn[];
  trees: number;
  /** `max_diff`: the largest |Δ| / max(1, |score|), held to `tolerance` */
  parity: TreeParity;
  seconds: number;
}

export interface TreeParity {
  rows: number;
  max_abs_diff: number;
  max_diff: number;
  tolerance: number;
}

/** The run's input columns in the model's order, with what a client needs to encode each. */
export function treeFeatureColumns(tree: TreeModelFile): TreeFeatureColumn[] {
  const names = featureNames(tree.features);
  const kinds = featureKinds(tree.features);
  const own = new Map(tree.features.own.map((c) => [c.name, c]));
  const reasons = new Map(tree.features.plan.features.map((f) => [f.name, f.reason]));
  return names.map((name, i) => {
    const o = own.get(name);
    return { name, kind: kinds[i]!, ...(o?.vocab ? { vocab: o.vocab } : {}), ...(reasons.has(name) ? { reason: reasons.get(name)! } : {}) };
  });
}

/** Writes the version (ONNX tree ensemble, manifest.json, config.pbtxt) after its parity check. */
export async function exportTreeVersion(opts: TreeExportOptions): Promise<TreeExportResult> {
  const t0 = performance.now();
  const { cfg, run, manifest, tree } = opts;
  const model = GbdtModel.fromJSON(tree.model);
  const columns = treeFeatureColumns(tree);
  const F = columns.length;
  const target = repositoryTarget(opts.out ?? join(cfg.artifactsDir, 'model_repository'), opts.name ?? `${manifest.task}-gbdt`, opts.version);
  const g = gbdtOnnxGraph(model, { inputName: TREE_INPUT, outputName: TREE_OUTPUT, outputShape: 'column', graphName: `gnnctl_${manifest.task}_gbdt` });
  g.setMetadata('gnnctl.train_run', run.id);
  g.setMetadata('gnnctl.graph_fingerprint', manifest.graph.schema_fingerprint);
  g.setMetadata('gnnctl.version', VERSION);
  const written = await publishVersion(target, async (tmp) => {
    const files = g.toFiles(tmp);
    const parity = await checkTreeParity(files.modelPath, model, F);
    const value = { files, parity };
    const config = treeModelConfig(cfg, target.name, columns, run.id);
    const describe = (hashes: Record<string, string>) => ({
      kind: 'export',
      model_kind: 'gbdt',
      gnnctl: VERSION,
      created_at: new Date().toISOString(),
      model: target.name,
      version: target.version,
      train_run: run.id,
      task: manifest.task,
      graph_fingerprint: manifest.graph.schema_fingerprint,
      data_fingerprint: manifest.graph.fingerprint,
      inputs: [{ name: TREE_INPUT, datatype: 'FP32', shape: [-1, F] }],
      outputs: [{ name: TREE_OUTPUT, datatype: 'FP32', shape: [-1, 1] }],
      encoding: ENCODING,
      features: columns,
      trees: model.trees.length,
      parity,
      files: hashes,
    });
    return { value, description: { manifest: describe, readme: null, config } };
  });
  return {
    ...versionResult(target, written.files),
    model_kind: 'gbdt',
    train_run: run.id,
    task: manifest.task,
    input: { name: TREE_INPUT, datatype: 'FP32', shape: [-1, F] },
    output: { name: TREE_OUTPUT, datatype: 'FP32', shape: [-1, 1] },
    features: columns,
    trees: model.trees.length,
    parity: written.parity,
    seconds: Math.round((performance.now() - t0) / 10) / 100,
  };
}

const ENCODING = 'features in the listed order; NaN = missing; a categorical value as its 1-based position in the feature\'s vocab, NaN when null or not in it';

/** Triton's configuration: one FP32 input of the run's width, the score, and the feature list as parameters. */
export function treeModelConfig(cfg: Config, name: string, columns: TreeFeatureColumn[], runId: string): TritonModelConfig {
  return {
    name,
    platform: 'onnxruntime_onnx',
    max_batch_size: cfg.export.max_batch_size,
    input: [{ name: TREE_INPUT, data_type: 'TYPE_FP32', dims: [columns.length] }],
    output: [{ name: TREE_OUTPUT, data_type: 'TYPE_FP32', dims: [1] }],
    dynamic_batching: { max_queue_delay_microseconds: cfg.export.max_queue_delay_microseconds },
    instance_group: [{ count: cfg.export.instances, kind: 'KIND_CPU' }],
    // Triton ignores unknown parameters; a client reads what to send from them (vocabularies: manifest.json).
    parameters: {
      feature_names: { string_value: JSON.stringify(columns.map((c) => c.name)) },
      categorical_features: { string_value: JSON.stringify(columns.filter((c) => c.kind === 'categorical').map((c) => c.name)) },
      feature_encoding: { string_value: ENCODING },
      train_run: { string_value: runId },
    },
  };
}

/**
 * Rows that exercise every split: each value is a threshold of its feature, a value just above or below
 * one, NaN, or (categorical) a code the trees never saw. Rounded to float32 first, as a request is.
 */
export function parityRows(model: GbdtModel, F: number, rows: number, seed = 0): Float32Array {
  const rng = new Rng(seed);
  const x = new Float32Array(rows * F);
  for (let f = 0; f < F; f++) {
    const values = model.mapper.values[f]!;
    const categorical = model.mapper.kinds[f] === 'categorical';
    for (let i = 0; i < rows; i++) {
      const u = rng.next();
      const v = values.length ? values[Math.floor(rng.next() * values.length)]! : 0;
      let out: number;
      if (u < 0.1) out = Number.NaN;
      else if (categorical) out = u < 0.2 ? Math.max(0, ...values) + 1 : v;
      else out = u < 0.4 ? v : v + (u < 0.7 ? 1 : -1) * Math.max(Math.abs(v) * 1e-3, 1e-3);
      x[i * F + f] = out;
    }
  }
  return x;
}

/** onnxruntime's scores of `parityRows` against the trees' own predictions. */
async function checkTreeParity(modelPath: string, model: GbdtModel, F: number): Promise<TreeParity> {
  const x = parityRows(model, F, PARITY_ROWS);
  const columns = Array.from({ length: F }, (_, f) => Float64Array.from({ length: PARITY_ROWS }, (_, i) => x[i * F + f]!));
  const expected = model.predict({ rows: PARITY_ROWS, columns });
  const session = await ort.InferenceSession.create(modelPath, { intraOpNumThreads: 1 });
  let got: Float32Array;
  try {
    const out = await session.run({ [TREE_INPUT]: new ort.Tensor('float32', x, [PARITY_ROWS, F]) });
    got = out[TREE_OUTPUT]!.data as Float32Array;
  } finally {
    await session.release();
  }
  let abs = 0;
  let rel = 0;
  for (let i = 0; i < PARITY_ROWS; i++) {
    const d = Math.abs(got[i]! - expected[i]!);
    abs = Math.max(abs, d);
    rel = Math.max(rel, d / Math.max(1, Math.abs(expected[i]!)));
  }
  if (!(rel <= TREE_PARITY_TOLERANCE)) {
    throw new ArtifactError(`the exported trees disagree with the trained ones (max |Δ score| / max(1, |score|) ${rel} on ${PARITY_ROWS} rows, tolerance ${TREE_PARITY_TOLERANCE})`, { hint: 'this is a bug in gnnctl; please report it with the run folder' });
  }
  return { rows: PARITY_ROWS, max_abs_diff: abs, max_diff: rel, tolerance: TREE_PARITY_TOLERANCE };
}
