/**
 * Exact layer-wise inference: the embedding of every entity of a chunk at one anchor, each layer computed
 * once per node that needs it (PyG's recommendation for all-node inference), instead of once per position
 * of a sampled tree.
 *
 * The tree of a model has slots; all slots of one node type at one depth have the same children (edges
 * and fanouts depend only on type and hop), so a "class" (type, depth) holds the distinct nodes of those
 * slots, and h^l of a class is computed once per node. Neighbours are the ones training used:
 *
 * - `last` sampling: the k most recent neighbours with time ≤ anchor (k = the hop's fanout), which is
 *   exactly what sampled mode picks, so exact and sampled embeddings agree;
 * - `uniform` sampling: all neighbours with time ≤ anchor, up to the `exact_degree_cap` most recent — the
 *   mean over all of them is the expectation of the mean over a uniform sample.
 *
 * The degree input is log(1 + number of neighbours with time ≤ anchor), uncapped, as training reads it
 * (runs made before that: log(1 + min(count, fanout)), the value they were trained on).
 *
 * SAGE means are computed here in TypeScript (no padding, so a super-node costs its degree, not
 * degree × batch); GAT gets padded blocks, chunked so no block exceeds a fixed number of neighbour slots.
 */
import { copyOut } from '../compute/backend.js';
import { tf } from '../core/tf.js';
import type { EdgeType } from '../graph/graph.js';
import type { DeepModel } from '../model/deep_model.js';
import type { NeighbourBlock } from '../model/sage_conv.js';
import { buildPlan, type Plan } from '../model/plan.js';
import { upperBound } from '../model/sampler.js';

/** rows per TF call when encoding a class */
const ROW_CHUNK = 16384;
/** rows per TF call when updating a class */
const UPDATE_CHUNK = 16384;
/** neighbour slots per padded GAT block */
const SLOT_BUDGET = 1 << 20;

interface ClassEdge {
  edge: EdgeType;
  /** CSR over the class's nodes: neighbour rows in the child class */
  ptr: Int32Array;
  rows: Int32Array;
  /** the training fanout of this hop */
  fanout: number;
  /** per node of the class: neighbours with time ≤ anchor over this edge, all of them (the degree input) */
  visible: Float32Array;
  child: number;
}

interface NodeClass {
  type: string;
  depth: number;
  /** distinct nodes, ascending */
  nodes: Int32Array;
  edges: ClassEdge[];
}

/** The sub-plan rooted at `table`, found at `depth` of the training tree. */
export function subPlan(model: DeepModel, table: string, depth: number): Plan {
  return buildPlan(model.graph, table, model.spec.fanouts.slice(depth));
}

/** Depth at which a table first appears in the model's training tree (null when it never does above the leaves). */
export function tableDepth(model: DeepModel, table: string): number | null {
  // A recommender has a full tree rooted at its items too (the item side of its scores).
  if (model.spec.ranking?.item_table === table) return 0;
  const d = model.plan.slots.filter((s) => s.type === table).reduce((m, s) => Math.min(m, s.depth), Infinity);
  return Number.isFinite(d) && d < model.spec.layers ? d : null;
}

export function embedExact(model: DeepModel, table: string, depth: number, entities: Int32Array, anchor: number, degreeCap: number): Float32Array {
  const plan = subPlan(model, table, depth);
  const L = plan.layers;
  const C = model.spec.channels;
  const classes = buildClasses(model, plan, entities, anchor, degreeCap);

  // h⁰ of every class; a class whose nodes an earlier class of its type already encoded (the root's
  // customers again two hops down, through their transactions) copies their rows: an encoding is row-wise.
  let h: Float32Array[] = [];
  classes.forEach((c, ci) => {
    const k = classes.findIndex((e, ei) => ei < ci && e.type === c.type);
    const into = buffer(`0:${ci}`, c.nodes.length * C);
    h.push((k >= 0 ? copyEncoded(scratch(c.type, model.graph.table(c.type).rows), classes[k]!.nodes, h[k]!, c.nodes, into) : null) ?? encodeRows(model, c.type, c.nodes, anchor, into));
  });
  for (let l = 1; l <= L; l++) {
    const next: Float32Array[] = classes.map(() => new Float32Array(0));
    classes.forEach((c, ci) => {
      if (c.depth > L - l) return;
      const out = buffer(`${l}:${ci}`, c.nodes.length * C);
      const edgeNames = model.gnn.edgesOf(l, c.type);
      const order = model.spec.encoder === 'gat' ? rowsByDegree(c) : null;
      // Foreign-key messages (at most one neighbour per row) are transformed once per distinct parent
      // (W·h on the child class, e.g. 65k customers) and gathered per row, instead of transformed per row
      // (650k transactions): the same value, a tenth of the FLOPs.
      const tables = new Map<number, tf.Tensor2D>();
      try {
        for (const chunk of chunks(c, order)) {
          const res = tf.tidy(() => {
            // SAGE chunks are contiguous row ranges: a view, not a copy.
            const contiguous = chunk.length > 0 && chunk[chunk.length - 1]! - chunk[0]! === chunk.length - 1;
            const rows = contiguous ? h[ci]!.subarray(chunk[0]! * C, (chunk[chunk.length - 1]! + 1) * C) : gatherRows(h[ci]!, chunk, C);
            const self = tf.tensor2d(rows, [chunk.length, C]);
            const blocks = edgeNames.map((name) => {
              const e = c.edges.find((x) => x.edge.name === name);
              if (!e) return null;
              if (e.edge.kind === 'fk' && model.spec.encoder === 'sage' && h[e.child]!.length > 0) {
                let t = tables.get(e.child);
                if (!t) tables.set(e.child, (t = tf.keep(model.gnn.transformNeighbours(l, c.type, name, tf.tensor2d(h[e.child]!, [h[e.child]!.length / C, C])))));
                return fkBlock(e, chunk, t);
              }
              return block(e, chunk, h[e.child]!, C, model.spec.encoder === 'gat');
            });
            return model.gnn.layer(l, c.type, [{ self, blocks }], false)[0]!;
          });
          // A contiguous chunk is one copy, read through a view of the heap (a view per row cost a tenth of the layer).
          if (order === null) copyOut(res, out, chunk[0]! * C);
          else {
            const vals = res.dataSync() as Float32Array;
            for (let i = 0; i < chunk.length; i++) out.set(vals.subarray(i * C, (i + 1) * C), chunk[i]! * C);
          }
          res.dispose();
        }
      } finally {
        for (const t of tables.values()) t.dispose();
      }
      next[ci] = out;
    });
    // Classes deeper than L − l have no h^l, and no parent reads them at layer l + 1.
    h = next;
  }
  // Class 0 is the root: its rows are the entities in ascending node order.
  const root = h[0]!;
  const order = classes[0]!.nodes;
  if (order.length === entities.length && order.every((v, i) => v === entities[i])) return root.slice();
  const out = new Float32Array(entities.length * C);
  const pos = new Map<number, number>();
  order.forEach((v, i) => pos.set(v, i));
  for (let i = 0; i < entities.length; i++) out.set(root.subarray(pos.get(entities[i]!)! * C, (pos.get(entities[i]!)! + 1) * C), i * C);
  return out;
}

function buildClasses(model: DeepModel, plan: Plan, entities: Int32Array, anchor: number, degreeCap: number): NodeClass[] {
  const graph = model.graph;
  const edgesByName = new Map(graph.edges.map((e) => [e.name, e]));
  const classes: NodeClass[] = [{ type: plan.root, depth: 0, nodes: uniqueSorted(entities), edges: [] }];
  for (let d = 0; d < plan.layers; d++) {
    // Neighbour lists per (parent class, edge), then one class per (child type, d + 1).
    const pending: { parent: number; edge: EdgeType; fanout: number; csr: Csr }[] = [];
    for (const [ci, c] of classes.entries()) {
      if (c.depth !== d) continue;
      const slot = plan.slots.find((s) => s.type === c.type && s.depth === d)!;
      for (const childIdx of slot.children) {
        const child = plan.slots[childIdx]!;
        const edge = edgesByName.get(child.edge!)!;
        const k = model.spec.sampling === 'last' ? child.fanout : Math.max(child.fanout, degreeCap);
        pending.push({ parent: ci, edge, fanout: child.fanout, csr: neighbourLists(model, edge, c.nodes, anchor, k) });
      }
    }
    // One class per child type. Rows are numbered in order of first appearance while walking the parents'
    // neighbour lists, so the children a parent aggregates sit next to each other in memory (the mean then
    // streams through rows instead of jumping across a table of millions).
    const childClass = new Map<string, number>();
    const rowsOf = new Map<string, Int32Array[]>();
    for (const type of new Set(pending.map((p) => p.edge.dst))) {
      childClass.set(type, classes.length);
      const mine = pending.filter((p) => p.edge.dst === type);
      const rowOf = scratch(type, graph.table(type).rows);
      const nodes: number[] = [];
      const rowLists = mine.map((p) => {
        const ids = p.csr.ids;
        const rows = new Int32Array(ids.length);
        for (let k = 0; k < ids.length; k++) {
          const v = ids[k]!;
          let r = rowOf[v]!;
          if (r < 0) {
            r = rowOf[v] = nodes.length;
            nodes.push(v);
          }
          rows[k] = r;
        }
        return rows;
      });
      for (const v of nodes) rowOf[v] = -1;
      rowsOf.set(type, rowLists);
      classes.push({ type, depth: d + 1, nodes: Int32Array.from(nodes), edges: [] });
    }
    for (const type of rowsOf.keys()) {
      const mine = pending.filter((p) => p.edge.dst === type);
      mine.forEach((p, k) => {
        // Runs made before the degree input counted every visible neighbour read the sampled count.
        const visible = model.spec.degree === 'visible' ? p.csr.visible : p.csr.visible.map((v) => Math.min(p.fanout, v));
        classes[p.parent]!.edges.push({ edge: p.edge, ptr: p.csr.ptr, rows: rowsOf.get(type)![k]!, fanout: p.fanout, visible, child: childClass.get(type)! });
      });
    }
  }
  return classes;
}

interface Csr {
  ptr: Int32Array;
  ids: Int32Array;
  /** per node: all neighbours with time ≤ anchor (the lists above keep at most k of them) */
  visible: Float32Array;
}

/** The neighbours each node aggregates from: up to k most recent with time ≤ anchor (most recent first). */
function neighbourLists(model: DeepModel, edge: EdgeType, nodes: Int32Array, anchor: number, k: number): Csr {
  const dstTime = model.graph.tables[edge.dst]!.time;
  const ptr = new Int32Array(nodes.length + 1);
  const ends = new Int32Array(nodes.length);
  const visible = new Float32Array(nodes.length);
  for (let i = 0; i < nodes.length; i++) {
    const v = nodes[i]!;
    let n: number;
    if (edge.kind === 'fk') {
      const p = edge.parent![v]!;
      n = p >= 0 && (dstTime === null || dstTime[p]! <= anchor) ? 1 : 0;
      visible[i] = n;
    } else {
      const start = edge.indptr![v]!;
      const stop = edge.indptr![v + 1]!;
      const end = dstTime === null ? stop : upperBound(edge.indices!, dstTime, start, stop, anchor);
      ends[i] = end;
      visible[i] = end - start;
      n = Math.min(k, end - start);
    }
    ptr[i + 1] = ptr[i]! + n;
  }
  const ids = new Int32Array(ptr[nodes.length]!);
  for (let i = 0; i < nodes.length; i++) {
    const n = ptr[i + 1]! - ptr[i]!;
    if (n === 0) continue;
    if (edge.kind === 'fk') ids[ptr[i]!] = edge.parent![nodes[i]!]!;
    else for (let j = 0; j < n; j++) ids[ptr[i]! + j] = edge.indices![ends[i]! - 1 - j]!;
  }
  return { ptr, ids, visible };
}

function encodeRows(model: DeepModel, type: string, nodes: Int32Array, anchor: number, out: Float32Array): Float32Array {
  const C = model.spec.channels;
  const f = model.features[type]!;
  for (let i = 0; i < nodes.length; i += ROW_CHUNK) {
    const part = nodes.subarray(i, Math.min(nodes.length, i + ROW_CHUNK));
    const num = new Float32Array(part.length * f.num_dim);
    const cat = new Int32Array(part.length * f.catCount);
    f.gather(part, () => anchor, null, num, cat);
    const t = tf.tidy(() => model.gnn.encode(type, num, cat, part.length));
    copyOut(t, out, i * C);
    t.dispose();
  }
  return out;
}

/** Row chunks of a class: fixed-size for SAGE; for GAT grouped by degree so padding stays small. */
function* chunks(c: NodeClass, order: Int32Array | null): Generator<Int32Array> {
  const n = c.nodes.length;
  if (!order) {
    for (let i = 0; i < n; i += UPDATE_CHUNK) yield Int32Array.from({ length: Math.min(UPDATE_CHUNK, n - i) }, (_, k) => i + k);
    return;
  }
  let start = 0;
  while (start < n) {
    let end = start;
    let fmax = 1;
    while (end < n && end - start < UPDATE_CHUNK) {
      const f = Math.max(fmax, maxDegree(c, order[end]!));
      if ((end - start + 1) * f > SLOT_BUDGET && end > start) break;
      fmax = f;
      end++;
    }
    yield order.subarray(start, end);
    start = end;
  }
}

function maxDegree(c: NodeClass, row: number): number {
  let m = 1;
  for (const e of c.edges) m = Math.max(m, e.ptr[row + 1]! - e.ptr[row]!);
  return m;
}

function rowsByDegree(c: NodeClass): Int32Array {
  const deg = Int32Array.from({ length: c.nodes.length }, (_, i) => maxDegree(c, i));
  return Int32Array.from({ length: c.nodes.length }, (_, i) => i).sort((a, b) => deg[a]! - deg[b]! || a - b);
}

/** The rows of `nodes` copied from an encoding of `from` (`hFrom`), or null when `from` lacks one of them; `rowOf` is the type's node → row scratch (left all −1). */
function copyEncoded(rowOf: Int32Array, from: Int32Array, hFrom: Float32Array, nodes: Int32Array, into: Float32Array): Float32Array | null {
  for (let i = 0; i < from.length; i++) rowOf[from[i]!] = i;
  const rows = new Int32Array(nodes.length);
  let missing = false;
  for (let i = 0; i < nodes.length && !missing; i++) missing = (rows[i] = rowOf[nodes[i]!]!) < 0;
  for (let i = 0; i < from.length; i++) rowOf[from[i]!] = -1;
  return missing ? null : gatherRows(hFrom, rows, into.length / nodes.length, into);
}

function gatherRows(h: Float32Array, rows: Int32Array, C: number, out: Float32Array = new Float32Array(rows.length * C)): Float32Array {
  for (let i = 0; i < rows.length; i++) {
    const s = rows[i]! * C;
    for (let j = 0; j < C; j++) out[i * C + j] = h[s + j]!;
  }
  return out;
}

/** A foreign-key edge's block: each row reads its (at most one) parent's row of the transformed child table. */
function fkBlock(e: ClassEdge, chunk: Int32Array, table: tf.Tensor2D): NeighbourBlock {
  const n = chunk.length;
  const index = new Int32Array(n);
  const weights = new Float32Array(n);
  const degree = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    const r = chunk[i]!;
    if (e.ptr[r + 1]! > e.ptr[r]!) {
      index[i] = e.rows[e.ptr[r]!]!;
      weights[i] = 1;
      degree[i] = Math.log1p(1);
    }
  }
  return { table, transformed: true, index: tf.tensor1d(index, 'int32'), fanout: 1, weights: tf.tensor1d(weights), mask: tf.tensor1d(weights), degree: tf.tensor2d(degree, [n, 1]) };
}

/** One edge's neighbour block for a chunk of rows: the mean (SAGE) or a padded block (GAT). */
function block(e: ClassEdge, chunk: Int32Array, hChild: Float32Array, C: number, attention: boolean): NeighbourBlock {
  const n = chunk.length;
  const degree = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    const r = chunk[i]!;
    degree[i] = Math.log1p(e.visible[r]!);
  }
  if (!attention) {
    const mean = buffer('mean', n * C);
    const acc = new Float32Array(C);
    for (let i = 0; i < n; i++) {
      const r = chunk[i]!;
      const a = e.ptr[r]!;
      const b = e.ptr[r + 1]!;
      if (b === a) {
        mean.fill(0, i * C, (i + 1) * C);
        continue;
      }
      acc.fill(0);
      for (let k = a; k < b; k++) {
        const s = e.rows[k]! * C;
        for (let j = 0; j < C; j++) acc[j]! += hChild[s + j]!;
      }
      const inv = 1 / (b - a);
      for (let j = 0; j < C; j++) mean[i * C + j] = acc[j]! * inv;
    }
    const rows = tf.tensor1d(Int32Array.from({ length: n }, (_, i) => i), 'int32');
    return { table: tf.tensor2d(mean, [n, C]), index: rows, fanout: 1, weights: tf.ones([n]), mask: tf.ones([n]), degree: tf.tensor2d(degree, [n, 1]) };
  }
  let f = 1;
  for (let i = 0; i < n; i++) f = Math.max(f, e.ptr[chunk[i]! + 1]! - e.ptr[chunk[i]!]!);
  const hb = new Float32Array(n * f * C);
  const mask = new Float32Array(n * f);
  for (let i = 0; i < n; i++) {
    const r = chunk[i]!;
    for (let k = e.ptr[r]!, j = 0; k < e.ptr[r + 1]!; k++, j++) {
      hb.set(hChild.subarray(e.rows[k]! * C, (e.rows[k]! + 1) * C), (i * f + j) * C);
      mask[i * f + j] = 1;
    }
  }
  const index = tf.tensor1d(Int32Array.from({ length: n * f }, (_, i) => i), 'int32');
  return { table: tf.tensor2d(hb, [n * f, C]), index, fanout: f, weights: tf.tensor1d(mask), mask: tf.tensor1d(mask), degree: tf.tensor2d(degree, [n, 1]) };
}

/** per use (`layer:class`, `mean`): a buffer reused by every call, so a part's arrays are not pages mapped afresh */
const buffers = new Map<string, Float32Array>();

/**
 * `len` floats of the buffer kept for `key` (contents undefined: callers write every value). A part's
 * class arrays are [its transactions × channels], ~40 MB at 8,192 customers; fresh ones each part cost as
 * much page faulting as the layer's own arithmetic under a shared machine's load.
 */
function buffer(key: string, len: number): Float32Array {
  let a = buffers.get(key);
  if (!a || a.length < len) buffers.set(key, (a = new Float32Array(Math.ceil(len * 1.25))));
  return a.subarray(0, len);
}

/** per table (by name): its node → row map */
const scratches = new Map<string, Int32Array>();

/**
 * A table's node → row map as a dense array (−1 = none), kept for the process and reused by every call;
 * callers reset what they set. One per table, because distillation asks for many small snapshots of
 * alternating tables, and re-allocating the transactions' map (128 MB at `large`) costs ~0.5 s a call.
 */
function scratch(table: string, size: number): Int32Array {
  let a = scratches.get(table);
  if (!a || a.length !== size) scratches.set(table, (a = new Int32Array(size).fill(-1)));
  return a;
}

function uniqueSorted(a: Int32Array): Int32Array {
  const s = Int32Array.from(a).sort();
  let n = 0;
  for (let i = 0; i < s.length; i++) if (i === 0 || s[i] !== s[i - 1]) s[n++] = s[i]!;
  return s.slice(0, n);
}

