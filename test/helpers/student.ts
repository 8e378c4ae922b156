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
    fact_table: 'transactions',
    time_column: 't_dat',
    primary_key: { column: 'transaction_id', target: 'transactions', type: 'BIGINT' },
    numeric: [{ column: 'price', mean: 0.03, std: 0.01, type: 'DOUBLE' }],
    categorical: [{ column: 'channel', vocab: ['web', 'store'], type: 'VARCHAR', offset: 0 }],
    categorical_size: 8,
    categorical_dim: 3,
    embeddings: [{ column: 'customer_id', target: 'customers', type: 'VARCHAR', dim: 4 }],
    rti: [
      {
        path: RTI_PATH,
        child_table: 'transactions',
        child_key: 'customer_id',
        fact_key: 'customer_id',
        max_length: maxLength,
        time_column: 't_dat',
        numeric: [{ column: 'price', mean: 0.03, std: 0.01, type: 'DOUBLE' }],
        categorical: [{ column: 'channel', vocab: ['web', 'store'], type: 'VARCHAR', offset: 4 }],
        ratios: ['price'],
        same_keys: [{ column: 'article_id', target: 'articles', type: 'VARCHAR' }],
      },
    ],
    proj_dim: 4,
    element_dim: 5,
    hidden: [8, 4],
    use_embeddings: true,
    use_rti: true,
    output: { kind: 'binary', label_mean: 0, label_std: 1 },
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
    const N = r.max_length;
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
