/**
 * `export --run <train run that chose its trees>` end to end on tiny synthetic data: a churn run with
 * `model.kind: gbdt` exports as a Triton version whose ONNX graph is the tree ensemble over one FP32 input
 * `features` [-1, F] in the run's feature order. onnxruntime on the features at the run's test anchors
 * gives the trees' own predictions (`predictTreeModel`); `gnnctl serve` on the repository answers a
 * KServe V2 request with the same scores, and a request of the wrong width gets 400 naming the input and
 * the shape it expects. Student-only flags are refused for trees.
 */
import * as ort from 'onnxruntime-node';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { exportCommand } from '../../src/cli/commands/export.js';
import { selectBackend } from '../../src/compute/backend.js';
import { loadConfig, type Config } from '../../src/config/load.js';
import { UsageError } from '../../src/core/errors.js';
import { setQuiet } from '../../src/core/log.js';
import { parseModelConfig } from '../../src/artifacts/triton/pbtxt.js';
import { readManifest } from '../../src/artifacts/run_store.js';
import type { TreeExportResult } from '../../src/export/tree_version.js';
import { buildGraph } from '../../src/graph/build.js';
import { Graph } from '../../src/graph/graph.js';
import { startServer, type RunningServer } from '../../src/serve/server.js';
import { chosenTreeModel, predictTreeModel, type TreeModelFile } from '../../src/train/tree_model.js';
import { computeTreeFeatures, featureNames } from '../../src/train/tree_features.js';
import { train, type TrainManifest, type TrainResult } from '../../src/train/trainer.js';
import { CHURN } from '../helpers/pipeline.js';
import { synthConfig, tinySynth, type SynthFixture } from '../helpers/synth.js';

const CONFIG = synthConfig(`tasks:
  churn:
    query: ${CHURN}
    split: { train_anchors: 4, test_anchors: 2 }
    model: { kind: gbdt }
model: { channels: 8, categorical_dim: 4, num_neighbors: [4, 2], epochs: 1, batch_size: 64, max_steps_per_epoch: 2 }
`);

let fx: SynthFixture;
let cfg: Config;
let run: TrainResult;
let tree: TreeModelFile;
let repo: string;
let exported: TreeExportResult;
/** the features at the run's test anchors (row-major FP32) and the trees' own predictions for them */
let X: Float32Array;
let expected: Float64Array;
let F: number;

beforeAll(async () => {
  setQuiet(true);
  await selectBackend('wasm');
  fx = await tinySynth(CONFIG);
  cfg = loadConfig(fx.config, { cwd: fx.dir, artifacts: fx.artifacts });
  run = await train({ cfg, task: 'churn', backend: 'wasm' });
  tree = chosenTreeModel(run.runDir)!;
  repo = join(fx.artifacts, 'repo');
  exported = (await exportCommand({ config: fx.config, run: run.runId, out: repo, artifacts: fx.artifacts, cwd: fx.dir })).result as TreeExportResult;

  const graph = Graph.load((await buildGraph(cfg)).dir);
  const manifest = readManifest<TrainManifest>(run.runDir);
  const customers = graph.manifest.tables.customers!.rows;
  const anchors: number[] = [];
  const nodes: number[] = [];
  for (const a of manifest.split.test_anchors) {
    for (let n = 0; n < customers; n++) {
      anchors.push(Date.parse(a) / 1000);
      nodes.push(n);
    }
  }
  const rows = { anchors, nodes };
  const [columns] = await computeTreeFeatures(graph.dir, graph.manifest, tree.features, [rows]);
  F = columns!.length;
  X = new Float32Array(nodes.length * F);
  columns!.forEach((c, f) => c.forEach((v, i) => (X[i * F + f] = v)));
  expected = await predictTreeModel(tree, graph.dir, graph.manifest, rows, null);
}, 600_000);
afterAll(() => {
  fx?.cleanup();
  setQuiet(false);
});

const versionDir = () => join(repo, exported.model, String(exported.version));

describe('export of a train run that chose its trees', () => {
  it('writes a version: one FP32 input `features` [-1, F] in the run\'s feature order, output `score`, the names in manifest.json and config.pbtxt', () => {
    expect(tree.kind).toBe('gbdt');
    const names = featureNames(tree.features);
    expect(exported.model).toBe('churn-gbdt');
    expect(exported.input).toEqual({ name: 'features', datatype: 'FP32', shape: [-1, names.length] });
    const m = JSON.parse(readFileSync(join(versionDir(), 'manifest.json'), 'utf8')) as { model_kind: string; train_run: string; inputs: unknown[]; features: { name: string; kind: string; vocab?: string[] }[]; files: Record<string, string> };
    expect(m.model_kind).toBe('gbdt');
    expect(m.train_run).toBe(run.runId);
    expect(m.inputs).toEqual([{ name: 'features', datatype: 'FP32', shape: [-1, names.length] }]);
    expect(m.features.map((f) => f.name)).toEqual(names);
    // Categorical columns carry the vocabulary whose 1-based positions a client sends.
    for (const c of tree.features.own.filter((o) => o.kind === 'categorical')) expect(m.features.find((f) => f.name === c.name)!.vocab).toEqual(c.vocab);
    expect(Object.keys(m.files)).toContain('model.onnx');
    const config = parseModelConfig(readFileSync(join(repo, exported.model, 'config.pbtxt'), 'utf8'));
    expect(config.input).toEqual([expect.objectContaining({ name: 'features', data_type: 'TYPE_FP32', dims: [names.length] })]);
    expect(config.output).toEqual([expect.objectContaining({ name: 'score', data_type: 'TYPE_FP32', dims: [1] })]);
    expect(JSON.parse(config.parameters!.feature_names!.string_value!)).toEqual(names);
    expect(exported.parity.max_abs_diff).toBeLessThanOrEqual(1e-5);
  });

  it('onnxruntime on the features at the run\'s test anchors gives the trees\' own predictions (≤ 1e-5)', async () => {
    expect(X.some((v) => Number.isNaN(v))).toBe(true); // missing values take the trees' missing branch
    const session = await ort.InferenceSession.create(join(versionDir(), 'model.onnx'));
    try {
      const out = await session.run({ features: new ort.Tensor('float32', X, [expected.length, F]) });
      const score = out.score!;
      expect(score.dims).toEqual([expected.length, 1]);
      const got = score.data as Float32Array;
      let max = 0;
      for (let i = 0; i < expected.length; i++) max = Math.max(max, Math.abs(got[i]! - expected[i]!));
      expect(max).toBeLessThanOrEqual(1e-5);
      // probabilities, and not all the same
      expect(Math.min(...got)).toBeGreaterThanOrEqual(0);
      expect(Math.max(...got)).toBeLessThanOrEqual(1);
      expect(new Set(got).size).toBeGreaterThan(1);
    } finally {
      await session.release();
    }
  });

  it('refuses the student-only flags', async () => {
    const err = await exportCommand({ config: fx.config, run: run.runId, out: repo, quantize: 'int8', artifacts: fx.artifacts, cwd: fx.dir }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UsageError);
    expect((err as UsageError).message).toMatch(/--quantize applies to distilled students/);
  });
});

describe('gnnctl serve of the exported trees', () => {
  let server: RunningServer;
  beforeAll(async () => {
    server = await startServer({ modelRepository: repo, port: 0, pollIntervalMs: 0, log: () => undefined });
  });
  afterAll(async () => {
    await server?.stop();
  });

  /** A KServe V2 request with the features as binary data (JSON has no NaN). */
  const infer = (x: Float32Array, shape: number[]) => {
    const header = JSON.stringify({ inputs: [{ name: 'features', datatype: 'FP32', shape, parameters: { binary_data_size: x.byteLength } }], outputs: [{ name: 'score' }] });
    const head = Buffer.from(header);
    return fetch(`${server.url}/v2/models/${exported.model}/infer`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/octet-stream', 'Inference-Header-Content-Length': String(head.length) },
      body: Buffer.concat([head, Buffer.from(x.buffer, x.byteOffset, x.byteLength)]),
    });
  };

  it('answers a request with the caller\'s features with the trees\' scores', async () => {
    const n = Math.min(64, expected.length);
    const res = await infer(X.subarray(0, n * F), [n, F]);
    expect(res.status).toBe(200);
    const body = (await res.json()) as { outputs: { name: string; shape: number[]; data: number[] }[] };
    const score = body.outputs.find((o) => o.name === 'score')!;
    expect(score.shape).toEqual([n, 1]);
    for (let i = 0; i < n; i++) expect(Math.abs(score.data[i]! - expected[i]!)).toBeLessThanOrEqual(1e-5);
  });

  it('a request of the wrong width is a 400 naming the input and the shape it expects', async () => {
    const res = await infer(new Float32Array(2 * (F + 1)), [2, F + 1]);
    expect(res.status).toBe(400);
    const { error } = (await res.json()) as { error: string };
    expect(error).toContain('input "features" has shape [2,' + (F + 1) + ']');
    expect(error).toContain(`expects [-1,${F}]`);
  });
});
