/**
 * Turns a sampled batch into the dense arrays the model consumes, in plain TypeScript over typed arrays
 * (TF.js gathers are ~6× slower than a JS loop on the wasm backend; see docs/architecture.md, "Compute"). Per node type, the
 * distinct (node, anchor) pairs of the batch are encoded once — nodes of tables without a time column are
 * the same at every anchor, so an article bought in 300 sampled transactions is encoded once — and each
 * valid slot position points at its row. Padding is never computed: slots keep only their valid positions.
 */
import type { TableFeatures } from './features.js';
import type { Plan } from './plan.js';
import type { SampledBatch } from './sampler.js';
import { HEAP_ALLOC, type Alloc } from './scratch.js';

export interface TypeRows {
  /** [rows × numDim] */
  num: Float32Array;
  /** [rows × catCount] offset codes */
  cat: Int32Array;
  /** distinct encoded rows */
  rows: number;
  /** the node of each row */
  nodes: Int32Array;
}

/**
 * Slots are stored compactly: only valid (sampled) positions have a row. A slot with V valid positions
 * holds V rows in position order.
 */
export interface BatchArrays {
  size: number;
  types: Record<string, TypeRows>;
  /** per slot: the type-encoding row of each valid position (length V_s) */
  positions: Int32Array[];
  /**
   * per slot except the root, over its parent's valid rows × fanout: the child's compact row (0 where no
   * neighbour was sampled — its weight and mask are 0, so any row will do), mean weights (mask / count)
   * and the 0/1 mask
   */
  childIndex: (Int32Array | null)[];
  weights: (Float32Array | null)[];
  masks: (Float32Array | null)[];
  /**
   * per slot except the root, over its parent's valid rows: log(1 + number of neighbours with time ≤ anchor),
   * counting all of them, not only the sampled ones (see `SlotSample.visible`)
   */
  degrees: (Float32Array | null)[];
}

/**
 * `degree`: what the degree input counts (`ModelSpec.degree`; runs made before it count `sampled`).
 * `encoded`: types whose rows the caller reads from encodings of the whole table (`DeepModel.staticEncodings`);
 * their rows get node ids only, no inputs (`num` and `cat` stay empty). `alloc`: where the arrays come
 * from (see scratch.ts).
 */
export function buildBatchArrays(
  plan: Plan,
  batch: SampledBatch,
  features: Record<string, TableFeatures>,
  degree: 'visible' | 'sampled' = 'visible',
  encoded?: ReadonlySet<string>,
  alloc: Alloc = HEAP_ALLOC,
): BatchArrays {
  const B = batch.size;
  const perType = new Map<string, TypeBuilder>();
  const positions: Int32Array[] = [];
  /** per slot: compact row of each (padded) position, −1 when invalid */
  const compact: Int32Array[] = [];
  /** per type: its positions in the batch, the most rows it can get */
  const capacity = new Map<string, number>();
  for (const slot of plan.slots) capacity.set(slot.type, (capacity.get(slot.type) ?? 0) + B * slot.width);
  for (const slot of plan.slots) {
    const s = batch.slots[slot.index]!;
    const f = features[slot.type]!;
    let t = perType.get(slot.type);
    if (!t) perType.set(slot.type, (t = new TypeBuilder(rowIndex(slot.type, capacity.get(slot.type)!), B * slot.width, alloc)));
    const timeDependent = f.timeDependent;
    const width = slot.width;
    const n = B * width;
    const rowOf = alloc.int32(n);
    const pos = alloc.int32(n);
    const index = t.index;
    const valid = s.valid;
    const nodes = s.nodes;
    let v = 0;
    for (let seed = 0, i = 0; seed < B; seed++) {
      // Time-dependent features differ per anchor; anchors are per seed, so (node, seed) identifies a row.
      const key = timeDependent ? seed : 0;
      for (const end = i + width; i < end; i++) {
        if (!valid[i]) {
          rowOf[i] = -1;
          continue;
        }
        const node = nodes[i]!;
        let row = index.findOrAdd(node, key, t.rows);
        if (row < 0) row = t.add(node, seed);
        rowOf[i] = v;
        pos[v++] = row;
      }
    }
    positions.push(v === n ? pos : pos.subarray(0, v));
    compact.push(rowOf);
  }
  const types: Record<string, TypeRows> = {};
  for (const [type, t] of perType) {
    const f = features[type]!;
    const rows = t.rows;
    const nodes = t.nodes.subarray(0, rows);
    if (encoded?.has(type)) {
      types[type] = { num: alloc.float32(0), cat: alloc.int32(0), rows, nodes };
      continue;
    }
    const num = alloc.float32(rows * f.num_dim);
    const cat = alloc.int32(rows * f.catCount);
    const seeds = t.seeds;
    const anchors = batch.anchors;
    f.gather(nodes, (i) => anchors[seeds[i]!]!, null, num, cat);
    types[type] = { num, cat, rows, nodes };
  }
  const childIndex: (Int32Array | null)[] = [];
  const weights: (Float32Array | null)[] = [];
  const masks: (Float32Array | null)[] = [];
  const degrees: (Float32Array | null)[] = [];
  for (const slot of plan.slots) {
    if (slot.parent < 0) {
      childIndex.push(null);
      weights.push(null);
      masks.push(null);
      degrees.push(null);
      continue;
    }
    const parentRows = compact[slot.parent]!;
    const rowOf = compact[slot.index]!;
    const f = slot.fanout;
    const vp = positions[slot.parent]!.length;
    const visible = degree === 'visible' ? batch.slots[slot.index]!.visible : null;
    const idx = alloc.int32(vp * f);
    const w = alloc.float32(vp * f);
    const m = alloc.float32(vp * f);
    const deg = alloc.float32(vp);
    for (let i = 0; i < parentRows.length; i++) {
      const r = parentRows[i]!;
      if (r < 0) continue;
      let count = 0;
      for (let j = 0; j < f; j++) if (rowOf[i * f + j]! >= 0) count++;
      deg[r] = Math.log1p(visible ? visible[i]! : count);
      const inv = count > 0 ? 1 / count : 0;
      for (let j = 0; j < f; j++) {
        const c = rowOf[i * f + j]!;
        if (c < 0) continue;
        idx[r * f + j] = c;
        m[r * f + j] = 1;
        w[r * f + j] = inv;
      }
    }
    childIndex.push(idx);
    weights.push(w);
    masks.push(m);
    degrees.push(deg);
  }
  return { size: B, types, positions, childIndex, weights, masks, degrees };
}

/** One node type's distinct batch rows, in order of first appearance: the node and the seed whose anchor it is read at. */
class TypeBuilder {
  rows = 0;
  nodes: Int32Array;
  seeds: Int32Array;

  constructor(
    readonly index: RowIndex,
    capacity: number,
    alloc: Alloc,
  ) {
    this.nodes = alloc.int32(Math.max(16, capacity));
    this.seeds = alloc.int32(Math.max(16, capacity));
  }

  /** appends a row; returns its number */
  add(node: number, seed: number): number {
    if (this.rows === this.nodes.length) {
      const grow = (a: Int32Array): Int32Array => {
        const b = new Int32Array(a.length * 2);
        b.set(a);
        return b;
      };
      this.nodes = grow(this.nodes);
      this.seeds = grow(this.seeds);
    }
    this.nodes[this.rows] = node;
    this.seeds[this.rows] = seed;
    return this.rows++;
  }
}

/**
 * (node, seed) → row of one node type's batch rows: open addressing with linear probing over typed arrays,
 * at most half full (twice the type's positions in the batch, the most rows it can get), kept from batch to
 * batch per node type and thread. An entry counts only if it carries the current batch's stamp, so starting
 * a batch clears nothing. Its size follows the batch, not the table: a head per table row would be 8 MB per
 * thread for the 2M transactions at `medium`, pages each thread's first batches would fault in (~15 µs
 * each on this VM). A JS Map keyed by node · B + seed spends ~7% of a sampled embedding pass hashing.
 */
class RowIndex {
  private nodes = new Int32Array(0);
  private seeds = new Int32Array(0);
  private rows = new Int32Array(0);
  private stamps = new Int32Array(0);
  private stamp = 0;
  private shift = 32;

  /** Empties the index for a batch of at most `entries` rows. */
  begin(entries: number): void {
    let bits = 4;
    while (1 << bits < 2 * entries) bits++;
    if (1 << bits > this.nodes.length) {
      const cap = 1 << bits;
      this.nodes = new Int32Array(cap);
      this.seeds = new Int32Array(cap);
      this.rows = new Int32Array(cap);
      this.stamps = new Int32Array(cap);
      this.stamp = 0;
    }
    this.shift = 32 - Math.log2(this.nodes.length);
    if (++this.stamp === 0x7fffffff) {
      this.stamps.fill(0);
      this.stamp = 1;
    }
  }

  /** The row of (node, seed), or −1 after recording `row` as its row. */
  findOrAdd(node: number, seed: number, row: number): number {
    const mask = this.nodes.length - 1;
    // Fibonacci hashing of the pair: the high bits of the product.
    for (let i = Math.imul(node ^ Math.imul(seed, 0x85ebca77), 0x9e3779b1) >>> this.shift; ; i = (i + 1) & mask) {
      if (this.stamps[i] !== this.stamp) {
        this.stamps[i] = this.stamp;
        this.nodes[i] = node;
        this.seeds[i] = seed;
        this.rows[i] = row;
        return -1;
      }
      if (this.nodes[i] === node && this.seeds[i] === seed) return this.rows[i]!;
    }
  }
}

const indexes = new Map<string, RowIndex>();

/** The thread's index for a node type, emptied for a batch of at most `entries` rows. */
function rowIndex(type: string, entries: number): RowIndex {
  let index = indexes.get(type);
  if (!index) indexes.set(type, (index = new RowIndex()));
  index.begin(entries);
  return index;
}
