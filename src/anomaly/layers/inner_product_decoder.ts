/**
 * Inner-product decoders of the graph autoencoder (Kipf & Welling, "Variational Graph Auto-Encoders",
 * 2016) and an attribute decoder (as in DOMINANT, Ding et al., SDM 2019).
 *
 * Calls are directed, and Z·Zᵀ is symmetric, so Z is split into a source half and a destination half:
 *
 *     Â_ij = sigmoid( z_i^src · z_j^dst )      the predicted share of i's outgoing calls that go to j
 *     X̂    = Z W_x + b_x                        the reconstructed (standardised) node features
 *
 * Shapes: z [n, dim] (dim even); pairs src/dst int32 [p] → [p]; dense → [n, n]; features → [n, featDim].
 */
import { tf } from '../../core/tf.js';
import type { Params } from './params.js';

export class InnerProductDecoder {
  private readonly wx: tf.Variable;
  private readonly bx: tf.Variable;

  constructor(params: Params, name: string, readonly dim: number, readonly featDim: number) {
    if (dim % 2 !== 0) throw new Error(`inner-product decoder: dim must be even (got ${dim})`);
    this.wx = params.glorot(`${name}.w_x`, [dim, featDim]);
    this.bx = params.zeros(`${name}.b_x`, [featDim]);
  }

  private halves(z: tf.Tensor2D): [tf.Tensor2D, tf.Tensor2D] {
    const h = this.dim / 2;
    return [z.slice([0, 0], [-1, h]), z.slice([0, h], [-1, h])];
  }

  pairs(z: tf.Tensor2D, src: tf.Tensor1D, dst: tf.Tensor1D): tf.Tensor1D {
    return tf.tidy(() => {
      const [zs, zd] = this.halves(z);
      return tf.sigmoid(tf.sum(tf.mul(tf.gather(zs, src), tf.gather(zd, dst)), -1)) as tf.Tensor1D;
    });
  }

  dense(z: tf.Tensor2D): tf.Tensor2D {
    return tf.tidy(() => {
      const [zs, zd] = this.halves(z);
      return tf.sigmoid(tf.matMul(zs, zd, false, true));
    });
  }

  features(z: tf.Tensor2D): tf.Tensor2D {
    return tf.tidy(() => tf.add(tf.matMul(z, this.wx), this.bx) as tf.Tensor2D);
  }
}
