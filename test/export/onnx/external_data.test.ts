import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ArtifactError } from '../../../src/core/errors.js';
import { dense, keyedEmbedding, onnx, OnnxGraphBuilder } from '../../../src/export/onnx/index.js';
import { expectClose, f32, randomFloats, runModel, str } from './ort_helpers.js';

/** A model with one large table (40 × 8 floats = 1280 B), a dense layer (8 × 4) and a string vocab. */
function buildModel(): OnnxGraphBuilder {
  const g = new OnnxGraphBuilder();
  const keys = g.addInput('key', 'STRING', ['batch', 1]);
  const x = g.addInput('x', 'FLOAT', ['batch', 8]);
  const vocab = Array.from({ length: 40 }, (_, i) => `k${i}`);
  const emb = keyedEmbedding(g, keys, { vocab, table: { data: randomFloats(40 * 8, 1), rows: 40, dim: 8 }, fallback: 'zeros' });
  const flat = g.op('Reshape', [emb, g.constant(BigInt64Array.of(-1n, 8n), [2], { name: 'shape' })]);
  const h = g.op('Add', [flat, x]);
  const y = dense(g, h, { kernel: randomFloats(32, 2), bias: randomFloats(4, 3), inputDim: 8, units: 4, activation: 'tanh' });
  g.addOutput('y', 'FLOAT', ['batch', 4], { from: y });
  return g;
}

const feeds = () => ({ key: str(['k3', 'unknown', 'k39'], [3, 1]), x: f32(randomFloats(24, 4), [3, 8]) });

describe('ONNX external data', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'gnnctl-onnx-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('moves tensors over the threshold to model.onnx.data and onnxruntime loads them', async () => {
    const g = buildModel();
    const inline = await runModel(g.toBytes(), feeds());

    const files = g.toFiles(dir, { externalDataThreshold: 100 });
    // The table (41 rows × 8 × 4 B) and the kernel (128 B) are external; the bias (16 B) and the small
    // shape/default constants stay inline; the string vocabulary always does.
    expect(files.externalTensors).toEqual(['embedding.table', 'dense.kernel']);
    expect(files.dataPath).toBe(join(dir, 'model.onnx.data'));
    expect(readdirSync(dir).sort()).toEqual(['model.onnx', 'model.onnx.data']);
    expect(statSync(files.dataPath!).size).toBe(files.dataBytes);

    const model = onnx.ModelProto.decode(readFileSync(files.modelPath));
    const byName = new Map(model.graph!.initializer!.map((t) => [t.name, t]));
    const table = byName.get('embedding.table')!;
    expect(table.dataLocation).toBe(onnx.TensorProto.DataLocation.EXTERNAL);
    expect(table.rawData?.length ?? 0).toBe(0);
    const ext = Object.fromEntries(table.externalData!.map((e) => [e.key, e.value]));
    expect(ext).toEqual({ location: 'model.onnx.data', offset: '0', length: String(41 * 8 * 4) });
    const kernelExt = Object.fromEntries(byName.get("dense.kernel")!.externalData!.map((e) => [e.key, e.value]));
    expect(Number(kernelExt.offset) % 4096).toBe(0);
    expect(kernelExt.length).toBe('128');
    // The bytes in the data file are the tensor's little-endian float32s.
    const data = readFileSync(files.dataPath!);
    const kernel = new Float32Array(data.buffer.slice(data.byteOffset + Number(kernelExt.offset), data.byteOffset + Number(kernelExt.offset) + 128));
    expect(Array.from(kernel)).toEqual(Array.from(randomFloats(32, 2)));
    expect(byName.get('dense.bias')!.dataLocation).not.toBe(onnx.TensorProto.DataLocation.EXTERNAL);

    const external = await runModel(files.modelPath, feeds());
    expectClose(external.y!.data as Float32Array, inline.y!.data as Float32Array, 0);
  });

  it('externalizes every float initializer with threshold 0 but keeps small integer (shape) tensors inline', async () => {
    const g = buildModel();
    const files = g.toFiles(dir, { externalDataThreshold: 0, fileName: 'm.onnx' });
    expect(files.dataPath).toBe(join(dir, 'm.onnx.data'));
    // onnxruntime cannot run shape inference on a Reshape whose shape is external, so `shape` stays.
    expect(files.externalTensors).toEqual(['embedding.table', 'dense.kernel', 'dense.bias']);
    const a = await runModel(files.modelPath, feeds());
    const b = await runModel(g.toBytes(), feeds());
    expectClose(a.y!.data as Float32Array, b.y!.data as Float32Array, 0);
  });

  it("writes a single file under the 'auto' default while the model is far from 2 GiB", async () => {
    const files = buildModel().toFiles(dir);
    expect(files.dataPath).toBeUndefined();
    expect(files.externalTensors).toEqual([]);
    expect(existsSync(join(dir, 'model.onnx.data'))).toBe(false);
    expect(readdirSync(dir)).toEqual(['model.onnx']); // no temporary files left behind
    const out = await runModel(files.modelPath, feeds());
    expect(out.y!.dims).toEqual([3, 4]);
  });

  it("switches to external data under 'auto' when the payload nears 2 GiB, and toBytes refuses", async () => {
    const g = buildModel();
    // Pretend the initializers are 3 GiB (allocating them would take the test machine's memory).
    g.payloadBytes = () => 3 * 2 ** 30;
    expect(() => g.toBytes()).toThrow(ArtifactError);
    expect(() => g.toBytes()).toThrow(/too large for one protobuf message/);
    const files = g.toFiles(dir);
    // 'auto' then externalizes every tensor of at least 1 KiB: here the 41 × 8 float table.
    expect(files.externalTensors).toEqual(['embedding.table']);
    const out = await runModel(files.modelPath, feeds());
    expect(out.y!.dims).toEqual([3, 4]);
  });

  it('rejects a bad threshold and a path as file name', () => {
    expect(() => buildModel().toFiles(dir, { externalDataThreshold: -1 })).toThrow(/externalDataThreshold/);
    expect(() => buildModel().toFiles(dir, { fileName: '../x.onnx' })).toThrow(/bare file name/);
  });
});
