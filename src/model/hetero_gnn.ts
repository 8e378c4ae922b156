/**
 * The deep model: per-table encoders, L heterogeneous message-passing layers (GraphSAGE or GAT) over a
 * sampled computation tree, and an MLP head on the root's final representation.
 *
 *   h⁰ = encoder_type(x)                                   for every node in the tree
 *   hˡ = act(norm(conv_l,type(hˡ⁻¹_self, hˡ⁻¹_children))) (+ hˡ⁻¹ with skip), l = 1..L
 *   act = ReLU + dropout for l < L; the last layer has no activation (its output is the embedding)
 *   ŷ = W₂ ReLU(W₁ ReLU(hᴸ_root) + b₁) + b₂
 *
 * Weights are per (layer, node type) and per edge type inside each conv, never per tree slot, so the same
 * weights serve any tree depth: the embedding of a table found at depth d of the training tree is the
 * layer-(L − d) representation of a tree rooted at that table (see `embed/`).
 */
import type { LossName, OutputSpec } from '../task/objective/objective.js';
import { tf } from '../core/tf.js';
import { dropout } from '../compute/fused.js';
import type { BatchArrays } from './batch.js';
import type { Fanout, Plan } from './plan.js';
import { slotsAtLayer } from './plan.js';
import { GatConv } from './gat_conv.js';
import { LayerNorm } from './layer_norm.js';
import { NodeEncoder } from './node_encoder.js';
import type { ParamStore } from './params.js';
import type { RankingSpec } from './context_gnn.js';
import { SageConv, type NeighbourBlock } from './sage_conv.js';

export interface ModelSpec {
  encoder: 'sage' | 'gat';
  layers: number;
  channels: number;
  heads: number;
  dropout: number;
  norm: 'layer' | 'none';
  skip: boolean;
  categorical_dim: number;
  root: string;
  fanouts: Fanout[];
  sampling: 'last' | 'uniform';
  /**
   * What the degree input counts: `visible`, every neighbour with time ≤ anchor (runs since
   * docs/quality.md); `sampled`, the sampled neighbours, at most the fanout (older runs, whose spec has no
   * such field). Part of the run's encoding, so embedding with an older run reproduces what it learned.
   */
  degree?: 'visible' | 'sampled';
  /** per node type: input widths */
  types: Record<string, { num_dim: number; cat_sizes: number[] }>;
  /** per layer (1-based index − 1), per node type updated at that layer: incoming edge types */
  convs: Record<string, string[]>[];
  output: OutputSpec;
  /** one of the objective's losses (bce for binary; l1 or mse on standardised labels for regression; sampled_softmax for ranking) */
  loss: LossName;
  /**
   * Ranking runs: the recommender's settings (model/context_gnn.ts). The GNN then also has the layers of a
   * tree rooted at `ranking.item_table` (in `convs`), and the head above the root is unused.
   */
  ranking?: RankingSpec;
}

/**
 * Which (layer, type) pairs need a conv, and their edges, for a training plan (or several plans of the
 * same depth sharing one GNN: a recommender's user and item trees).
 */
export function convLayout(plan: Plan, ...more: Plan[]): Record<string, string[]>[] {
  const out: Record<string, string[]>[] = [];
  for (let l = 1; l <= plan.layers; l++) {
    const m: Record<string, string[]> = {};
    for (const s of [plan, ...more].flatMap((p) => slotsAtLayer(p, l).map((x) => ({ ...x, children: x.children.map((c) => p.slots[c]!) })))) {
      const edges = s.children.map((c) => c.edge!);
      m[s.type] = [...new Set([...(m[s.type] ?? []), ...edges])];
    }
    out.push(m);
  }
  return out;
}

export interface ForwardResult {
  /** [B, C]: the root's representation after the plan's last layer */
  embedding: tf.Tensor2D;
  /** [B]: head output (only when the plan is the training plan) */
  logits: tf.Tensor1D | null;
}

export class HeteroGnn {
  private readonly encoders = new Map<string, NodeEncoder>();
  private readonly sage = new Map<string, SageConv>();
  private readonly gat = new Map<string, GatConv>();
  private readonly norms = new Map<string, LayerNorm>();
  private readonly head1w: tf.Variable;
  private readonly head1b: tf.Variable;
  private readonly head2w: tf.Variable;
  private readonly head2b: tf.Variable;
  private dropoutSeed = 1;

  constructor(readonly params: ParamStore, readonly spec: ModelSpec) {
    const C = spec.channels;
    for (const [type, t] of Object.entries(spec.types)) {
      this.encoders.set(type, new NodeEncoder(params, `enc/${type}`, { num_dim: t.num_dim, cat_sizes: t.cat_sizes, cat_dim: spec.categorical_dim, channels: C }));
    }
    spec.convs.forEach((layer, i) => {
      for (const [type, edges] of Object.entries(layer)) {
        const name = `conv${i + 1}/${type}`;
        if (spec.encoder === 'sage') this.sage.set(name, new SageConv(params, name, { channels: C, edges }));
        else this.gat.set(name, new GatConv(params, name, { channels: C, heads: spec.heads, edges }));
        if (spec.norm === 'layer') this.norms.set(name, new LayerNorm(params, `${name}/norm`, C));
      }
    });
    this.head1w = params.glorot('head/w1', [C, C]);
    this.head1b = params.zeros('head/b1', [C]);
    this.head2w = params.glorot('head/w2', [C, 1]);
    this.head2b = params.zeros('head/b2', [1]);
  }

  /**
   * Runs the plan's layers on a batch. Call inside `tf.tidy` (or dispose the result). `encoded`: per node
   * type, the encoder output of every node of its table, computed once for many batches (inference only,
   * and only for types whose inputs do not depend on the anchor); a batch then reads its rows from it.
   */
  forward(plan: Plan, batch: BatchArrays, training: boolean, encoded?: ReadonlyMap<string, tf.Tensor2D>): ForwardResult {
    const L = plan.layers;
    const C = this.spec.channels;
    // h⁰ for every slot: one encoder call per node type, then one gather per type (valid positions only).
    // Leaves (depth L) are read only as layer-1 children, and those blocks point at the encoded rows
    // themselves (below), so their h⁰ is never gathered: with fanouts [10, 5] that is two thirds of the
    // rows of a batch. A slot whose positions are exactly the type's rows in order (each sampled
    // transaction is its own row) reads the encoder output as it is.
    let h: (tf.Tensor2D | null)[] = plan.slots.map(() => null);
    const encodedByType = new Map<string, tf.Tensor2D>();
    /** per slot: W_self·h⁰ of its layer-1 SAGE conv, folded into the encoder (below) */
    const selfTransformed = new Map<number, tf.Tensor2D>();
    /** leaf-only types whose encoder is folded into their readers' SAGE edge weights (below): their inputs */
    const folded = new Map<string, { num: tf.Tensor2D; cat: tf.Tensor2D }>();
    const byType = new Map<string, number[]>();
    for (const s of plan.slots) byType.set(s.type, [...(byType.get(s.type) ?? []), s.index]);
    for (const [type, slotIdx] of byType) {
      const rows = batch.types[type]!;
      if (rows.rows === 0) {
        slotIdx.forEach((i) => (h[i] = tf.zeros([0, C])));
        continue;
      }
      const whole = encoded?.get(type);
      const dims = this.spec.types[type];
      if (!whole && dims && (rows.num.length !== rows.rows * dims.num_dim || rows.cat.length !== rows.rows * dims.cat_sizes.length)) throw new Error(`batch rows of ${type} have no inputs (built for static encodings) but none were given`);
      // A type found only at the leaves (articles under sampled transactions) is read only by layer-1 SAGE
      // convs, and each of them transforms its few distinct rows before the mean (fewer rows than the
      // positions reading them, as in SageConv.apply): h⁰·W_e = x·(W_enc·W_e) + b·W_e, one matmul over the
      // rows instead of two, and two fewer in the backward pass.
      if (!whole && this.foldable(plan, batch, slotIdx, rows.rows)) {
        for (const i of slotIdx) if (batch.positions[i]!.length === 0) h[i] = tf.zeros([0, C]);
        const enc = this.encoders.get(type)!;
        folded.set(type, { num: tf.tensor2d(rows.num, [rows.rows, enc.args.num_dim]), cat: tf.tensor2d(rows.cat, [rows.rows, enc.args.cat_sizes.length], 'int32') });
        continue;
      }
      let typeRows: tf.Tensor2D;
      if (whole) {
        typeRows = tf.gather(whole, tf.tensor1d(rows.nodes, 'int32'));
      } else {
        const enc = this.encoders.get(type);
        if (!enc) throw new Error(`the model has no encoder for ${type}`);
        // The layer-1 self term of a slot holding exactly the type's rows, when the encoder input is
        // narrower than C (transactions: 32 inputs for 64 channels): h⁰·W_self = x·(W_enc·W_self) + b·W_self
        // is one [n, in]·[in, C] matmul instead of [n, C]·[C, C], and its backward pass is as narrow.
        // h⁰ itself is still computed: the skip connection and the parents' means read it.
        const conv = this.spec.encoder === 'sage' ? this.sage.get(`conv1/${type}`) : undefined;
        const selfSlots = slotIdx.filter((i) => plan.slots[i]!.depth <= L - 1);
        const selfSlot = conv && selfSlots.length === 1 && enc.inDim < C && isIdentity(batch.positions[selfSlots[0]!]!, rows.rows) ? selfSlots[0]! : -1;
        const [encodedRows, selfT] = scoped(training, () => {
          const x = enc.input(tf.tensor2d(rows.num, [rows.rows, enc.args.num_dim]), tf.tensor2d(rows.cat, [rows.rows, enc.args.cat_sizes.length], 'int32'));
          return selfSlot >= 0 ? [enc.applyTo(x), enc.throughTo(x, conv!.selfWeight())] : [enc.applyTo(x)];
        });
        typeRows = encodedRows!;
        if (selfT) selfTransformed.set(selfSlot, selfT);
      }
      encodedByType.set(type, typeRows);
      const read = slotIdx.filter((i) => plan.slots[i]!.depth < L);
      for (const i of slotIdx) if (plan.slots[i]!.depth >= L && batch.positions[i]!.length === 0) h[i] = tf.zeros([0, C]);
      if (read.length === 0) continue;
      if (read.length === 1 && isIdentity(batch.positions[read[0]!]!, rows.rows)) {
        h[read[0]!] = typeRows;
        continue;
      }
      const parts = scoped(training, () => {
        const all = tf.gather(typeRows, tf.tensor1d(concatInt(read.map((i) => batch.positions[i]!)), 'int32'));
        return read.length === 1 ? [all] : tf.split(all, read.map((i) => batch.positions[i]!.length), 0);
      });
      read.forEach((i, k) => (h[i] = parts[k] as tf.Tensor2D));
    }

    // At layer 1 every child representation is an encoder output, so a block can point straight at the
    // type's distinct encoded rows (one row per distinct node, e.g. ~500 customers instead of ~5,000
    // customer positions under 5,000 sampled transactions); the convs then transform those few rows and
    // gather the results. Deeper layers read the child slot's own rows.
    /** W_e·h⁰ of a folded type, per (reading type, edge): computed once per forward */
    const foldedRows = new Map<string, tf.Tensor2D>();
    const blocks = (slot: number, hPrev: (tf.Tensor2D | null)[], edges: string[], layer: number): (NeighbourBlock | null)[] =>
      edges.map((edge, e) => {
        const c = plan.slots[slot]!.children.find((x) => plan.slots[x]!.edge === edge);
        if (c === undefined) return null;
        const n = batch.positions[slot]!.length;
        const f = plan.slots[c]!.fanout;
        const childRows = batch.positions[c]!;
        const childType = plan.slots[c]!.type;
        const fold = layer === 1 ? folded.get(childType) : undefined;
        const unique = layer === 1 ? encodedByType.get(childType) : undefined;
        let table = hPrev[c]!;
        let index = batch.childIndex[c]!;
        if ((unique || fold) && childRows.length > 0) {
          if (fold) {
            const type = plan.slots[slot]!.type;
            const key = `${type}\u0000${edge}`;
            let t = foldedRows.get(key);
            if (!t) foldedRows.set(key, (t = this.encoders.get(childType)!.applyThrough(fold.num, fold.cat, this.sage.get(`conv1/${type}`)!.edgeWeight(e))));
            table = t;
          } else {
            table = unique!;
          }
          const direct = new Int32Array(index.length);
          for (let k = 0; k < index.length; k++) direct[k] = childRows[index[k]!]!;
          index = direct;
        }
        return {
          table,
          index: tf.tensor1d(index, 'int32'),
          fanout: f,
          weights: tf.tensor1d(batch.weights[c]!),
          // Only attention reads the mask itself (SAGE's weights carry it): no upload for SAGE.
          ...(this.spec.encoder === 'gat' ? { mask: tf.tensor1d(batch.masks[c]!) } : {}),
          degree: tf.tensor2d(batch.degrees[c]!, [n, 1]),
          ...(fold && childRows.length > 0 ? { transformed: true } : {}),
        };
      });

    for (let l = 1; l <= L; l++) {
      const next: (tf.Tensor2D | null)[] = plan.slots.map(() => null);
      const active = slotsAtLayer(plan, l);
      const types = [...new Set(active.map((s) => s.type))];
      for (const type of types) {
        const all = active.filter((s) => s.type === type).map((s) => s.index);
        // Slots where nothing was sampled (e.g. no transaction before any anchor of the batch) stay empty.
        for (const s of all) if (batch.positions[s]!.length === 0) next[s] = tf.zeros([0, C]);
        const slots = all.filter((s) => batch.positions[s]!.length > 0);
        if (slots.length === 0) continue;
        const outs = this.layer(
          l,
          type,
          slots.map((s) => {
            const selfT = l === 1 && slots.every((x) => selfTransformed.has(x)) ? selfTransformed.get(s) : undefined;
            return { self: h[s]!, blocks: blocks(s, h, this.edgesOf(l, type), l), ...(selfT ? { selfTransformed: selfT } : {}) };
          }),
          training,
        );
        slots.forEach((s, k) => (next[s] = outs[k]!));
      }
      // Inference frees each layer's inputs once it is computed (and the layer-1-only encodings after
      // layer 1) instead of at the end of the caller's scope: a sampled batch's TF.js heap then peaks at
      // one layer's tensors, and each kernel writes into memory just freed, still in cache.
      if (!training) {
        const keep = new Set(next);
        const done = l === 1 ? [...h, ...encodedByType.values(), ...selfTransformed.values(), ...foldedRows.values(), ...[...folded.values()].flatMap((f) => [f.num, f.cat])] : h;
        for (const t of done) if (t && !keep.has(t)) t.dispose();
      }
      h = next;
    }
    const embedding = h[0]!;
    const isTrainingPlan = plan.root === this.spec.root && plan.layers === this.spec.layers;
    const logits = isTrainingPlan ? this.head(embedding, training) : null;
    return { embedding, logits };
  }

  /**
   * Whether a type's encoder can be folded into the layer-1 SAGE edge weights of its readers: SAGE, every
   * slot of the type a leaf (depth L, so only layer 1 reads it), and every reader transforming before the
   * mean (the type's distinct rows fewer than the reader's positions: SageConv.apply's choice).
   */
  private foldable(plan: Plan, batch: BatchArrays, slotIdx: number[], rows: number): boolean {
    if (this.spec.encoder !== 'sage') return false;
    for (const i of slotIdx) {
      const s = plan.slots[i]!;
      if (s.depth < plan.layers || s.parent < 0) return false;
      if (batch.positions[i]!.length > 0 && !(rows < batch.positions[s.parent]!.length)) return false;
    }
    return true;
  }

  /** The incoming edge types of the layer-l conv of a node type (the order its neighbour blocks follow). */
  edgesOf(l: number, type: string): string[] {
    const edges = this.spec.convs[l - 1]?.[type];
    if (!edges) throw new Error(`the model has no layer-${l} weights for ${type}`);
    return edges;
  }

  /** W_e·x for the layer-l SAGE conv of a node type and one of its incoming edges (see `transformed` blocks). */
  transformNeighbours(l: number, type: string, edge: string, x: tf.Tensor2D): tf.Tensor2D {
    const conv = this.sage.get(`conv${l}/${type}`);
    const e = this.edgesOf(l, type).indexOf(edge);
    if (!conv || e < 0) throw new Error(`the model has no layer-${l} SAGE weights for ${type} over ${edge}`);
    return conv.transform(e, x);
  }

  /** Input encoding of one node type's rows: num [n, numDim], cat [n, catCount] → [n, C]. */
  encode(type: string, num: Float32Array, cat: Int32Array, rows: number): tf.Tensor2D {
    const enc = this.encoders.get(type);
    if (!enc) throw new Error(`the model has no encoder for ${type}`);
    return enc.apply(tf.tensor2d(num, [rows, enc.args.num_dim]), tf.tensor2d(cat, [rows, enc.args.cat_sizes.length], 'int32'));
  }

  /**
   * Layer l for groups of rows of one node type: conv (one matmul for all groups with SAGE), norm,
   * ReLU and dropout below the last layer, residual. `blocks` follow `edgesOf(l, type)`.
   */
  layer(l: number, type: string, groups: { self: tf.Tensor2D; blocks: (NeighbourBlock | null)[]; selfTransformed?: tf.Tensor2D }[], training: boolean): tf.Tensor2D[] {
    return scoped(training, () => this.layerBody(l, type, groups, training));
  }

  private layerBody(l: number, type: string, groups: { self: tf.Tensor2D; blocks: (NeighbourBlock | null)[]; selfTransformed?: tf.Tensor2D }[], training: boolean): tf.Tensor2D[] {
    const name = `conv${l}/${type}`;
    let out: tf.Tensor2D;
    if (this.spec.encoder === 'sage') {
      const conv = this.sage.get(name);
      if (!conv) throw new Error(`the model has no layer-${l} weights for ${type}`);
      out = conv.apply(groups, !training);
    } else {
      const conv = this.gat.get(name);
      if (!conv) throw new Error(`the model has no layer-${l} weights for ${type}`);
      const outs = groups.map((g) => conv.apply(g.self, g.blocks));
      out = outs.length === 1 ? outs[0]! : tf.concat(outs, 0);
    }
    // Inference frees each step's input as soon as its output exists (the layer's scope would free it only
    // when the layer returns): one or two [rows × C] tensors alive at a time instead of all of them.
    const then = <T extends tf.Tensor | tf.Tensor[]>(input: tf.Tensor, output: T): T => {
      if (!training && output !== input) input.dispose();
      return output;
    };
    const norm = this.norms.get(name);
    if (norm) out = then(out, norm.apply(out));
    if (l < this.spec.layers) {
      out = then(out, tf.relu(out));
      if (training && this.spec.dropout > 0) out = dropout(out, this.spec.dropout, this.dropoutSeed++);
    }
    const parts = groups.length === 1 ? [out] : then(out, tf.split(out, groups.map((g) => g.self.shape[0]), 0) as tf.Tensor2D[]);
    return parts.map((p, k) => (this.spec.skip ? then(p, p.add(groups[k]!.self) as tf.Tensor2D) : (p as tf.Tensor2D)));
  }

  head(embedding: tf.Tensor2D, training: boolean): tf.Tensor1D {
    let x: tf.Tensor2D = tf.relu(embedding);
    x = tf.relu(tf.matMul(x, this.head1w).add(this.head1b)) as tf.Tensor2D;
    if (training && this.spec.dropout > 0) x = dropout(x, this.spec.dropout, this.dropoutSeed++);
    return tf.matMul(x, this.head2w).add(this.head2b).reshape([-1]) as tf.Tensor1D;
  }

  /** Parameters without the categorical embedding tables (the fair count to compare models by). */
  parameterCount(excludeEmbeddings = false): number {
    return this.params.count(excludeEmbeddings ? /\/emb$/ : undefined);
  }
}

/**
 * `f()` in its own `tf.tidy` for inference, so its intermediates are freed as soon as it returns; as it is
 * for training, whose gradient tape holds them anyway.
 */
function scoped<T extends tf.Tensor[]>(training: boolean, f: () => T): T {
  return training ? f() : tf.tidy(f);
}

/** positions = 0, 1, …, rows − 1 */
function isIdentity(positions: Int32Array, rows: number): boolean {
  if (positions.length !== rows) return false;
  for (let i = 0; i < rows; i++) if (positions[i] !== i) return false;
  return true;
}

function concatInt(parts: Int32Array[]): Int32Array {
  if (parts.length === 1) return parts[0]!;
  const out = new Int32Array(parts.reduce((a, p) => a + p.length, 0));
  let o = 0;
  for (const p of parts) {
    out.set(p, o);
    o += p.length;
  }
  return out;
}
