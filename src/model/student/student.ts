/**
 * The distilled model in TF.js: no graph traversal, only the request's own fields. Architecture and
 * formulas in `spec.ts`; the ONNX export mirrors `forward` op by op.
 *
 *   x = [fact numerics ‖ E_cat[fact codes] ‖ (P_k · emb_k + b_k ‖ missing_k)_k ‖ (mean_p ‖ attn_p ‖ count_p)_p]
 *   emb_k = missing_k ? fallback_k : E_k[key]
 *   h_el  = ReLU([elem numerics ‖ E_cat[elem codes]] · W_p + b_p)          per RTI element
 *   mean_p = Σ mask·h / max(1, Σ mask);  attn_p = Σ α·h, α = softmax([s ‖ −1e9]) with s = h·w_p + c_p (−1e9 where masked)
 *   count_p = log(1 + Σ mask) / log(1 + N_p)
 *   logit = W₃ ReLU(W₂ ReLU(W₁ x + b₁) + b₂) + b₃
 */
import { tf } from '../../core/tf.js';
import { ParamStore } from '../params.js';
import type { StudentBatch } from './features.js';
import { elementNumericDim, factNumericDim, headInputDim, type StudentSpec } from './spec.js';

export const MASKED_SCORE = -1e9;

export class StudentModel {
  readonly params: ParamStore;
  private dropoutSeed = 1;

  constructor(readonly spec: StudentSpec, seed: number, private readonly dropout = 0.1) {
    this.params = new ParamStore(seed);
    const p = this.params;
    p.normal('cat/emb', [Math.max(1, spec.categorical_size), spec.categorical_dim], 0.1);
    spec.embeddings.forEach((k, i) => {
      p.zeros(`emb${i}/fallback`, [k.dim]);
      p.glorot(`emb${i}/proj_w`, [k.dim, spec.proj_dim]);
      p.zeros(`emb${i}/proj_b`, [spec.proj_dim]);
    });
    spec.rti.forEach((r, i) => {
      p.glorot(`rti${i}/w`, [elementNumericDim(r) + r.categorical.length * spec.categorical_dim, spec.element_dim]);
      p.zeros(`rti${i}/b`, [spec.element_dim]);
      p.glorot(`rti${i}/att_w`, [spec.element_dim, 1]);
      p.zeros(`rti${i}/att_b`, [1]);
    });
    const dims = [headInputDim(spec), ...spec.hidden, 1];
    for (let l = 0; l < dims.length - 1; l++) {
      p.glorot(`head/w${l}`, [dims[l]!, dims[l + 1]!]);
      p.zeros(`head/b${l}`, [dims[l + 1]!]);
    }
  }

  /** Logits [n]. Call inside `tf.tidy`. */
  forward(b: StudentBatch, training: boolean): tf.Tensor1D {
    const s = this.spec;
    const p = (name: string): tf.Variable => this.params.get(name);
    const n = b.n;
    const parts: tf.Tensor2D[] = [tf.tensor2d(b.factNum, [n, factNumericDim(s)])];
    if (s.categorical.length) {
      parts.push(tf.gather(p('cat/emb'), tf.tensor1d(b.factCat, 'int32')).reshape([n, s.categorical.length * s.categorical_dim]));
    }
    if (s.use_embeddings) {
      s.embeddings.forEach((k, i) => {
        const m = tf.tensor2d(b.missing[i]!, [n, 1]);
        const e = tf.tensor2d(b.emb[i]!, [n, k.dim]).mul(tf.scalar(1).sub(m)).add(p(`emb${i}/fallback`).reshape([1, k.dim]).mul(m));
        parts.push(tf.matMul(e as tf.Tensor2D, p(`emb${i}/proj_w`)).add(p(`emb${i}/proj_b`)) as tf.Tensor2D, m);
      });
    }
    if (s.use_rti) {
      s.rti.forEach((r, i) => {
        const N = r.max_length;
        const ed = elementNumericDim(r);
        const kc = r.categorical.length;
        let x: tf.Tensor2D = tf.tensor2d(b.rtiNum[i]!, [n * N, ed]);
        if (kc) x = tf.concat([x, tf.gather(p('cat/emb'), tf.tensor1d(b.rtiCat[i]!, 'int32')).reshape([n * N, kc * s.categorical_dim])], 1);
        const mask = tf.tensor2d(b.rtiMask[i]!, [n, N]);
        const h = tf.relu(tf.matMul(x, p(`rti${i}/w`)).add(p(`rti${i}/b`))).reshape([n, N, s.element_dim]);
        const hm = h.mul(mask.reshape([n, N, 1]));
        const count = mask.sum(1, true);
        const mean = hm.sum(1).div(tf.maximum(count, 1)) as tf.Tensor2D;
        const score = tf.matMul(hm.reshape([n * N, s.element_dim]), p(`rti${i}/att_w`)).add(p(`rti${i}/att_b`)).reshape([n, N]);
        const masked = score.mul(mask).add(tf.scalar(1).sub(mask).mul(MASKED_SCORE));
        const alpha = tf.softmax(tf.concat([masked, tf.fill([n, 1], MASKED_SCORE)], 1)).slice([0, 0], [n, N]);
        const att = hm.mul(alpha.reshape([n, N, 1])).sum(1) as tf.Tensor2D;
        parts.push(mean, att, tf.log1p(count).div(Math.log1p(N)) as tf.Tensor2D);
      });
    }
    let x: tf.Tensor2D = tf.concat(parts, 1);
    const L = s.hidden.length;
    for (let l = 0; l <= L; l++) {
      x = tf.matMul(x, p(`head/w${l}`)).add(p(`head/b${l}`)) as tf.Tensor2D;
      if (l < L) {
        x = tf.relu(x);
        if (training && this.dropout > 0) x = tf.dropout(x, this.dropout, undefined, this.dropoutSeed++) as tf.Tensor2D;
      }
    }
    return x.reshape([n]) as tf.Tensor1D;
  }

  /** Scalar parameters, without the categorical embedding table (the fair count against the teacher). */
  parameterCount(): number {
    return this.params.count(/^cat\/emb$/);
  }

  dispose(): void {
    this.params.dispose();
  }
}
