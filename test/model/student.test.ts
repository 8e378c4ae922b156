/**
 * The TF.js student on hand-made inputs: masked RTI slots never matter (whatever they hold, wherever the
 * valid elements sit), an empty history gives a finite output, a missing embedding reads the fallback,
 * the ablation variants build and ignore what they leave out, and the parameter count leaves out the
 * categorical table.
 */
import { tf } from '../../src/core/tf.js';
import { beforeAll, describe, expect, it } from 'vitest';
import { selectBackend } from '../../src/compute/backend.js';
import type { StudentBatch } from '../../src/model/student/features.js';
import { headInputDim, type StudentSpec } from '../../src/model/student/spec.js';
import { StudentModel } from '../../src/model/student/student.js';
import { handStudentSpec, randomStudentBatch } from '../helpers/student.js';

beforeAll(async () => {
  await selectBackend('wasm');
});

const N = 6;
/** valid RTI elements per example: none, some, all */
const VALID = [3, 0, N, 1, 5, 0];

function logits(model: StudentModel, b: StudentBatch): Float32Array {
  const t = tf.tidy(() => model.forward(b, false));
  const v = (t.dataSync() as Float32Array).slice();
  t.dispose();
  return v;
}

function withModel<T>(spec: StudentSpec, fn: (m: StudentModel) => T): T {
  const m = new StudentModel(spec, 7, 0.1);
  try {
    return fn(m);
  } finally {
    m.dispose();
  }
}

describe('masked RTI slots change nothing', () => {
  const spec = handStudentSpec(N);
  const garbage: [string, { pad?: (j: number) => number; padCode?: (j: number) => number }][] = [
    ['±1e6 noise', { pad: (j) => Math.sin(j * 12.9898) * 1e6 }],
    ['1e30', { pad: () => 1e30 }],
    ['-1e30', { pad: () => -1e30 }],
    ['codes of real vocabulary entries', { padCode: (j) => 2 + (j % 6) }],
    ['noise and codes', { pad: (j) => Math.cos(j) * 1e3, padCode: (j) => j % 8 }],
  ];
  it.each(garbage)('padded slots holding %s: identical logits', (_, pad) => {
    withModel(spec, (m) => {
      const clean = logits(m, randomStudentBatch(spec, VALID));
      expect(logits(m, randomStudentBatch(spec, VALID, pad))).toEqual(clean);
    });
  });

  // at most N / 2 valid elements, so each slot pattern below puts them in distinct slots
  const FEW = [3, 0, 2, 1, 3, 0];
  it.each([
    ['last slots', (_: number, k: number) => N - 1 - k],
    ['every other slot from the end', (_: number, k: number) => N - 1 - 2 * k],
    ['slots shifted by the example index', (i: number, k: number) => (k + i) % N],
  ] as const)('valid elements in the %s (garbage elsewhere): the same logits within 1e-6', (_, slots) => {
    withModel(spec, (m) => {
      const clean = logits(m, randomStudentBatch(spec, FEW));
      const moved = logits(m, randomStudentBatch(spec, FEW, { slots, pad: (j) => j * 1e3, padCode: (j) => j % 8 }));
      FEW.forEach((v, i) => expect(Math.abs(moved[i]! - clean[i]!), `example ${i} (${v} valid)`).toBeLessThanOrEqual(1e-6));
    });
  });

  it('sequence length 0 (all masked, garbage in every slot): finite, equal to an explicitly empty history', () => {
    withModel(spec, (m) => {
      const none = VALID.map(() => 0);
      const empty = logits(m, randomStudentBatch(spec, none));
      const garbage = logits(m, randomStudentBatch(spec, none, { pad: (j) => Math.sin(j) * 1e6, padCode: (j) => j % 8 }));
      expect(Array.from(empty).every(Number.isFinite)).toBe(true);
      expect(garbage).toEqual(empty);
      // and the history matters when there is one
      const some = logits(m, randomStudentBatch(spec, none.map(() => 2)));
      expect(Math.max(...some.map((x, i) => Math.abs(x - empty[i]!)))).toBeGreaterThan(1e-6);
    });
  });

  it('a forward pass leaves no tensor behind', () => {
    withModel(spec, (m) => {
      const before = tf.memory().numTensors;
      logits(m, randomStudentBatch(spec, VALID));
      expect(tf.memory().numTensors).toBe(before);
    });
  });
});

describe('entity embeddings', () => {
  it('a missing embedding reads the fallback: its values change nothing, the fallback does', () => {
    const spec = handStudentSpec(N);
    withModel(spec, (m) => {
      const b = randomStudentBatch(spec, VALID);
      b.missing[0] = Float32Array.from(VALID, (_, i) => i % 2);
      const base = logits(m, b);
      const other = { ...b, emb: [b.emb[0]!.map((x, j) => (Math.floor(j / 4) % 2 ? x * 100 + 3 : x))] };
      expect(logits(m, other)).toEqual(base);
      m.params.get('emb0/fallback').assign(tf.fill([4], 0.7));
      const moved = logits(m, b);
      VALID.forEach((_, i) => (i % 2 ? expect(moved[i]).not.toBe(base[i]) : expect(moved[i]).toBe(base[i])));
    });
  });
});

describe('ablation variants', () => {
  const variants: [string, Partial<StudentSpec>, { emb: boolean; rti: boolean }][] = [
    ['full', {}, { emb: true, rti: true }],
    ['features_only', { use_embeddings: false, use_rti: false }, { emb: false, rti: false }],
    ['embedding_only', { use_rti: false }, { emb: true, rti: false }],
    ['rti_only', { use_embeddings: false }, { emb: false, rti: true }],
  ];
  it.each(variants)('%s: builds, gives finite logits [n], and ignores what it leaves out', (_, variant, reads) => {
    const spec = { ...handStudentSpec(N), ...variant };
    withModel(spec, (m) => {
      expect(m.params.get('head/w0').shape).toEqual([headInputDim(spec), 8]);
      const b = randomStudentBatch(spec, VALID);
      const base = logits(m, b);
      expect(base.length).toBe(VALID.length);
      expect(Array.from(base).every(Number.isFinite)).toBe(true);
      const embChanged = logits(m, { ...b, emb: b.emb.map((e) => e.map((x) => x + 1)), missing: b.missing.map((x) => x.map(() => 0)) });
      const rtiChanged = logits(m, { ...b, rtiNum: b.rtiNum.map((e) => e.map((x) => x * 2 + 1)) });
      expect(Array.from(embChanged).some((x, i) => x !== base[i])).toBe(reads.emb);
      expect(Array.from(rtiChanged).some((x, i) => x !== base[i])).toBe(reads.rti);
    });
  });
});

describe('parameter count', () => {
  it.each([8, 1000])('excludes the categorical table (categoricalSize %i)', (categoricalSize) => {
    const spec = handStudentSpec(N, { categorical_size: categoricalSize });
    withModel(spec, (m) => {
      expect(m.parameterCount()).toBe(m.params.count() - categoricalSize * spec.categorical_dim);
      withModel(handStudentSpec(N), (ref) => expect(m.parameterCount()).toBe(ref.parameterCount()));
    });
  });
});
