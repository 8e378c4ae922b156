/**
 * Compact exports (issue 16, item 6): entity tables as ONNX external data (`--external-data`) and as INT8
 * with a scale per row (`--quantize int8`), on tiny synthetic data. The external model must load from its
 * folder and answer exactly as the embedded one (in onnxruntime and through `gnnctl serve`); the INT8
 * model must stay within the documented tolerance of the FLOAT32 one; bad flag values exit 2.
 */
import * as ort from 'onnxruntime-node';
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { exportCommand } from '../../src/cli/commands/export.js';
import { selectBackend } from '../../src/compute/backend.js';
import { loadConfig, type Config } from '../../src/config/load.js';
import { ConfigError, UsageError } from '../../src/core/errors.js';
import { hashFile } from '../../src/core/hash.js';
import { setQuiet } from '../../src/core/log.js';
import { distill, type DistillResult } from '../../src/distill/distill.js';
import { exportModel, type ExportResult } from '../../src/export/export.js';
import { onnx } from '../../src/artifacts/onnx/index.js';
import { feeds, rawRequests, type RawRequests } from '../../src/export/parity.js';
import { INT8_MAX_ABS_DIFF } from '../../src/export/quantization.js';
import { isEntityTableInitializer, quantizeRows, requestInputs, type EntityTable } from '../../src/export/student_onnx.js';
import { buildGraph } from '../../src/graph/build.js';
import { Graph } from '../../src/graph/graph.js';
import { readModelJson } from '../../src/artifacts/run_store.js';
import type { StudentSpec } from '../../src/model/student/spec.js';
import { train, type TrainResult } from '../../src/train/trainer.js';
import { pipelineConfig, readEmbeddings } from '../helpers/pipeline.js';
import { tinySynth, type SynthFixture } from '../helpers/synth.js';
import { BIN, spawnServe } from '../serve/spawn_serve.js';

let fx: SynthFixture;
let cfg: Config;
let graph: Graph;
let base: TrainResult;
let distilled: DistillResult;
let spec: StudentSpec;
let repo: string;
let embedded: ExportResult;
let external: ExportResult;
let int8: ExportResult;
let requests: RawRequests;

beforeAll(async () => {
  setQuiet(true);
  await selectBackend('wasm');
  fx = await tinySynth(pipelineConfig());
  cfg = loadConfig(fx.config, { cwd: fx.dir, artifacts: fx.artifacts });
  base = await train({ cfg, task: 'fraud', backend: 'wasm', skip_baseline: true });
  distilled = await distill({ cfg, base: base.runId, backend: 'wasm' });
  spec = readModelJson<StudentSpec>(distilled.runDir, 'student.json');
  graph = Graph.load((await buildGraph(cfg)).dir);
  repo = join(fx.artifacts, 'repo');
  embedded = await exportModel({ cfg, run: distilled.runId, out: repo, name: 'embedded', backend: 'wasm' });
  const snapshots = join(fx.artifacts, 'embeddings', base.runId);
  external = await exportModel({ cfg, run: distilled.runId, out: repo, name: 'external', embeddings: [snapshots], externalData: 'always', backend: 'wasm' });
  int8 = await exportModel({ cfg, run: distilled.runId, out: repo, name: 'int8', embeddings: [snapshots], quantize: 'int8', backend: 'wasm' });
  const f = graph.table('transactions');
  const nodes = Int32Array.from({ length: 500 }, (_, i) => f.rows - 500 + i);
  requests = (await rawRequests(graph, spec, cfg.hopPaths, cfg.distillation!.real_time_offset, nodes, await entityTables(embedded.dir))).requests;
}, 600_000);
afterAll(() => {
  fx?.cleanup();
  setQuiet(false);
});

async function entityTables(dir: string): Promise<EntityTable[]> {
  const out: EntityTable[] = [];
  for (const k of spec.embeddings) {
    const key = graph.manifest.schema.tables[k.target]!.primary_key!.column;
    const m = await readEmbeddings(join(dir, `embeddings.${k.target}.parquet`), key);
    const vectors = new Float32Array(m.size * k.dim);
    [...m.values()].forEach((v, i) => vectors.set(v, i * k.dim));
    out.push({ keys: [...m.keys()], vectors, dim: k.dim });
  }
  return out;
}

async function scores(model: string | Uint8Array): Promise<Float32Array> {
  const s = typeof model === 'string' ? await ort.InferenceSession.create(model, { intraOpNumThreads: 1 }) : await ort.InferenceSession.create(model, { intraOpNumThreads: 1 });
  try {
    return (await s.run(feeds(spec, requests, 0, requests.n))).probability!.data as Float32Array;
  } finally {
    await s.release();
  }
}

function maxAbsDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i]! - b[i]!));
  return m;
}

const initializers = (dir: string) => new Map(onnx.ModelProto.decode(readFileSync(join(dir, 'model.onnx'))).graph!.initializer!.map((t) => [t.name!, t]));

describe('--external-data', () => {
  it('auto keeps a small model in one file; always moves the entity tables to model.onnx.data beside model.onnx', () => {
    expect(embedded.files).toEqual({ model_onnx_bytes: embedded.model_bytes, external_data_bytes: 0, external_tensors: [] });
    expect(existsSync(join(embedded.dir, 'model.onnx.data'))).toBe(false);
    // The tables, and the hashed key indexes that replace the entity LabelEncoders (the lookups' and the
    // same-entity flags') once they are external (arrays under 1 KiB stay inline: integer tensors that
    // small may be shape inputs).
    expect(external.files.external_tensors.filter(isEntityTableInitializer)).toEqual(spec.embeddings.map((k) => `entity.${k.target}.table`));
    expect(external.files.external_tensors.filter((n) => !isEntityTableInitializer(n)).every((n) => /^(entity|same)\.[\w.]+\.lookup\.(keys|rows|buckets)$/.test(n))).toBe(true);
    expect(external.files.external_tensors).toContain(`entity.customers.lookup.keys`);
    const labelEncoders = onnx.ModelProto.decode(readFileSync(join(external.dir, 'model.onnx'))).graph!.node!.filter((n) => n.opType === 'LabelEncoder' && /^(entity|same)\./.test(n.name!));
    expect(labelEncoders).toEqual([]);
    expect(readdirSync(external.dir).filter((f) => !f.startsWith('embeddings.')).sort()).toEqual(['README.md', 'manifest.json', 'model.onnx', 'model.onnx.data']);
    // What moved out is what made model.onnx large: each table's rows × dim floats (plus the fallback
    // row), each starting on a 4096-byte page.
    const inits = initializers(external.dir);
    let end = 0;
    for (const k of spec.embeddings) {
      const bytes = (embedded.embedding_rows[k.target]! + 1) * k.dim * 4;
      const table = inits.get(`entity.${k.target}.table`)!;
      expect(table.dataLocation).toBe(onnx.TensorProto.DataLocation.EXTERNAL);
      const ext = Object.fromEntries(table.externalData!.map((e) => [e.key, e.value]));
      expect(ext).toMatchObject({ location: 'model.onnx.data', length: String(bytes) });
      expect(Number(ext.offset) % 4096).toBe(0);
    }
    for (const name of external.files.external_tensors) {
      const ext = Object.fromEntries(inits.get(name)!.externalData!.map((e) => [e.key, e.value]));
      expect(Number(ext.offset) % 4096).toBe(0);
      end = Math.max(end, Number(ext.offset) + Number(ext.length));
    }
    expect(external.files.external_data_bytes).toBe(end);
    expect(external.files.model_onnx_bytes + end).toBeLessThan(embedded.files.model_onnx_bytes + 4096 * spec.embeddings.length);
  });

  it('the manifest records the data file with a hash that matches, so a copy that lost it is detectable', async () => {
    const m = JSON.parse(readFileSync(join(external.dir, 'manifest.json'), 'utf8')) as { files: Record<string, string>; external_data: unknown };
    expect(m.files['model.onnx.data']).toBe(await hashFile(join(external.dir, 'model.onnx.data')));
    expect(m.external_data).toEqual({ file: 'model.onnx.data', bytes: external.files.external_data_bytes, tensors: external.files.external_tensors });
  });

  it('onnxruntime loads it by path and answers exactly as the embedded model; from a buffer it cannot find the data', async () => {
    const a = await scores(join(embedded.dir, 'model.onnx'));
    const b = await scores(join(external.dir, 'model.onnx'));
    expect(maxAbsDiff(a, b)).toBe(0);
    // Why the server loads models by path: a buffer has no folder to resolve "model.onnx.data" against.
    await expect(scores(readFileSync(join(external.dir, 'model.onnx')))).rejects.toThrow();
    expect(external.parity!.max_abs_diff).toBeLessThanOrEqual(1e-4);
  });

  it('gnnctl serve serves it with the same answers as the embedded model', async () => {
    const s = await spawnServe(['--model-repository', repo]);
    try {
      const body = requestBody(0, 8);
      const ask = async (model: string) => {
        const r = await fetch(`${s.url}/v2/models/${model}/infer`, { method: 'POST', body, headers: { 'content-type': 'application/json' } });
        expect(r.status, await r.clone().text()).toBe(200);
        return ((await r.json()) as { outputs: { data: number[] }[] }).outputs[0]!.data;
      };
      const a = await ask('embedded');
      const b = await ask('external');
      expect(b).toEqual(a);
      const direct = await scores(join(external.dir, 'model.onnx'));
      expect(maxAbsDiff(b, direct.subarray(0, 8))).toBeLessThanOrEqual(1e-6);
    } finally {
      await s.stop();
    }
  }, 120_000);
});

describe('--quantize int8', () => {
  it('per-row scales: every value within half a step of the original, zero rows exact', () => {
    const x = Float32Array.from([0.5, -1, 0.25, 0, 0, 0, 3e-3, -2e-3, 1e-3]);
    const { q, scale } = quantizeRows(x, 3, 3);
    expect(Array.from(scale)).toEqual([Math.fround(1 / 127), 0, Math.fround(3e-3 / 127)]);
    for (let r = 0; r < 3; r++) for (let c = 0; c < 3; c++) expect(Math.abs(q[r * 3 + c]! * scale[r]! - x[r * 3 + c]!)).toBeLessThanOrEqual(scale[r]! / 2 + 1e-9);
    expect(Math.max(...Array.from(q, Math.abs))).toBe(127);
  });

  it('stores each table as INT8 [rows+1, dim] with a FLOAT scale per row: ~4× smaller', () => {
    const inits = initializers(int8.dir);
    let fp32 = 0;
    let quantized = 0;
    for (const k of spec.embeddings) {
      const rows = int8.embedding_rows[k.target]! + 1;
      const table = inits.get(`entity.${k.target}.table`)!;
      expect(table.dataType).toBe(onnx.TensorProto.DataType.INT8);
      expect(table.dims!.map(Number)).toEqual([rows, k.dim]);
      expect(inits.get(`entity.${k.target}.scale`)!.dims!.map(Number)).toEqual([rows, 1]);
      fp32 += rows * k.dim * 4;
      quantized += rows * k.dim + rows * 4;
    }
    const q = int8.quantization!;
    expect(q.embedding_table_bytes).toEqual({ fp32, quantized });
    expect(q.size_ratio).toBeCloseTo(fp32 / quantized, 2);
    expect(int8.model_bytes).toBeLessThan(embedded.model_bytes);
  });

  it(`scores within ${INT8_MAX_ABS_DIFF} of the FLOAT32 model; the report gives the test rows' max |Δ| and AUROC change`, async () => {
    const q = int8.quantization!;
    expect(q).toMatchObject({ mode: 'int8', metric: 'auroc', tolerance: INT8_MAX_ABS_DIFF });
    expect(q.test_rows).toBeGreaterThan(100);
    expect(q.max_abs_diff).toBeGreaterThan(0); // it really is quantized
    expect(q.max_abs_diff).toBeLessThanOrEqual(INT8_MAX_ABS_DIFF);
    expect(q.delta).toBeCloseTo(q.quantized - q.fp32, 5);
    // Measured again here, on other rows, against the embedded FLOAT32 export.
    const d = maxAbsDiff(await scores(join(embedded.dir, 'model.onnx')), await scores(join(int8.dir, 'model.onnx')));
    expect(d).toBeGreaterThan(0);
    expect(d).toBeLessThanOrEqual(INT8_MAX_ABS_DIFF);
    // The strict TF.js parity still holds for the same graph in FLOAT32.
    expect(int8.parity!.max_abs_diff).toBeLessThanOrEqual(1e-4);
    const m = JSON.parse(readFileSync(join(int8.dir, 'manifest.json'), 'utf8')) as { quantize: string; quantization: unknown };
    expect(m.quantize).toBe('int8');
    expect(m.quantization).toEqual(q);
    expect(readdirSync(join(repo, 'int8')).sort()).toEqual(['1', 'config.pbtxt']); // the FLOAT32 reference is gone
  });

  it('follows export.quantize and export.external_data from the config (what refresh and pipeline export with); flags override', async () => {
    const c = { ...cfg, export: { ...cfg.export, quantize: 'int8' as const, external_data: 'always' as const } };
    const r = await exportModel({ cfg: c, run: distilled.runId, out: repo, name: 'from-config', embeddings: [join(fx.artifacts, 'embeddings', base.runId)], parityExamples: 0, backend: 'wasm' });
    expect(r.quantize).toBe('int8');
    expect(r.files.external_tensors.filter(isEntityTableInitializer).length).toBe(2 * spec.embeddings.length);
    const o = await exportModel({ cfg: c, run: distilled.runId, out: repo, name: 'from-config', embeddings: [join(fx.artifacts, 'embeddings', base.runId)], quantize: 'none', externalData: 'never', parityExamples: 0, backend: 'wasm' });
    expect([o.quantize, o.quantization, o.files.external_tensors]).toEqual(['none', null, []]);
  });

  it('a bad export.quantize in the config is a config error naming the key', () => {
    const bad = join(fx.dir, 'bad_quantize.yaml');
    writeFileSync(bad, `${readFileSync(fx.config, 'utf8').replace(/^export:\n/m, 'export:\n  quantize: int4\n')}`);
    let err: unknown;
    try {
      loadConfig(bad, { cwd: fx.dir, artifacts: fx.artifacts });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as ConfigError).describe()).toMatch(/export\.quantize.*\n?.*(none|int8)/);
  });

  it('refuses bad values before any work (exit 2 as UsageError)', async () => {
    await expect(exportCommand({ config: fx.config, run: distilled.runId, quantize: 'int4', out: repo, artifacts: fx.artifacts, cwd: fx.dir })).rejects.toThrow(UsageError);
    await expect(exportCommand({ config: fx.config, run: distilled.runId, externalData: 'sometimes', out: repo, artifacts: fx.artifacts, cwd: fx.dir })).rejects.toThrow(/--external-data must be auto, always, never or a size/);
  });
});

describe('the binary: gnnctl export --quantize int8 --external-data always --json', () => {
  it('writes an int8 model with its tables in model.onnx.data and prints the report', () => {
    const r = spawnSync(process.execPath, [BIN, 'export', '--config', fx.config, '--artifacts', fx.artifacts, '--run', distilled.runId, '--out', repo, '--name', 'both', '--embeddings', join(fx.artifacts, 'embeddings', base.runId), '--quantize', 'int8', '--external-data', 'always', '--backend', 'wasm', '--json'], { cwd: fx.dir, encoding: 'utf8', timeout: 300_000 });
    expect(r.status, r.stderr).toBe(0);
    const j = JSON.parse(r.stdout.trim().split('\n').pop()!) as ExportResult;
    expect(j.quantize).toBe('int8');
    expect(j.files.external_tensors.filter(isEntityTableInitializer).sort()).toEqual(spec.embeddings.flatMap((k) => [`entity.${k.target}.scale`, `entity.${k.target}.table`]).sort());
    expect(j.quantization).toMatchObject({ mode: 'int8', metric: 'auroc' });
    expect(j.quantization!.max_abs_diff).toBeLessThanOrEqual(INT8_MAX_ABS_DIFF);
    expect(existsSync(join(repo, 'both', '1', 'model.onnx.data'))).toBe(true);
  }, 300_000);

  it('the streamed int8 tables (quantized chunk by chunk, hashed key index) score exactly as the in-memory int8 model', async () => {
    expect(maxAbsDiff(await scores(join(repo, 'both', '1', 'model.onnx')), await scores(join(int8.dir, 'model.onnx')))).toBe(0);
  });

  it.each([
    [['--quantize', 'int4'], /--quantize must be one of none, int8 \(got "int4"\)/],
    [['--external-data', 'sometimes'], /--external-data must be auto, always, never or a size like "16MiB" \(got "sometimes"\)/],
  ])('refuses %j with exit code 2 and a JSON error', (flags, message) => {
    const r = spawnSync(process.execPath, [BIN, 'export', '--config', fx.config, '--run', 'latest:fraud', ...flags, '--json'], { cwd: fx.dir, encoding: 'utf8' });
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(message);
    expect(JSON.parse(r.stdout.trim().split('\n').pop()!)).toMatchObject({ error: 'UsageError', exit_code: 2 });
  });
});

/** A KServe V2 JSON request for rows [lo, hi) of the raw requests, INT64s written as exact literals. */
function requestBody(lo: number, hi: number): string {
  const f = feeds(spec, requests, lo, hi);
  const inputs = requestInputs(spec).map((i) => {
    const t = f[i.name]!;
    const datatype = i.elemType === 'STRING' ? 'BYTES' : i.elemType === 'INT64' ? 'INT64' : 'FP32';
    return { name: i.name, datatype, shape: t.dims, data: Array.from(t.data as ArrayLike<unknown>, (v) => (typeof v === 'bigint' ? `@big${v}` : v)) };
  });
  return JSON.stringify({ inputs }).replace(/"@big(-?\d+)"/g, '$1');
}
