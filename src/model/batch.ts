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
  for (const slot of plan.slots) {
    const s = batch.slots[slot.index]!;
    const f = features[slot.type]!;
    let t = perType.get(slot.type);
    if (!t) perType.set(slot.type, (t = new TypeBuilder(rowIndex(slot.type, f.rows), B * slot.width, alloc)));
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
        let row = index.find(node, key);
        if (row < 0) {
          row = t.add(node, seed);
          index.add(node, key, row);
        }
        rowOf[i] = v;
        pos[v++] = row;
      }
    }
    positions.push(v === n ? pos : pos.subarray(0, v));
    compact.push(rowOf);
  }
  for (const t of perType.values()) t.index.reset();
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
 * (node, seed) → row of one node type's batch rows, over typed arrays: a head per node of the table
 * (reused across batches and reset to 0, none, for the nodes a batch touched) chaining the entries of that
 * node, one per seed that reads it (a single entry with seed 0 for time-independent types). A Map keyed
 * by node · B + seed cost ~7% of a sampled embedding pass in hashing.
 */
interface RowIndex {
  find(node: number, seed: number): number;
  add(node: number, seed: number, row: number): void;
  /** leaves every head at 0 (none) again, for the next batch */
  reset(): void;
}

const heads = new Map<string, Int32Array>();

function rowIndex(type: string, rows: number): RowIndex {
  // Heads hold entry + 1, so 0 (a fresh array's value) is "none": no fill pass over a table's rows (2M
  // transactions at `medium`, 32M at `large`, in every thread's first batch), and the pages of nodes no
  // batch touches are never written, so they take no memory.
  let head = heads.get(type);
  if (!head || head.length !== rows) heads.set(type, (head = new Int32Array(rows)));
  const h = head;
  let cap = 1024;
  let seeds = new Int32Array(cap);
  let rowsOf = new Int32Array(cap);
  let next = new Int32Array(cap);
  let nodes = new Int32Array(cap);
  let n = 0;
  return {
    find(node, seed) {
      for (let e = h[node]! - 1; e >= 0; e = next[e]!) if (seeds[e] === seed) return rowsOf[e]!;
      return -1;
    },
    add(node, seed, row) {
      if (n === cap) {
        cap *= 2;
        const grow = (a: Int32Array<ArrayBuffer>): Int32Array<ArrayBuffer> => {
          const b = new Int32Array(cap);
          b.set(a);
          return b;
        };
        seeds = grow(seeds);
        rowsOf = grow(rowsOf);
        next = grow(next);
        nodes = grow(nodes);
      }
      seeds[n] = seed;
      rowsOf[n] = row;
      next[n] = h[node]! - 1;
      nodes[n] = node;
      h[node] = ++n;
    },
    reset() {
      for (let e = 0; e < n; e++) h[nodes[e]!] = 0;
      n = 0;
    },
  };
}
