/**
 * The wasm kernel inventory: every op a GNN trainer uses, forward and backward, on wasm vs the cpu
 * backend (the reference), plus the kernels gnnctl registers because wasm lacks them.
 *
 * Two core TF.js limits show up here and are not backend problems (the cpu backend has them too): there
 * is no gradient for `stridedSlice` (use `slice`) nor through comparison ops, so a `where` mask must be
 * built from tensors outside the differentiated path.
 */
import { tf } from '../../src/core/tf.js';
import { beforeAll, describe, expect, it } from 'vitest';
import { selectBackend } from '../../src/compute/backend.js';
import { WASM_ADDED_KERNELS, WASM_REPLACED_KERNELS, registerWasmKernels } from '../../src/compute/wasm_kernels.js';
import { takeWarnings } from '../../src/core/log.js';
import { ints, maxRelDiff, prng, runOp, uniform, type OpCase } from './ops.js';

const TOL = 1e-5;

beforeAll(async () => {
  const info = await selectBackend('wasm');
  expect(info.name).toBe('wasm');
});

/** Inputs [4, 5] in [-1, 1); a few ops need positive inputs or other shapes. */
const x45 = () => [uniform([4, 5], 1)];
const pos45 = () => [uniform([4, 5], 2, 0.5, 2)];
const two45 = () => [uniform([4, 5], 3), uniform([4, 5], 4)];

const inventory: OpCase[] = [
  { name: 'gather axis 0 (embedding lookup)', inputs: () => [uniform([6, 5], 5), ints([9], 6, 6)], forward: (t, i) => tf.gather(t!, i!) },
  { name: 'gather axis 1', inputs: () => [uniform([3, 6, 4], 7), ints([5], 8, 6)], forward: (t, i) => tf.gather(t!, i!, 1) },
  { name: 'gather 2-d indices', inputs: () => [uniform([10, 3], 9), ints([4, 3], 10, 10)], forward: (t, i) => tf.gather(t!, i!) },
  { name: 'gather rows of 96 (copyWithin path)', inputs: () => [uniform([30, 96], 90), ints([50], 91, 30)], forward: (t, i) => tf.gather(t!, i!) },
  { name: 'gather 1-d table', inputs: () => [uniform([30], 92), ints([40], 93, 30)], forward: (t, i) => tf.gather(t!, i!) },
  { name: 'gather axis 2 of [2,3,7,5]', inputs: () => [uniform([2, 3, 7, 5], 94), ints([4], 95, 7)], forward: (t, i) => tf.gather(t!, i!, 2) },
  { name: 'gather batchDims 1', inputs: () => [uniform([3, 6, 4], 96), ints([3, 5], 97, 6)], forward: (t, i) => tf.gather(t!, i!, 1, 1) },
  { name: 'gather int32 and bool tables', inputs: () => [ints([8, 3], 98, 1000), ints([6], 99, 8)], forward: (t, i) => [tf.gather(t!, i!), tf.cast(tf.gather(tf.greater(t!, 500), i!), 'int32')], wrt: [] },
  { name: 'matMul', inputs: () => [uniform([4, 5], 11), uniform([5, 3], 12)], forward: (a, b) => tf.matMul(a!, b!) },
  { name: 'matMul transposeB', inputs: () => [uniform([4, 5], 13), uniform([3, 5], 14)], forward: (a, b) => tf.matMul(a!, b!, false, true) },
  { name: 'matMul batched [b, f, d]', inputs: () => [uniform([2, 4, 5], 15), uniform([2, 5, 3], 16)], forward: (a, b) => tf.matMul(a!, b!) },
  { name: 'fused matMul + bias + relu', inputs: () => [uniform([4, 5], 17), uniform([5, 3], 18), uniform([3], 19)], forward: (a, b, c) => tf.fused.matMul({ a: a!, b: b!, bias: c!, activation: 'relu' }) },
  { name: 'add broadcast [4,5]+[5]', inputs: () => [uniform([4, 5], 20), uniform([5], 21)], forward: (a, b) => tf.add(a!, b!) },
  { name: 'mul broadcast [4,5]*[4,1]', inputs: () => [uniform([4, 5], 22), uniform([4, 1], 23)], forward: (a, b) => tf.mul(a!, b!) },
  { name: 'sub broadcast [4,5]-[1,5]', inputs: () => [uniform([4, 5], 24), uniform([1, 5], 25)], forward: (a, b) => tf.sub(a!, b!) },
  { name: 'div broadcast [2,4,5]/[4,1]', inputs: () => [uniform([2, 4, 5], 26), uniform([4, 1], 27, 0.5, 2)], forward: (a, b) => tf.div(a!, b!) },
  { name: 'relu', inputs: x45, forward: (a) => tf.relu(a!) },
  { name: 'leakyRelu 0.2', inputs: x45, forward: (a) => tf.leakyRelu(a!, 0.2) },
  { name: 'elu', inputs: x45, forward: (a) => tf.elu(a!) },
  { name: 'sigmoid', inputs: x45, forward: (a) => tf.sigmoid(a!) },
  { name: 'tanh', inputs: x45, forward: (a) => tf.tanh(a!) },
  { name: 'softplus', inputs: x45, forward: (a) => tf.softplus(a!) },
  { name: 'softmax last axis', inputs: x45, forward: (a) => tf.softmax(a!) },
  { name: 'softmax [b, f, d] over fanout', inputs: () => [uniform([2, 3, 4], 28)], forward: (a) => tf.softmax(tf.transpose(a!, [0, 2, 1])) },
  { name: 'logSoftmax', inputs: x45, forward: (a) => tf.logSoftmax(a!) },
  { name: 'exp', inputs: x45, forward: (a) => tf.exp(a!) },
  { name: 'log', inputs: pos45, forward: (a) => tf.log(a!) },
  { name: 'log1p', inputs: pos45, forward: (a) => tf.log1p(a!) },
  { name: 'sqrt', inputs: pos45, forward: (a) => tf.sqrt(a!) },
  { name: 'rsqrt', inputs: pos45, forward: (a) => tf.rsqrt(a!) },
  { name: 'square', inputs: x45, forward: (a) => tf.square(a!) },
  { name: 'abs', inputs: x45, forward: (a) => tf.abs(a!) },
  { name: 'neg', inputs: x45, forward: (a) => tf.neg(a!) },
  { name: 'pow', inputs: pos45, forward: (a) => tf.pow(a!, tf.scalar(1.5)) },
  { name: 'sin', inputs: x45, forward: (a) => tf.sin(a!) },
  { name: 'cos', inputs: x45, forward: (a) => tf.cos(a!) },
  { name: 'sum axis 0', inputs: x45, forward: (a) => tf.sum(a!, 0) },
  { name: 'sum axis 1 keepDims', inputs: x45, forward: (a) => tf.sum(a!, 1, true) },
  { name: 'mean over fanout [b, f, d] axis 1', inputs: () => [uniform([2, 3, 4], 29)], forward: (a) => tf.mean(a!, 1) },
  { name: 'mean all', inputs: x45, forward: (a) => tf.mean(a!) },
  { name: 'max axis 1', inputs: x45, forward: (a) => tf.max(a!, 1) },
  { name: 'max over fanout [b, f, d] axis 1', inputs: () => [uniform([2, 3, 4], 30)], forward: (a) => tf.max(a!, 1) },
  { name: 'min axis 0', inputs: x45, forward: (a) => tf.min(a!, 0) },
  { name: 'logSumExp axis 1', inputs: x45, forward: (a) => tf.logSumExp(a!, 1) },
  {
    name: 'layer norm via moments',
    inputs: () => [uniform([4, 5], 31), uniform([5], 32, 0.5, 1.5), uniform([5], 33)],
    forward: (x, g, b) => {
      const { mean, variance } = tf.moments(x!, -1, true);
      return tf.add(tf.mul(tf.div(tf.sub(x!, mean), tf.sqrt(tf.add(variance, 1e-5))), g!), b!);
    },
  },
  { name: 'concat axis 1', inputs: two45, forward: (a, b) => tf.concat([a!, b!], 1) },
  { name: 'concat axis 0', inputs: two45, forward: (a, b) => tf.concat([a!, b!], 0) },
  { name: 'slice', inputs: x45, forward: (a) => tf.slice(a!, [1, 1], [2, 3]) },
  { name: 'split', inputs: x45, forward: (a) => tf.split(a!, [2, 3], 1) },
  { name: 'stack', inputs: two45, forward: (a, b) => tf.stack([a!, b!], 1) },
  { name: 'unstack', inputs: x45, forward: (a) => tf.unstack(a!, 1) },
  { name: 'reshape', inputs: x45, forward: (a) => tf.reshape(a!, [2, 10]) },
  { name: 'transpose 2-d', inputs: x45, forward: (a) => tf.transpose(a!) },
  { name: 'transpose 3-d [2,0,1]', inputs: () => [uniform([2, 3, 4], 34)], forward: (a) => tf.transpose(a!, [2, 0, 1]) },
  { name: 'tile', inputs: x45, forward: (a) => tf.tile(a!, [2, 3]) },
  { name: 'expandDims + broadcastTo', inputs: x45, forward: (a) => tf.broadcastTo(tf.expandDims(a!, 1), [4, 3, 5]) },
  { name: 'squeeze', inputs: () => [uniform([4, 1, 5], 35)], forward: (a) => tf.squeeze(a!, [1]) },
  { name: 'pad', inputs: x45, forward: (a) => tf.pad(a!, [[1, 0], [0, 2]]) },
  {
    name: 'where (mask from a separate input)',
    inputs: () => [uniform([4, 5], 36), uniform([4, 5], 37), uniform([4, 5], 38)],
    forward: (a, b, m) => tf.where(tf.greater(m!, 0), a!, b!),
    wrt: [0, 1],
  },
  { name: 'greater / less / equal', inputs: two45, forward: (a, b) => [tf.greater(a!, b!), tf.less(a!, b!), tf.equal(a!, a!), tf.greaterEqual(a!, 0), tf.notEqual(a!, b!)], wrt: [] },
  { name: 'logicalAnd / logicalNot', inputs: two45, forward: (a, b) => [tf.logicalAnd(tf.greater(a!, 0), tf.greater(b!, 0)), tf.logicalNot(tf.greater(a!, 0))], wrt: [] },
  { name: 'cast float→int→float, bool→float', inputs: () => [uniform([4, 5], 39, -5, 5)], forward: (a) => [tf.cast(tf.cast(a!, 'int32'), 'float32'), tf.cast(tf.greater(a!, 0), 'float32')], wrt: [] },
  { name: 'cast float→float (differentiable)', inputs: x45, forward: (a) => tf.cast(a!, 'float32') },
  { name: 'oneHot', inputs: () => [ints([6], 40, 4)], forward: (i) => tf.oneHot(i! as tf.Tensor1D, 4), wrt: [] },
  { name: 'clipByValue', inputs: x45, forward: (a) => tf.clipByValue(a!, -0.5, 0.5) },
  { name: 'maximum / minimum', inputs: two45, forward: (a, b) => [tf.maximum(a!, b!), tf.minimum(a!, b!)] },
  { name: 'maximum with scalar (relu-like)', inputs: x45, forward: (a) => tf.maximum(a!, tf.scalar(0.1)) },
  { name: 'dropout (seeded)', inputs: x45, forward: (a) => tf.dropout(a!, 0.5, undefined, 7) },
  { name: 'randomUniform (seeded)', inputs: () => [], forward: () => tf.randomUniform([3, 4], 0, 1, 'float32', 11) },
  { name: 'randomNormal / truncatedNormal (seeded)', inputs: () => [], forward: () => [tf.randomNormal([3, 4], 0, 1, 'float32', 12), tf.truncatedNormal([3, 4], 0, 1, 'float32', 13)] },
  {
    name: 'sigmoidCrossEntropy loss',
    inputs: () => [uniform([6, 1], 41, -3, 3), tf.tensor2d([1, 0, 1, 1, 0, 0], [6, 1])],
    forward: (logits, labels) => tf.losses.sigmoidCrossEntropy(labels!, logits!),
    wrt: [0],
  },
  {
    name: 'sigmoidCrossEntropy with weights and label smoothing',
    inputs: () => [uniform([6, 1], 42, -3, 3), tf.tensor2d([1, 0, 1, 1, 0, 0], [6, 1]), uniform([6, 1], 43, 0, 1)],
    forward: (logits, labels, w) => tf.losses.sigmoidCrossEntropy(labels!, logits!, w!, 0.1),
    wrt: [0],
  },
  {
    name: 'softmaxCrossEntropy loss',
    inputs: () => [uniform([4, 5], 44, -3, 3), tf.oneHot(tf.tensor1d([0, 3, 2, 4], 'int32'), 5).toFloat()],
    forward: (logits, labels) => tf.losses.softmaxCrossEntropy(labels!, logits!),
    wrt: [0],
  },
  {
    name: 'meanSquaredError / huber / logLoss',
    inputs: () => [uniform([4, 5], 45), uniform([4, 5], 46, 0.1, 0.9)],
    forward: (a, p) => [tf.losses.meanSquaredError(tf.zerosLike(a!), a!), tf.losses.huberLoss(tf.zerosLike(a!), a!), tf.losses.logLoss(tf.onesLike(p!), p!)],
  },
  { name: 'norm (euclidean)', inputs: x45, forward: (a) => [tf.norm(a!), tf.norm(a!, 'euclidean', 1)] },
  { name: 'unsortedSegmentSum (op)', inputs: () => [uniform([7, 3], 47), tf.tensor1d([0, 2, 2, 1, 0, 4, 2], 'int32')], forward: (x, s) => tf.unsortedSegmentSum(x!, s! as tf.Tensor1D, 5) },
  { name: 'einsum', inputs: () => [uniform([4, 5], 48), uniform([5, 3], 49)], forward: (a, b) => tf.einsum('ij,jk->ik', a!, b!), wrt: [] },
  { name: 'conv1d (filter gradient)', inputs: () => [uniform([2, 6, 3], 50), uniform([3, 3, 4], 51)], forward: (x, f) => tf.conv1d(x! as tf.Tensor3D, f! as tf.Tensor3D, 1, 'same') },
  { name: 'depthwiseConv2d (gradients)', inputs: () => [uniform([1, 5, 5, 2], 52), uniform([3, 3, 2, 1], 53)], forward: (x, f) => tf.depthwiseConv2d(x! as tf.Tensor4D, f! as tf.Tensor4D, 1, 'same') },
];

describe('wasm op inventory: forward and gradients match the cpu backend', () => {
  it.each(inventory.map((c) => [c.name, c] as const))('%s', async (_name, c) => {
    const cpu = await runOp(c, 'cpu');
    const wasm = await runOp(c, 'wasm');
    expect(wasm.leaked).toBe(0);
    expect(cpu.leaked).toBe(0);
    expect(wasm.forward.length).toBeGreaterThan(0);
    expect(maxRelDiff(wasm.forward, cpu.forward)).toBeLessThanOrEqual(TOL);
    expect(wasm.grads.length).toBe(cpu.grads.length);
    expect(maxRelDiff(wasm.grads, cpu.grads)).toBeLessThanOrEqual(TOL);
  });
});

/**
 * A few training steps of a tiny GNN-shaped model (embedding gather → mean over fanout → dense → sigmoid
 * cross-entropy) with `tf.train.adam` and `tf.variableGrads`, from the same initial weights on both
 * backends: the updated weights must agree.
 */
async function trainSteps(backend: string): Promise<{ weights: number[][]; losses: number[]; leaked: number }> {
  await tf.setBackend(backend);
  const before = tf.memory().numTensors;
  // tf.variable keeps its initial tensor alive as a separate tensor: dispose it.
  const init = [uniform([20, 8], 60, -0.5, 0.5), uniform([16, 1], 61, -0.5, 0.5), tf.zeros([1])];
  const [emb, w, b] = init.map((t, i) => tf.variable(t, true, `v${i}_${backend}`)) as [tf.Variable, tf.Variable, tf.Variable];
  tf.dispose(init);
  // Typed as the base class: AdamOptimizer's own signature narrows applyGradients to variable maps.
  const opt: tf.Optimizer = tf.train.adam(0.05);
  const losses: number[] = [];
  const self = tf.tensor1d([0, 3, 5, 7, 9, 11], 'int32');
  const nbrs = ints([6 * 4], 62, 20);
  const labels = tf.tensor2d([1, 0, 1, 0, 1, 1], [6, 1]);
  const lossFn = (): tf.Scalar => {
    const h = tf.gather(emb, self);
    const agg = tf.mean(tf.reshape(tf.gather(emb, nbrs), [6, 4, 8]), 1);
    const logits = tf.add(tf.matMul(tf.concat([h, agg], 1), w), b);
    return tf.losses.sigmoidCrossEntropy(labels, logits) as tf.Scalar;
  };
  for (let step = 0; step < 3; step++) {
    const { value, grads } = tf.variableGrads(lossFn);
    losses.push(value.dataSync()[0]!);
    opt.applyGradients(grads);
    value.dispose();
    tf.dispose(Object.values(grads));
  }
  // minimize() is the other path trainers use.
  tf.dispose(opt.minimize(lossFn, true) ?? []);
  const weights = [emb, w, b].map((v) => Array.from(v.dataSync()));
  opt.dispose();
  tf.dispose([emb, w, b, self, nbrs, labels]);
  return { weights, losses, leaked: tf.memory().numTensors - before };
}

describe('training with adam and variableGrads', () => {
  it('gives the same losses and weights on wasm and cpu, without leaking tensors', async () => {
    const cpu = await trainSteps('cpu');
    const wasm = await trainSteps('wasm');
    expect(cpu.losses[2]!).toBeLessThan(cpu.losses[0]!);
    expect(maxRelDiff([wasm.losses], [cpu.losses])).toBeLessThanOrEqual(TOL);
    expect(maxRelDiff(wasm.weights, cpu.weights)).toBeLessThanOrEqual(TOL);
    expect(wasm.leaked).toBe(0);
    expect(cpu.leaked).toBe(0);
  });
});

describe('registered wasm kernels', () => {
  it('registers exactly the kernels the wasm backend lacks, and the faster GatherV2, idempotently', () => {
    const registered = registerWasmKernels();
    expect(registered).toEqual({ added: WASM_ADDED_KERNELS.map((k) => k.name), replaced: WASM_REPLACED_KERNELS.map((k) => k.name) });
    expect(registered.added).toEqual(['UnsortedSegmentSum', 'Einsum', 'Conv2DBackpropFilter', 'DepthwiseConv2dNativeBackpropFilter', 'DepthwiseConv2dNativeBackpropInput']);
    expect(registered.replaced).toEqual(['GatherV2']);
    expect(registerWasmKernels()).toEqual(registered);
    const wasm = new Set(tf.getKernelsForBackend('wasm').map((k) => k.kernelName));
    const cpuOnly = tf
      .getKernelsForBackend('cpu')
      .map((k) => k.kernelName)
      .filter((k) => !wasm.has(k))
      .sort();
    // What is left has no meaning on the wasm heap (complex64, strings, ragged, canvas).
    expect(cpuOnly).toEqual(
      ['Complex', 'ComplexAbs', 'Draw', 'FFT', 'IFFT', 'Imag', 'RaggedGather', 'RaggedRange', 'RaggedTensorToTensor', 'Real', 'StaticRegexReplace'].sort(),
    );
  });

  it('warns once per cpu-delegated kernel', async () => {
    takeWarnings();
    await tf.setBackend('wasm');
    tf.tidy(() => {
      tf.einsum('ij,jk->ik', tf.ones([2, 2]), tf.ones([2, 2]));
      tf.einsum('ij,jk->ik', tf.ones([2, 2]), tf.ones([2, 2]));
    });
    // Einsum may have warned already in the inventory above; it never warns twice.
    expect(takeWarnings().filter((w) => w.includes('Einsum')).length).toBeLessThanOrEqual(1);
  });
});

/** A plain-JS reference for unsorted segment sum (TensorFlow semantics; out-of-range ids dropped). */
function segmentSumReference(x: Float32Array, ids: Int32Array, inner: number, numSegments: number): Float64Array {
  const out = new Float64Array(numSegments * inner);
  for (let i = 0; i < ids.length; i++) {
    const s = ids[i]!;
    if (s < 0 || s >= numSegments) continue;
    for (let j = 0; j < inner; j++) out[s * inner + j]! += x[i * inner + j]!;
  }
  return out;
}

describe('GatherV2 on wasm', () => {
  it('rejects an out-of-range index with wasm\'s message and leaves no tensor behind', async () => {
    await tf.setBackend('wasm');
    const table = tf.ones([4, 2]);
    const idx = tf.tensor1d([0, 4], 'int32');
    const before = tf.memory().numTensors;
    expect(() => tf.gather(table, idx)).toThrow('GatherV2: the index value 4 is not in [0, 3]');
    expect(tf.memory().numTensors).toBe(before);
    tf.dispose([table, idx]);
  });

  it('copies int32 bit patterns exactly (no float round trip)', async () => {
    await tf.setBackend('wasm');
    const values = Int32Array.from([0x7fa00001, -1, 0x7f800001, 123456789]);
    const out = tf.tidy(() => tf.gather(tf.tensor1d(values, 'int32'), tf.tensor1d([2, 0, 3, 1], 'int32')).dataSync());
    expect(Array.from(out)).toEqual([0x7f800001, 0x7fa00001, 123456789, -1]);
  });
});

describe('UnsortedSegmentSum on wasm', () => {
  const cases: { name: string; rows: number; inner: number[]; segments: number; idRange: [number, number] }[] = [
    { name: 'rows=9 inner=[] segments=4', rows: 9, inner: [], segments: 4, idRange: [0, 4] },
    { name: 'rows=50 inner=[16] segments=7', rows: 50, inner: [16], segments: 7, idRange: [0, 7] },
    { name: 'rows=30 inner=[3,4] segments=5', rows: 30, inner: [3, 4], segments: 5, idRange: [0, 5] },
    // Negative ids are dropped (forward) and get a zero gradient; ids ≥ numSegments are not valid for
    // TF.js's gradient (it gathers with them), so the forward-only test below covers them.
    { name: 'rows=40 inner=[6] segments=5 with negative ids', rows: 40, inner: [6], segments: 5, idRange: [-2, 5] },
    { name: 'rows=0 inner=[4] segments=3', rows: 0, inner: [4], segments: 3, idRange: [0, 3] },
  ];

  it.each(cases.map((c) => [c.name, c] as const))('matches the cpu backend: %s', async (_n, c) => {
    const r = prng(c.rows * 31 + c.segments);
    const ids = Int32Array.from({ length: c.rows }, () => c.idRange[0] + Math.floor(r() * (c.idRange[1] - c.idRange[0])));
    const op: OpCase = {
      name: c.name,
      inputs: () => [uniform([c.rows, ...c.inner], 70), tf.tensor1d(ids, 'int32')],
      forward: (x, s) => tf.unsortedSegmentSum(x!, s! as tf.Tensor1D, c.segments),
    };
    const cpu = await runOp(op, 'cpu');
    const wasm = await runOp(op, 'wasm');
    expect(wasm.forward[0]!.length).toBe(c.segments * c.inner.reduce((a, b) => a * b, 1));
    expect(maxRelDiff(wasm.forward, cpu.forward)).toBeLessThanOrEqual(TOL);
    expect(maxRelDiff(wasm.grads, cpu.grads)).toBeLessThanOrEqual(TOL);
    expect(wasm.leaked).toBe(0);
  });

  it('drops ids ≥ numSegments like the cpu backend (forward)', async () => {
    const op: OpCase = {
      name: 'too-large ids',
      inputs: () => [uniform([6, 2], 71), tf.tensor1d([0, 3, 9, 1, 3, 4], 'int32')],
      forward: (x, s) => tf.unsortedSegmentSum(x!, s! as tf.Tensor1D, 4),
      wrt: [],
    };
    const cpu = await runOp(op, 'cpu');
    const wasm = await runOp(op, 'wasm');
    expect(maxRelDiff(wasm.forward, cpu.forward)).toBeLessThanOrEqual(TOL);
  });

  it('sums int32 values exactly', async () => {
    await tf.setBackend('wasm');
    const out = tf.tidy(() =>
      Array.from(tf.unsortedSegmentSum(tf.tensor2d([1, 2, 3, 4, 5, 6], [3, 2], 'int32'), tf.tensor1d([1, 0, 1], 'int32'), 3).dataSync()),
    );
    expect(out).toEqual([3, 4, 6, 8, 0, 0]);
  });

  it('gives the gradient of a 100k-row embedding lookup (the training hot path)', async () => {
    await tf.setBackend('wasm');
    const rows = 100_000;
    const dim = 16;
    const tableRows = 5_000;
    const r = prng(99);
    const idx = Int32Array.from({ length: rows }, () => Math.floor(r() * tableRows));
    const dyValues = new Float32Array(rows * dim);
    for (let i = 0; i < dyValues.length; i++) dyValues[i] = r() - 0.5;
    const expected = segmentSumReference(dyValues, idx, dim, tableRows);
    const before = tf.memory().numTensors;
    const got = tf.tidy(() => {
      const table = tf.zeros([tableRows, dim]);
      const dy = tf.tensor2d(dyValues, [rows, dim]);
      const indices = tf.tensor1d(idx, 'int32');
      // d/dtable Σ gather(table, idx) ⊙ dy = unsortedSegmentSum(dy, idx)
      const g = tf.grad((t: tf.Tensor) => tf.sum(tf.mul(tf.gather(t, indices), dy)))(table);
      return g.dataSync();
    });
    expect(tf.memory().numTensors).toBe(before);
    let worst = 0;
    for (let i = 0; i < expected.length; i++) worst = Math.max(worst, Math.abs(got[i]! - expected[i]!));
    // ≈20 float32 additions per entry: float32 accumulation stays far below 1e-5 here.
    expect(worst).toBeLessThan(1e-5);
  });
});
