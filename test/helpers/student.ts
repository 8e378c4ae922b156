/**
 * A hand-written student spec (one numeric and one text-categorical fact column, one entity embedding,
 * one RTI path with a numeric, a categorical, a log-ratio and a same-entity feature) and random inputs in
 * the layout `StudentFeatures.batch` produces, for tests of the TF.js student without a graph.
 */
import type { StudentBatch } from '../../src/model/student/features.js';
import { elementNumericDim, factNumericDim, type StudentSpec } from '../../src/model/student/spec.js';
import { Rng } from '../../src/core/rng.js';
import { RTI_PATH } from './pipeline.js';

export function handStudentSpec(maxLength = 6, overrides: Partial<StudentSpec> = {}): StudentSpec {
  return {
    task: 'fraud',
    factTable: 'transactions',
    timeColumn: 't_dat',
    primaryKey: { column: 'transaction_id', target: 'transactions', type: 'BIGINT' },
    numeric: [{ column: 'price', mean: 0.03, std: 0.01, type: 'DOUBLE' }],
    categorical: [{ column: 'channel', vocab: ['web', 'store'], type: 'VARCHAR', offset: 0 }],
    categoricalSize: 8,
    categoricalDim: 3,
    embeddings: [{ column: 'customer_id', target: 'customers', type: 'VARCHAR', dim: 4 }],
    rti: [
      {
        path: RTI_PATH,
        childTable: 'transactions',
        childKey: 'customer_id',
        factKey: 'customer_id',
        maxLength,
        timeColumn: 't_dat',
        numeric: [{ column: 'price', mean: 0.03, std: 0.01, type: 'DOUBLE' }],
        categorical: [{ column: 'channel', vocab: ['web', 'store'], type: 'VARCHAR', offset: 4 }],
        ratios: ['price'],
        sameKeys: [{ column: 'article_id', target: 'articles', type: 'VARCHAR' }],
      },
    ],
    projDim: 4,
    elementDim: 5,
    hidden: [8, 4],
    useEmbeddings: true,
    useRti: true,
    output: { kind: 'binary', labelMean: 0, labelStd: 1 },
    ...overrides,
  };
}

/**
 * Random student inputs: `valid[i]` RTI elements for example i in slots `slots(i, k)` (default the first
 * ones), every other slot masked and filled by `pad` (numeric features) and `padCode` (categorical codes).
 */
export function randomStudentBatch(
  spec: StudentSpec,
  valid: number[],
  opts: { seed?: number; slots?: (i: number, k: number) => number; pad?: (j: number) => number; padCode?: (j: number) => number } = {},
): StudentBatch {
  const rng = new Rng(opts.seed ?? 1);
  const n = valid.length;
  const fd = factNumericDim(spec);
  const kc = spec.categorical.length;
  const codeOf = (offset: number, vocab: number) => offset + rng.int(vocab + 2);
  const batch: StudentBatch = {
    n,
    factNum: Float32Array.from({ length: n * fd }, () => rng.normal()),
    factCat: Int32Array.from({ length: n * kc }, (_, j) => codeOf(spec.categorical[j % kc]!.offset, spec.categorical[j % kc]!.vocab.length)),
    emb: spec.embeddings.map((k) => Float32Array.from({ length: n * k.dim }, () => rng.normal())),
    missing: spec.embeddings.map(() => Float32Array.from({ length: n }, () => (rng.next() < 0.3 ? 1 : 0))),
    rtiNum: [],
    rtiCat: [],
    rtiMask: [],
  };
  for (const r of spec.rti) {
    const N = r.maxLength;
    const ed = elementNumericDim(r);
    const rc = r.categorical.length;
    const num = Float32Array.from({ length: n * N * ed }, (_, j) => (opts.pad ? opts.pad(j) : 0));
    const cat = Int32Array.from({ length: n * N * rc }, (_, j) => (opts.padCode ? opts.padCode(j) : 0));
    const mask = new Float32Array(n * N);
    for (let i = 0; i < n; i++) {
      for (let k = 0; k < valid[i]!; k++) {
        const s = i * N + (opts.slots ? opts.slots(i, k) : k);
        mask[s] = 1;
        for (let d = 0; d < ed; d++) num[s * ed + d] = rng.normal();
        for (let c = 0; c < rc; c++) cat[s * rc + c] = codeOf(r.categorical[c]!.offset, r.categorical[c]!.vocab.length);
      }
    }
    batch.rtiNum.push(num);
    batch.rtiCat.push(cat);
    batch.rtiMask.push(mask);
  }
  return batch;
}
