/**
 * TAGAE's forward pass as an ONNX model (what `anomaly fit` writes to `model/tagae.onnx` and `anomaly
 * score|watch` run with onnxruntime): the same formulas as `model.ts` and its layers, op for op.
 *
 * Inputs (n services, m message-passing edges, W the window, P = W − 1 past lags, D embedding width):
 *
 *     x              FLOAT [n, F]      standardised node features
 *     mp_src, mp_dst INT32 [m]         message-passing edges j → i (self-loops included)
 *     mp_attr        FLOAT [m, E]      their edge features
 *     past           FLOAT [P, n, D]   past embeddings aligned to today's services (zeros for a missing lag)
 *     past_fallback  FLOAT [P, n, 1]   1 where a service has no history at that lag (it takes its current Z)
 *     lag_mask       FLOAT [W]         1 for the lags present (lag 0 always), 0 for missing ones
 *
 * Outputs: `adjacency` [n, n] (Â), `features` [n, F] (X̂), `z` [n, D] (this snapshot's GATv2 embedding),
 * `decoder_input` [n, D] (H, whose halves are Â's factors), and Â's reductions the detector's errors
 * need — `adjacency_row_sq`, `adjacency_col_sq` [n] (Σ Â² per row and column) and `adjacency_row_max` [n].
 * The scorer fetches H and the reductions rather than Â: onnxruntime-node copies every fetched output
 * into a fresh ArrayBuffer, and a 1 MB Â per 500-service scrape set off an "external memory pressure"
 * garbage collection every ~30 snapshots; the reductions are vectorised passes over Â while it is in
 * cache, where the same walk in JS was a fifth of a snapshot's time.
 *
 * The past is fixed at W − 1 lags with a mask rather than a variable length, so one graph serves the
 * start of a series too: a masked lag's logit gets −1e9, whose exp is exactly 0, so the softmax equals
 * TF.js's over the present lags only. The alignment of past embeddings (a row gather, or for new services
 * the neighbour mean of `graph.ts`) stays in JS: it is data-dependent bookkeeping, not arithmetic.
 *
 * Segment sums are ScatterND with reduction "add" (ai.onnx 16+; the project's opset, DEFAULT_OPSET, is
 * 17). Written with gnnctl's one ONNX writer (`artifacts/onnx`), which checks every node's inputs exist.
 */
import { attr, ElemType, OnnxGraphBuilder } from '../artifacts/onnx/index.js';
import { edgeDim } from './graph.js';
import type { TagaeArgs } from './model.js';

/** What a masked lag adds to its attention logit. */
const MASKED = -1e9;

/** The ONNX model of a TAGAE with these settings and weights (names as `Params` stores them). */
export function tagaeOnnx(args: TagaeArgs, weights: Map<string, Float32Array>, metadata: Record<string, string> = {}): Uint8Array {
  const w = (name: string): Float32Array => {
    const v = weights.get(name);
    if (!v) throw new Error(`tagae onnx: the weights lack ${name}`);
    return v;
  };
  const g = new OnnxGraphBuilder({ graphName: 'tagae', docString: 'gnnctl TAGAE anomaly scorer: GATv2 ×2, temporal attention, inner-product and feature decoders' });
  for (const [key, value] of Object.entries(metadata)) g.setMetadata(key, value);
  const floats = (name: string, data: Float32Array | number[], dims: number[]): string => g.addInitializer(name, data instanceof Float32Array ? data : Float32Array.from(data), dims);
  const ints = (name: string, data: number[]): string => g.addInitializer(name, BigInt64Array.from(data, (v) => BigInt(v)), [data.length]);
  /** A node whose output is the declared graph output `name` (written in place: no Identity copy). */
  const into = (name: string, opType: string, inputs: string[], attributes?: Parameters<typeof g.op>[2]): string => g.addNode(opType, inputs, [name], { attributes })[0]!;
  const F = args.featDim;
  const E = edgeDim(args.edgeExtra);
  const D = args.embeddingDim;
  const W = args.window;
  const dk = Math.max(4, D / 2);
  const P = Math.max(0, W - 1);
  g.addInput('x', 'FLOAT', ['n', F]);
  g.addInput('mp_src', 'INT32', ['m']);
  g.addInput('mp_dst', 'INT32', ['m']);
  g.addInput('mp_attr', 'FLOAT', ['m', E]);
  g.addInput('past', 'FLOAT', [P, 'n', D]);
  g.addInput('past_fallback', 'FLOAT', [P, 'n', 1]);
  g.addInput('lag_mask', 'FLOAT', [W]);
  g.addOutput('adjacency', 'FLOAT', ['n', 'n']);
  g.addOutput('features', 'FLOAT', ['n', F]);

  const src = 'mp_src';
  const dst = 'mp_dst';
  // Gather takes the INT32 indices as they come; ScatterND wants INT64 ones.
  const dstIdx = g.op('Cast', [g.op('Unsqueeze', [dst, ints('axes_1', [1])])], { to: attr.int(ElemType.INT64) }); // [m, 1]
  const nRows = g.op('Slice', [g.op('Shape', ['x']), ints('zero_1', [0]), ints('one_1', [1])]); // [n]
  const zeros = (cols: number, tag: string): string => g.op('ConstantOfShape', [g.op('Concat', [nRows, ints(`${tag}.cols`, [cols])], { axis: attr.int(0) })]);
  const one = floats('one_f', [1], []);
  const ones = g.op('Add', [zeros(1, 'ones'), one]); // [n, 1]

  /** One GATv2Conv (layers/gatv2.ts). */
  const gatv2 = (x: string, name: string, inDim: number, heads: number, channels: number, concat: boolean): string => {
    const hc = heads * channels;
    const ws = floats(`${name}.w_s`, w(`${name}.w_s`), [inDim, hc]);
    const wt = floats(`${name}.w_t`, w(`${name}.w_t`), [inDim, hc]);
    const we = floats(`${name}.w_e`, w(`${name}.w_e`), [E, hc]);
    // a^h · g^h for every head at once: one MatMul with the block-diagonal [H·C, H] matrix of the att
    // vectors, instead of a broadcast Mul and a ReduceSum over [m, H, C] (two more passes over the edges).
    const attW = w(`${name}.att`);
    const block = new Float32Array(hc * heads);
    for (let h = 0; h < heads; h++) for (let c = 0; c < channels; c++) block[(h * channels + c) * heads + h] = attW[h * channels + c]!;
    const att = floats(`${name}.att_block`, block, [hc, heads]);
    const bias = floats(`${name}.bias`, w(`${name}.bias`), [concat ? hc : channels]);
    const xs = g.op('MatMul', [x, ws]);
    const xt = g.op('MatMul', [x, wt]);
    const xsj = g.op('Gather', [xs, src], { axis: attr.int(0) });
    const pre = g.op('Add', [g.op('Add', [g.op('Gather', [xt, dst], { axis: attr.int(0) }), xsj]), g.op('MatMul', ['mp_attr', we])]);
    const raw = g.op('MatMul', [g.op('LeakyRelu', [pre], { alpha: attr.float(0.2) }), att]); // [m, H]
    const thirty = floats(`${name}.thirty`, [30], []);
    const logits = g.op('Mul', [g.op('Tanh', [g.op('Div', [raw, thirty])]), thirty]);
    const ex = g.op('Exp', [logits]);
    const eps = floats(`${name}.eps`, [1e-16], []);
    if (inDim + 1 < channels) {
      // Σ_j α_ij W_s^h x_j = W_s^h Σ_j α_ij x_j: with fewer input features than channels (layer 1: 8
      // against 32) the messages are aggregated as inputs and W_s applied once per node. Each head's x_j
      // carries a trailing 1, so the one ScatterND also sums the softmax denominators: the per-edge Mul and
      // ScatterND run over H·(F+1) columns instead of H·C, and the denominators' own ScatterND goes.
      const w1 = inDim + 1;
      const x1 = g.op('Concat', [x, ones], { axis: attr.int(1) }); // [n, F+1]
      const xx = heads > 1 ? g.op('Concat', Array.from({ length: heads }, () => x1), { axis: attr.int(1) }) : x1; // [n, H(F+1)]
      const spread1 = new Float32Array(heads * heads * w1);
      for (let h = 0; h < heads; h++) for (let c = 0; c < w1; c++) spread1[h * heads * w1 + h * w1 + c] = 1;
      const msg1 = g.op('Mul', [g.op('Gather', [xx, src], { axis: attr.int(0) }), g.op('MatMul', [ex, floats(`${name}.spread_in`, spread1, [heads, heads * w1])])]); // [m, H(F+1)]
      const agg1 = g.op('Reshape', [g.op('ScatterND', [zeros(heads * w1, `${name}.agg_in`), dstIdx, msg1], { reduction: attr.string('add') }), ints(`${name}.shape_nhw`, [-1, heads, w1])]); // [n, H, F+1]
      const axis2 = ints(`${name}.axis_2`, [2]);
      const num = g.op('Slice', [agg1, ints(`${name}.from_0`, [0]), ints(`${name}.to_f`, [inDim]), axis2]);
      const den = g.op('Slice', [agg1, ints(`${name}.from_f`, [inDim]), ints(`${name}.to_f1`, [w1]), axis2]);
      const flat1 = g.op('Reshape', [g.op('Div', [num, g.op('Add', [den, eps])]), ints(`${name}.shape_nhf`, [-1, heads * inDim])]); // [n, H·F]
      // W_s for all heads as one matrix: block-diagonal [H·F, H·C] (concat) or the heads' W_s/H stacked [H·F, C] (mean).
      const wsW = w(`${name}.w_s`);
      const width = concat ? hc : channels;
      const big = new Float32Array(heads * inDim * width);
      for (let h = 0; h < heads; h++) {
        for (let f = 0; f < inDim; f++) {
          for (let c = 0; c < channels; c++) {
            const v = wsW[f * hc + h * channels + c]!;
            if (concat) big[(h * inDim + f) * hc + h * channels + c] = v;
            else big[(h * inDim + f) * channels + c] = v / heads;
          }
        }
      }
      return g.op('Add', [g.op('MatMul', [flat1, floats(`${name}.w_s_heads`, big, [heads * inDim, width])]), bias]);
    }
    // Σ_e α_e x_s = (Σ_e exp(e_e) x_s) / (Σ_e exp(e_e) + ε): the softmax's denominator is one per target
    // node and head, so it divides the aggregate [n, H, C] once instead of every edge's weight [m, H]
    // (one Gather, Add and Div fewer over the edges; the same sum up to float rounding).
    const denom = g.op('ScatterND', [zeros(heads, `${name}.denom`), dstIdx, ex], { reduction: attr.string('add') }); // [n, H]
    // Each head's weight spread over its C channels by a MatMul with the [H, H·C] 0/1 block matrix, so the
    // product with x_s is a same-shape Mul: onnxruntime's broadcast of [m, H, 1] over [m, H, C] was the
    // costliest node of the graph.
    const spreadW = new Float32Array(heads * hc);
    for (let h = 0; h < heads; h++) for (let c = 0; c < channels; c++) spreadW[h * hc + h * channels + c] = 1;
    const msg = g.op('Mul', [xsj, g.op('MatMul', [ex, floats(`${name}.spread`, spreadW, [heads, hc])])]); // [m, HC]
    const agg = g.op('ScatterND', [zeros(hc, `${name}.agg`), dstIdx, msg], { reduction: attr.string('add') }); // [n, HC]
    const norm = g.op('Div', [g.op('Reshape', [agg, ints(`${name}.shape_mhc`, [-1, heads, channels])]), g.op('Unsqueeze', [g.op('Add', [denom, eps]), ints(`${name}.axes_m1d`, [-1])])]); // [n, H, C]
    const flat = g.op('Reshape', [norm, ints(`${name}.shape_nhc`, [-1, hc])]); // [n, HC]
    // The mean over heads as a MatMul with the [H·C, C] stack of I/H blocks: onnxruntime's ReduceMean
    // over the middle axis cost as much as a pass over the edges.
    const meanW = new Float32Array(hc * channels);
    for (let h = 0; h < heads; h++) for (let c = 0; c < channels; c++) meanW[(h * channels + c) * channels + c] = 1 / heads;
    const out = concat ? flat : g.op('MatMul', [flat, floats(`${name}.head_mean`, meanW, [hc, channels])]);
    return g.op('Add', [out, bias]);
  };

  // ELU as max(v, exp(min(v, 0)) − 1) (equal: e^v − 1 ≥ v everywhere): onnxruntime's Elu kernel takes
  // as long as a pass over the edges, these four vectorised passes over [n, H·C] a third of it.
  const gat1 = gatv2('x', 'gat1', F, args.heads, args.hidden, true);
  const h1 = g.op('Max', [gat1, g.op('Sub', [g.op('Exp', [g.op('Min', [gat1, floats('zero_f', [0], [])])]), one])]);
  const z = gatv2(h1, 'gat2', args.heads * args.hidden, args.heads, D, false); // [n, D]

  // Temporal attention (layers/temporal_attention.ts) over [z, aligned past…].
  const z3 = g.op('Unsqueeze', [z, ints('axes_0', [0])]);
  // aligned past = past + fallback ⊙ z   [P, n, D]
  const stacked = W > 1 ? g.op('Concat', [z3, g.op('Add', ['past', g.op('Mul', ['past_fallback', z])])], { axis: attr.int(0) }) : z3; // [W, n, D]
  // Both projections of the stack folded into [n, D] products by linearity: q·(z^(k) W_k) = z^(k)·(q W_kᵀ),
  // so u = z (W_q W_kᵀ / √dk) is one [D, D] product per node, and Σ_k β^k z^(k) W_v = (Σ_k β^k z^(k)) W_v.
  // Neither [W, n, ·] MatMul over the window remains; the same sums up to float rounding.
  const wq = w('temporal.w_q');
  const wk = w('temporal.w_k');
  const qk = new Float32Array(D * D);
  for (let a = 0; a < D; a++) {
    for (let b = 0; b < D; b++) {
      let s = 0;
      for (let c = 0; c < dk; c++) s += wq[a * dk + c]! * wk[b * dk + c]!;
      qk[a * D + b] = s / Math.sqrt(dk);
    }
  }
  const u = g.op('MatMul', [z, floats('temporal.w_qk', qk, [D, D])]); // [n, D]
  // summed over the embedding axis by a MatMul with a [D, 1] ones column (a ReduceSum over the last axis
  // is several times slower in onnxruntime); the scores stay [W, n, 1].
  const scores = g.op('MatMul', [g.op('Mul', [stacked, u]), floats('sum_d', new Array<number>(D).fill(1), [D, 1])]); // [W, n, 1]
  const mask = g.op('Mul', [g.op('Sub', [floats('one', [1], []), g.op('Reshape', ['lag_mask', ints('shape_w11', [W, 1, 1])])]), floats('masked', [MASKED], [])]);
  const logits = g.op('Add', [g.op('Add', [scores, floats('temporal.lag_bias', w('temporal.lag_bias'), [W, 1, 1])]), mask]);
  const beta = g.op('Softmax', [logits], { axis: attr.int(0) }); // [W, n, 1]
  const mix = g.op('ReduceSum', [g.op('Mul', [stacked, beta]), ints('axes_0b', [0])], { keepdims: attr.int(0) }); // [n, D]
  const h = g.op('Add', [z, g.op('MatMul', [mix, floats('temporal.w_v', w('temporal.w_v'), [D, D])])]);

  g.addOutput('z', 'FLOAT', ['n', D], { from: z });
  g.addOutput('decoder_input', 'FLOAT', ['n', D], { from: h });
  for (const name of ['adjacency_row_sq', 'adjacency_col_sq', 'adjacency_row_max']) g.addOutput(name, 'FLOAT', ['n']);

  // Decoders (layers/inner_product_decoder.ts).
  const half = D / 2;
  const cols = (a: number, b: number): string => g.op('Slice', [h, ints(`cols_${a}`, [a]), ints(`cols_${a}_end`, [b]), ints(`cols_${a}_axis`, [1])]);
  // Â is written straight into its graph output: an Identity to it copied the n² matrix on every run,
  // fetched or not. Σ Â² per row and per column are products of Â² with a ones vector (a GEMV each):
  // onnxruntime's ReduceSumSquare takes twice as long over either axis.
  into('adjacency', 'Sigmoid', [g.op('MatMul', [cols(0, half), g.op('Transpose', [cols(half, D)], { perm: attr.ints([1, 0]) })])]);
  const sq = g.op('Mul', ['adjacency', 'adjacency']);
  into('adjacency_row_sq', 'Reshape', [g.op('MatMul', [sq, ones]), ints('shape_flat', [-1])]);
  into('adjacency_col_sq', 'Reshape', [g.op('MatMul', [g.op('Transpose', [ones], { perm: attr.ints([1, 0]) }), sq]), ints('shape_flat2', [-1])]);
  into('adjacency_row_max', 'ReduceMax', ['adjacency'], { axes: attr.ints([1]), keepdims: attr.int(0) });
  into('features', 'Add', [g.op('MatMul', [h, floats('decoder.w_x', w('decoder.w_x'), [D, F])]), floats('decoder.b_x', w('decoder.b_x'), [F])]);
  return g.toBytes();
}
