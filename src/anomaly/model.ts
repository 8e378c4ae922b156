/**
 * TAGAE: the temporal-attentive graph autoencoder that scores service-mesh snapshots.
 *
 *     Z^(k) = GATv2_2( ELU( GATv2_1(X^(k), E^(k)) ), E^(k) )     per snapshot k = 0 … W−1 (0 = now)   [n_k, D]
 *     Z̃^(k) = M_k Z^(k) + f_k ⊙ Z^(0)                              aligned to today's services          [n, D]
 *     H     = TemporalAttention(Z^(0), Z̃^(1), …, Z̃^(W−1))                                               [n, D]
 *     Â     = sigmoid(H_src H_dstᵀ),   X̂ = H W_x + b_x                                                   [n, n], [n, F]
 *
 * (M_k, f_k: see `alignment` in graph.ts.) Training minimises, on snapshots of the period taken as normal,
 *
 *     L = α · mean_{(i,j) ∈ P} (Â_ij − A_ij)² + (1 − α) · mean (X̂ − X)²
 *
 * where A_ij is the share of i's calls that go to j (0 for a non-edge) and P is every observed edge plus
 * `negative_ratio` sampled non-edges per edge — or every ordered pair when the snapshot has at most
 * `all_pairs_max_nodes` services. The W snapshots of one step are encoded together as one block-diagonal
 * graph, so a step is one pass of each GATv2 layer however long the window is.
 */
import { tf } from '../core/tf.js';
import { Rng } from '../core/rng.js';
import { alignment, edgeDim, type SnapshotGraph } from './graph.js';
import { GatV2Conv } from './layers/gatv2.js';
import { InnerProductDecoder } from './layers/inner_product_decoder.js';
import { Params } from './layers/params.js';
import { TemporalAttention } from './layers/temporal_attention.js';

export interface TagaeArgs {
  featDim: number;
  /** standardised edge columns beyond share / direction / self-loop */
  edgeExtra: number;
  hidden: number;
  heads: number;
  embeddingDim: number;
  window: number;
  structureWeight: number;
  negativeRatio: number;
  allPairsMaxNodes: number;
  seed: number;
}

/** A past snapshot's embeddings, keyed by service (what the scorer keeps between snapshots). */
export interface PastEmbedding {
  ts: number;
  services: string[];
  index: Map<string, number>;
  n: number;
  z: Float32Array;
}

/**
 * Row and column reductions of Â that the detector's per-service errors need. onnxruntime computes them
 * inside the graph (`tagae_onnx.ts`); without them (TF.js, a model file written before they existed) the
 * detector computes them in JS (`summariseAdjacency` in adjacency.ts).
 */
export interface AdjacencySummary {
  /** [n] Σ_j Â_ij² over every column, the diagonal included */
  rowSq: Float32Array | Float64Array;
  /** [n] Σ_i Â_ij² over every row, the diagonal included */
  colSq: Float32Array | Float64Array;
  /** [n] max_j Â_ij, the diagonal included */
  rowMax: Float32Array | Float64Array;
}

/**
 * Â as the inner-product decoder's factors: Â_ij = sigmoid(H_i,src · H_j,dst) with H [n × dim], the source
 * half of each row first. What onnxruntime hands the detector instead of the dense [n × n] matrix, which
 * the detector reads only at the observed pairs and in a few rows (`adjacencyAtPairs` / `adjacencyRow`
 * in adjacency.ts; `denseAdjacency` builds the matrix for checks).
 */
export interface FactoredAdjacency {
  h: Float32Array;
  dim: number;
}

export interface Reconstruction {
  /** [n × n] predicted shares, dense or as the decoder's factors */
  adjacency: Float32Array | FactoredAdjacency;
  summary?: AdjacencySummary;
  /** [n × F] */
  features: Float32Array;
  /** [n × D] this snapshot's GATv2 embedding (before temporal attention), kept for later snapshots */
  z: Float32Array;
  newServices: number;
}

export class Tagae {
  readonly params: Params;
  private readonly gat1: GatV2Conv;
  private readonly gat2: GatV2Conv;
  private readonly temporal: TemporalAttention;
  private readonly decoder: InnerProductDecoder;
  private readonly rng: Rng;

  constructor(readonly args: TagaeArgs) {
    const root = new Rng(args.seed);
    this.params = new Params(root.fork(1));
    this.rng = root.fork(2);
    const ed = edgeDim(args.edgeExtra);
    this.gat1 = new GatV2Conv(this.params, 'gat1', { inDim: args.featDim, edgeDim: ed, heads: args.heads, channels: args.hidden, concat: true });
    this.gat2 = new GatV2Conv(this.params, 'gat2', { inDim: args.heads * args.hidden, edgeDim: ed, heads: args.heads, channels: args.embeddingDim, concat: false });
    this.temporal = new TemporalAttention(this.params, 'temporal', { dim: args.embeddingDim, keyDim: Math.max(4, args.embeddingDim / 2), window: args.window });
    this.decoder = new InnerProductDecoder(this.params, 'decoder', args.embeddingDim, args.featDim);
  }

  /** Z for each graph, encoded as one block-diagonal batch. */
  encode(graphs: SnapshotGraph[]): tf.Tensor2D[] {
    const F = this.args.featDim;
    const ed = edgeDim(this.args.edgeExtra);
    const nTot = graphs.reduce((a, g) => a + g.n, 0);
    const mTot = graphs.reduce((a, g) => a + g.mpSrc.length, 0);
    const x = new Float32Array(nTot * F);
    const src = new Int32Array(mTot);
    const dst = new Int32Array(mTot);
    const attr = new Float32Array(mTot * ed);
    let no = 0;
    let mo = 0;
    for (const g of graphs) {
      x.set(g.x, no * F);
      attr.set(g.mpAttr, mo * ed);
      for (let e = 0; e < g.mpSrc.length; e++) {
        src[mo + e] = g.mpSrc[e]! + no;
        dst[mo + e] = g.mpDst[e]! + no;
      }
      no += g.n;
      mo += g.mpSrc.length;
    }
    return tf.tidy(() => {
      const s = tf.tensor1d(src, 'int32');
      const d = tf.tensor1d(dst, 'int32');
      const a = tf.tensor2d(attr, [mTot, ed]);
      const h = tf.elu(this.gat1.apply(tf.tensor2d(x, [nTot, F]), s, d, a)) as tf.Tensor2D;
      const z = this.gat2.apply(h, s, d, a);
      // slice rather than split: split's gradient (a concat) fails when some parts receive no gradient.
      let off = 0;
      return graphs.map((g) => {
        const part = z.slice([off, 0], [g.n, -1]) as tf.Tensor2D;
        off += g.n;
        return part;
      });
    });
  }

  /** H for the current graph from its Z and the (aligned) past embeddings, newest first. */
  represent(now: SnapshotGraph, z0: tf.Tensor2D, past: { z: tf.Tensor2D; index: Map<string, number>; n: number }[]): { h: tf.Tensor2D; newServices: number } {
    let newServices = 0;
    const h = tf.tidy(() => {
      const aligned: tf.Tensor2D[] = [z0];
      for (const p of past.slice(0, this.args.window - 1)) {
        // The common case — every current service existed then — is a row gather; only snapshots with
        // new services need the [n_now × n_past] alignment matrix.
        const rows = now.services.map((s) => p.index.get(s) ?? -1);
        if (rows.every((r) => r >= 0)) {
          aligned.push(tf.gather(p.z, tf.tensor1d(rows, 'int32')) as tf.Tensor2D);
          continue;
        }
        const al = alignment(now, p);
        newServices = Math.max(newServices, al.newServices);
        const m = tf.tensor2d(al.matrix, [now.n, p.n]);
        aligned.push(tf.add(tf.matMul(m, p.z), tf.mul(tf.tensor2d(al.fallback, [now.n, 1]), z0)) as tf.Tensor2D);
      }
      return this.temporal.apply((aligned.length === 1 ? aligned[0]!.expandDims(0) : tf.stack(aligned)) as tf.Tensor3D);
    });
    return { h, newServices };
  }

  /** Reconstruction pairs and targets for one training step. */
  private pairs(g: SnapshotGraph): { src: Int32Array; dst: Int32Array; target: Float32Array } {
    const n = g.n;
    const E = g.src.length;
    const edge = new Map<number, number>();
    for (let e = 0; e < E; e++) edge.set(g.src[e]! * n + g.dst[e]!, g.share[e]!);
    if (n <= this.args.allPairsMaxNodes) {
      const P = n * (n - 1);
      const src = new Int32Array(P);
      const dst = new Int32Array(P);
      const target = new Float32Array(P);
      let p = 0;
      for (let i = 0; i < n; i++) {
        for (let j = 0; j < n; j++) {
          if (i === j) continue;
          src[p] = i;
          dst[p] = j;
          target[p++] = edge.get(i * n + j) ?? 0;
        }
      }
      return { src, dst, target };
    }
    const neg = Math.min(this.args.negativeRatio * E, n * (n - 1) - E);
    const src = new Int32Array(E + neg);
    const dst = new Int32Array(E + neg);
    const target = new Float32Array(E + neg);
    src.set(g.src);
    dst.set(g.dst);
    target.set(g.share);
    for (let k = E; k < E + neg; ) {
      const i = this.rng.int(n);
      const j = this.rng.int(n);
      if (i === j || edge.has(i * n + j)) continue;
      src[k] = i;
      dst[k++] = j;
    }
    return { src, dst, target };
  }

  /**
   * One optimiser step on `window` = [now, previous, …] (newest first); returns the loss.
   *
   * With a `bank` (snapshot key → its last computed Z), past snapshots are not re-encoded with
   * gradients: their embeddings come from the bank — computed when that snapshot was last the current
   * one, so at most an epoch stale — as GNNAutoScale's historical embeddings (Fey et al., ICML 2021)
   * do. Gradients flow through the current snapshot's encoder pass and the temporal attention. On 200
   * services with W = 6 this cut a step from ~250 ms to ~55 ms.
   */
  trainStep(optimizer: tf.Optimizer, window: SnapshotGraph[], bank?: Map<SnapshotGraph, Float32Array>): number {
    const now = window[0]!;
    const pr = this.pairs(now);
    const a = this.args.structureWeight;
    const D = this.args.embeddingDim;
    if (bank) {
      const missing = window.slice(1).filter((g) => !bank.has(g));
      if (missing.length) {
        const zs = this.encode(missing);
        missing.forEach((g, k) => bank.set(g, zs[k]!.dataSync() as Float32Array));
        tf.dispose(zs);
      }
    }
    let kept: tf.Tensor2D | undefined;
    const loss = optimizer.minimize(
      () => {
        const zs = bank ? this.encode([now]) : this.encode(window);
        const past = window.slice(1).map((g, k) => ({ z: bank ? tf.tensor2d(bank.get(g)!, [g.n, D]) : zs[k + 1]!, index: g.index, n: g.n }));
        if (bank) kept = tf.keep(zs[0]!.clone());
        const { h } = this.represent(now, zs[0]!, past);
        const pred = this.decoder.pairs(h, tf.tensor1d(pr.src, 'int32'), tf.tensor1d(pr.dst, 'int32'));
        const ls = tf.mean(tf.squaredDifference(pred, tf.tensor1d(pr.target)));
        const lf = tf.mean(tf.squaredDifference(this.decoder.features(h), tf.tensor2d(now.x, [now.n, this.args.featDim])));
        return tf.add(tf.mul(ls, a), tf.mul(lf, 1 - a)) as tf.Scalar;
      },
      true,
      this.params.list(),
    );
    if (bank && kept) {
      bank.set(now, kept.dataSync() as Float32Array);
      kept.dispose();
    }
    const v = loss!.dataSync()[0]!;
    loss!.dispose();
    return v;
  }

  /** Reconstructs one snapshot given the embeddings of earlier ones (newest first). */
  reconstruct(now: SnapshotGraph, past: PastEmbedding[]): Reconstruction & { adjacency: Float32Array } {
    const [z0] = this.encode([now]);
    const pastT = past.slice(0, this.args.window - 1).map((p) => ({ z: tf.tensor2d(p.z, [p.n, this.args.embeddingDim]), index: p.index, n: p.n }));
    try {
      const { h, newServices } = this.represent(now, z0!, pastT);
      const adj = this.decoder.dense(h);
      const feat = this.decoder.features(h);
      const out = { adjacency: adj.dataSync() as Float32Array, features: feat.dataSync() as Float32Array, z: z0!.dataSync() as Float32Array, newServices };
      tf.dispose([h, adj, feat]);
      return out;
    } finally {
      tf.dispose([z0!, ...pastT.map((p) => p.z)]);
    }
  }
}
