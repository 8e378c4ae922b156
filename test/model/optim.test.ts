import { tf } from '../../src/core/tf.js';
import { beforeAll, describe, expect, it } from 'vitest';
import { selectBackend } from '../../src/compute/backend.js';
import { ParamStore } from '../../src/model/params.js';
import { Adam } from '../../src/model/optim.js';

beforeAll(async () => {
  await selectBackend('wasm');
});

describe('Adam', () => {
  it('takes the same steps as tf.train.adam with the same hyper-parameters, and returns the loss', () => {
    const target = tf.tensor2d([[1, -2], [3, 0.5]]);
    const loss = (w: tf.Variable) => () => tf.tidy(() => tf.sum(tf.square(w.sub(target))).add(tf.sum(w.mul(w).mul(w)).mul(0.1))) as tf.Scalar;
    const a = new ParamStore(3);
    const b = new ParamStore(3);
    const wa = a.normal('w', [2, 2], 1);
    const wb = b.normal('w', [2, 2], 1);
    const ours = new Adam(a.vars, 0.05, 0.9, 0.999, 1e-8);
    const ref = tf.train.adam(0.05, 0.9, 0.999, 1e-8);
    for (let step = 0; step < 20; step++) {
      const expectedLoss = loss(wa)().dataSync()[0]!;
      expect(ours.minimize(loss(wa))).toBeCloseTo(expectedLoss, 5);
      ref.minimize(loss(wb));
    }
    const x = wa.dataSync();
    const y = wb.dataSync();
    // float32 rounding differs (JS loop vs TF.js kernels): agree to 1e-4 after 20 steps
    for (let i = 0; i < 4; i++) expect(x[i]).toBeCloseTo(y[i]!, 4);
    ref.dispose();
    a.dispose();
    b.dispose();
    target.dispose();
  });

  it('a step leaves no tensor behind', () => {
    const p = new ParamStore(1);
    const w = p.glorot('w', [3, 3]);
    const opt = new Adam(p.vars, 0.01);
    opt.minimize(() => tf.sum(tf.square(w)) as tf.Scalar);
    const before = tf.memory().numTensors;
    for (let i = 0; i < 5; i++) opt.minimize(() => tf.sum(tf.square(w)) as tf.Scalar);
    expect(tf.memory().numTensors).toBe(before);
    p.dispose();
  });
});
