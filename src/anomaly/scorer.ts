/**
 * The seam between the detector and the runtime that reconstructs a snapshot: TF.js (the model that was
 * trained, what `fit` uses) or onnxruntime on the exported graph (`model/tagae.onnx`, what `score` and
 * `watch` use by default). Both take the current graph and the ring of past embeddings and return Â, X̂
 * and Z; they agree within 1e-4 (checked when `fit` writes the ONNX model, and in the tests).
 *
 * onnxruntime because scoring runs on every scrape: on a 500-service / 3,000-call snapshot TF.js (wasm)
 * takes p99 108 ms under load, onnxruntime a few ms (bench/anomaly.mjs).
 */
import * as ort from 'onnxruntime-node';
import { existsSync } from 'node:fs';
import { ArtifactError } from '../core/errors.js';
import { alignment, sameServices, type SnapshotGraph } from './graph.js';
import type { PastEmbedding, Reconstruction, Tagae, TagaeArgs } from './model.js';
import { tagaeOnnx } from './tagae_onnx.js';
import { denseAdjacency } from './adjacency.js';
import { weightMap } from '../artifacts/run_store.js';

export type ScorerRuntime = 'onnx' | 'tfjs';

/** The outputs of `tagae_onnx.ts` that stand in for the dense Â (absent from models fitted before them). */
const FACTORED_OUTPUTS = ['decoder_input', 'adjacency_row_sq', 'adjacency_col_sq', 'adjacency_row_max'];

export interface SnapshotScorer {
  readonly runtime: ScorerRuntime;
  reconstruct(now: SnapshotGraph, past: PastEmbedding[]): Promise<Reconstruction>;
  /** Frees the runtime's resources (the ONNX session); the TF.js weights belong to the run. */
  close(): Promise<void>;
}

/** TF.js: the trained model itself. */
export class TfjsScorer implements SnapshotScorer {
  readonly runtime = 'tfjs' as const;
  constructor(private readonly model: Tagae) {}
  reconstruct(now: SnapshotGraph, past: PastEmbedding[]): Promise<Reconstruction> {
    return Promise.resolve(this.model.reconstruct(now, past));
  }
  close(): Promise<void> {
    return Promise.resolve();
  }
}

/**
 * onnxruntime on the TAGAE graph of `tagae_onnx.ts`.
 *
 * It fetches Â as the decoder's factors H plus Â's row/column reductions, not the dense matrix:
 * onnxruntime-node copies every fetched output into a new ArrayBuffer (a pre-allocated output tensor is
 * written and then copied all the same), so fetching a 1 MB Â per 500-service scrape would cost a garbage
 * collection every ~30 snapshots, in the p99. A model without those outputs still gets the dense Â. The
 * returned arrays are the caller's (the ring keeps z).
 */
export class OnnxScorer implements SnapshotScorer {
  readonly runtime = 'onnx' as const;
  /** input buffers reused from one snapshot to the next while the service count stays the same */
  private buffers: { n: number; pastZ: Float32Array; fallback: Float32Array; mask: Float32Array } | null = null;
  /** whether the model has the factored outputs (models written before them do not) */
  private readonly factored: boolean;

  private constructor(
    private readonly session: ort.InferenceSession,
    private readonly args: TagaeArgs,
  ) {
    this.factored = FACTORED_OUTPUTS.every((name) => session.outputNames.includes(name));
  }

  /**
   * From a model file (a run's `model/tagae.onnx`) or model bytes. One intra-op thread: the graph is small,
   * and `watch` shares its machine with the services it watches.
   */
  static async open(model: string | Uint8Array, args: TagaeArgs): Promise<OnnxScorer> {
    if (typeof model === 'string' && !existsSync(model)) throw new ArtifactError(`no ONNX model at ${model}`, { hint: 'fit the run again, or score with --runtime tfjs' });
    const options: ort.InferenceSession.SessionOptions = { intraOpNumThreads: 1, interOpNumThreads: 1, graphOptimizationLevel: 'all' };
    const session = typeof model === 'string' ? await ort.InferenceSession.create(model, options) : await ort.InferenceSession.create(model, options);
    return new OnnxScorer(session, args);
  }

  /** From a trained model's weights (runs fitted before the ONNX export existed). */
  static fromModel(model: Tagae, metadata: Record<string, string> = {}): Promise<OnnxScorer> {
    return OnnxScorer.open(tagaeOnnx(model.args, weightMap(model.params.export()), metadata), model.args);
  }

  async reconstruct(now: SnapshotGraph, past: PastEmbedding[]): Promise<Reconstruction> {
    const { n } = now;
    const D = this.args.embeddingDim;
    const W = this.args.window;
    const P = Math.max(0, W - 1);
    if (this.buffers?.n !== n) this.buffers = { n, pastZ: new Float32Array(P * n * D), fallback: new Float32Array(P * n), mask: new Float32Array(W) };
    const { pastZ, fallback, mask } = this.buffers;
    pastZ.fill(0);
    fallback.fill(0);
    mask.fill(0);
    mask[0] = 1;
    let newServices = 0;
    past.slice(0, P).forEach((p, k) => {
      mask[k + 1] = 1;
      const base = k * n * D;
      // The usual case — the same services in the same order — is one block copy; next, every current
      // service existed then: a row copy (as model.ts's gather).
      if (sameServices(p.services, now.services)) {
        pastZ.set(p.z.subarray(0, n * D), base);
        return;
      }
      const rows = now.services.map((s) => p.index.get(s) ?? -1);
      if (rows.every((r) => r >= 0)) {
        rows.forEach((r, i) => pastZ.set(p.z.subarray(r * D, (r + 1) * D), base + i * D));
        return;
      }
      const al = alignment(now, p);
      newServices = Math.max(newServices, al.newServices);
      for (let i = 0; i < n; i++) {
        fallback[k * n + i] = al.fallback[i]!;
        const row = al.matrix.subarray(i * p.n, (i + 1) * p.n);
        for (let j = 0; j < p.n; j++) {
          const m = row[j]!;
          if (m === 0) continue;
          for (let c = 0; c < D; c++) pastZ[base + i * D + c]! += m * p.z[j * D + c]!;
        }
      }
    });
    const m = now.mpSrc.length;
    const E = now.mpAttr.length / Math.max(1, m);
    const feeds: Record<string, ort.Tensor> = {
      x: new ort.Tensor('float32', now.x, [n, this.args.featDim]),
      mp_src: new ort.Tensor('int32', now.mpSrc, [m]),
      mp_dst: new ort.Tensor('int32', now.mpDst, [m]),
      mp_attr: new ort.Tensor('float32', now.mpAttr, [m, E]),
      past: new ort.Tensor('float32', pastZ, [P, n, D]),
      past_fallback: new ort.Tensor('float32', fallback, [P, n, 1]),
      lag_mask: new ort.Tensor('float32', mask, [W]),
    };
    if (!this.factored) {
      const out = await this.session.run(feeds, ['adjacency', 'features', 'z']);
      return { adjacency: out.adjacency!.data as Float32Array, features: out.features!.data as Float32Array, z: out.z!.data as Float32Array, newServices };
    }
    const out = await this.session.run(feeds, ['features', 'z', ...FACTORED_OUTPUTS]);
    const data = (name: string): Float32Array => out[name]!.data as Float32Array;
    return {
      adjacency: { h: data('decoder_input'), dim: D },
      summary: { rowSq: data('adjacency_row_sq'), colSq: data('adjacency_col_sq'), rowMax: data('adjacency_row_max') },
      features: data('features'),
      z: data('z'),
      newServices,
    };
  }

  close(): Promise<void> {
    return this.session.release();
  }
}

/**
 * onnxruntime's answers, with TF.js run beside it on the first `checks` snapshots: `fit` scores its
 * warm-up this way, so a run whose ONNX model disagrees with the trained one is never written.
 */
export class CheckedScorer implements SnapshotScorer {
  readonly runtime = 'onnx' as const;
  /** largest |Δ| of Â, X̂ and Z over the checked snapshots */
  maxAbsDiff = 0;
  /** largest |Δ| / max(1, |TF.js value|): the figure the parity tolerance applies to (fp32 sums of
   * large activations differ in their last bits in proportion to their size) */
  maxRelDiff = 0;
  checked = 0;
  /** snapshots without call edges passed over: nothing of the graph path is exercised by them */
  skippedEmpty = 0;

  constructor(
    private readonly onnx: OnnxScorer,
    private readonly tfjs: TfjsScorer,
    private readonly checks: number,
  ) {}

  async reconstruct(now: SnapshotGraph, past: PastEmbedding[]): Promise<Reconstruction> {
    const b = await this.onnx.reconstruct(now, past);
    if (this.checked < this.checks && now.src.length === 0) this.skippedEmpty++;
    else if (this.checked < this.checks) {
      const a = await this.tfjs.reconstruct(now, past);
      for (const [x, y] of [[denseAdjacency(a.adjacency, now.n), denseAdjacency(b.adjacency, now.n)], [a.features, b.features], [a.z, b.z]] as const) {
        for (let i = 0; i < x.length; i++) {
          const d = Math.abs(x[i]! - y[i]!) || (Number.isNaN(y[i]!) ? Infinity : 0);
          this.maxAbsDiff = Math.max(this.maxAbsDiff, d);
          this.maxRelDiff = Math.max(this.maxRelDiff, d / Math.max(1, Math.abs(x[i]!)));
        }
      }
      this.checked++;
    }
    return b;
  }

  close(): Promise<void> {
    return this.onnx.close();
  }
}
