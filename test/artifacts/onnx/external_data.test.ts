import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ArtifactError } from '../../../src/core/errors.js';
import { dense, keyedEmbedding, onnx, OnnxGraphBuilder } from '../../../src/artifacts/onnx/index.js';
import { attr } from '../../../src/artifacts/onnx/attributes.js';
import { expectClose, f32, ort, randomFloats, runModel, str } from './ort_helpers.js';

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

describe('streamed initializers (writeFiles)', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'gnnctl-onnx-stream-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  /** y = Gather(table, idx) + bias, the table given in memory or streamed in chunks of `chunkRows`. */
  function model(table: Float32Array, rows: number, dim: number, streamed: null | { chunkRows: number; async: boolean }): OnnxGraphBuilder {
    const g = new OnnxGraphBuilder();
    const idx = g.addInput('idx', 'INT64', ['batch']);
    const bias = g.constant(randomFloats(3000, 9), [3000], { name: 'big_bias' });
    const t = streamed
      ? g.addStreamedInitializer('table', 'FLOAT', [rows, dim], async (write) => {
          for (let r = 0; r < rows; r += streamed.chunkRows) {
            if (streamed.async) await new Promise((res) => setImmediate(res));
            const c = table.subarray(r * dim, Math.min(rows, r + streamed.chunkRows) * dim);
            write(new Uint8Array(c.buffer, c.byteOffset, c.byteLength));
          }
        })
      : g.constant(table, [rows, dim], { name: 'table' });
    const gathered = g.op('Gather', [t, idx], { axis: attr.int(0) });
    g.addOutput('y', 'FLOAT', ['batch', dim], { from: g.op('Add', [gathered, g.op('ReduceSum', [bias], { keepdims: attr.int(0) })]) });
    return g;
  }

  it('writes the same bytes, offsets and model as the in-memory path, 4096-aligned, and onnxruntime agrees', async () => {
    const rows = 1001;
    const dim = 5;
    const table = randomFloats(rows * dim, 11);
    const memDir = join(dir, 'mem');
    const mem = model(table, rows, dim, null).toFiles(memDir, { externalDataThreshold: 0 });
    for (const chunkRows of [1, 7, 1001, 5000]) {
      const out = join(dir, `s${chunkRows}`);
      const files = await model(table, rows, dim, { chunkRows, async: chunkRows === 7 }).writeFiles(out, { externalDataThreshold: 0 });
      expect(files.externalTensors).toEqual(mem.externalTensors);
      expect(files.dataBytes).toBe(mem.dataBytes);
      expect(readFileSync(files.dataPath!).equals(readFileSync(mem.dataPath!))).toBe(true);
      expect(readFileSync(files.modelPath).equals(readFileSync(mem.modelPath))).toBe(true);
    }
    // the streamed table comes after the 12,000-byte bias, at the next page
    const proto = onnx.ModelProto.decode(readFileSync(mem.modelPath));
    const ext = Object.fromEntries(proto.graph!.initializer!.find((t) => t.name === 'table')!.externalData!.map((e) => [e.key, e.value]));
    expect(ext).toEqual({ location: 'model.onnx.data', offset: '12288', length: String(rows * dim * 4) });
    const y = await runModel(join(dir, 's7', 'model.onnx'), { idx: new ort.Tensor('int64', BigInt64Array.of(0n, 1000n, 17n), [3]) });
    const b = randomFloats(3000, 9).reduce((s, v) => s + v, 0);
    expectClose(y.y!.data as Float32Array, [0, 1000, 17].flatMap((r) => Array.from(table.subarray(r * dim, (r + 1) * dim), (v) => v + b)), 1e-4);
  });

  it('streams external even when the threshold keeps everything else inline; toFiles and toBytes refuse it', async () => {
    const g = model(randomFloats(20, 12), 4, 5, { chunkRows: 2, async: false });
    const files = await g.writeFiles(dir, { externalDataThreshold: Infinity });
    expect(files.externalTensors).toEqual(['table']);
    expect(files.dataBytes).toBe(80);
    expect(() => g.toFiles(join(dir, 'x'))).toThrow(/streamed initializers: write it with writeFiles/);
    expect(() => g.toBytes()).toThrow(/write the model with writeFiles/);
    expect(g.payloadBytes((n) => n === 'table')).toBe(80);
  });

  it('refuses a writer that produces too few or too many bytes, and leaves no data file', async () => {
    for (const [n, re] of [
      [3, /produced 60 bytes, its dims announce 80/],
      [5, /produced more than the 80 bytes/],
    ] as const) {
      const g = new OnnxGraphBuilder();
      const idx = g.addInput('idx', 'INT64', ['batch']);
      const t = g.addStreamedInitializer('table', 'FLOAT', [4, 5], (write) => {
        for (let r = 0; r < n; r++) write(new Uint8Array(20));
      });
      g.addOutput('y', 'FLOAT', ['batch', 5], { from: g.op('Gather', [t, idx], { axis: attr.int(0) }) });
      await expect(g.writeFiles(dir)).rejects.toThrow(re);
      expect(readdirSync(dir)).toEqual([]);
    }
    expect(() => new OnnxGraphBuilder().addStreamedInitializer('s', 'STRING', [1], () => {})).toThrow(/STRING tensors cannot be streamed/);
  });
});
