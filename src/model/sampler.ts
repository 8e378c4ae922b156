/**
 * Temporal neighbour sampling over a plan. For a seed (node, anchor time), each slot gets `fanout`
 * neighbours per parent node among those with time ≤ anchor:
 *
 * - `last`: the most recent ones (deterministic);
 * - `uniform`: a uniform sample without replacement (seeded).
 *
 * Reverse edges keep each node's neighbours sorted by time (graph build guarantees it), so the visible
 * prefix is found by binary search and sampling costs O(fanout + log degree) per node, whatever the
 * degree: a super-node with 100k edges costs the same as one with 20. Nothing with time > anchor can
 * be sampled; positions without a neighbour are marked invalid (and masked in aggregation).
 */
import type { Graph, EdgeType } from '../graph/graph.js';
import type { Rng } from '../core/rng.js';
import type { Plan } from './plan.js';
import { HEAP_ALLOC, type Alloc } from './scratch.js';

export type SamplingMethod = 'last' | 'uniform';

export interface SlotSample {
  /** node ids, B × width (invalid positions hold 0) */
  nodes: Int32Array;
  /** 1 where a node was sampled */
  valid: Uint8Array;
  /**
   * per parent position (B × parent width): how many neighbours over this slot's edge have time ≤ anchor —
   * all of them, not only the `fanout` sampled. The degree input reads it: with `last` sampling on bursty
   * data the sampled count is the fanout for every active entity, so only this count carries total activity.
   * Null for the root.
   */
  visible: Float32Array | null;
}

export interface SampledBatch {
  size: number;
  anchors: Float64Array;
  slots: SlotSample[];
}

export class TemporalSampler {
  private readonly edges: Map<string, EdgeType>;

  constructor(
    private readonly graph: Graph,
    readonly plan: Plan,
    readonly method: SamplingMethod,
  ) {
    this.edges = new Map(graph.edges.map((e) => [e.name, e]));
  }

  /** Samples the computation trees of `seeds` at `anchors` (epoch seconds); `alloc`: where its arrays come from (see scratch.ts). */
  sample(seeds: Int32Array, anchors: Float64Array, rng: Rng | null, alloc: Alloc = HEAP_ALLOC): SampledBatch {
    const B = seeds.length;
    const slots: SlotSample[] = [];
    for (const slot of this.plan.slots) {
      const n = B * slot.width;
      const nodes = alloc.int32(n);
      const valid = alloc.uint8(n);
      let visible: Float32Array | null = null;
      if (slot.parent < 0) {
        nodes.set(seeds);
        valid.fill(1);
      } else {
        const parentSlot = this.plan.slots[slot.parent]!;
        const par = slots[slot.parent]!;
        const edge = this.edges.get(slot.edge!)!;
        const dstTime = this.graph.tables[edge.dst]!.time;
        const f = slot.fanout;
        const pw = parentSlot.width;
        visible = alloc.float32(B * pw);
        for (let i = 0; i < B * pw; i++) {
          if (!par.valid[i]) continue;
          const anchor = anchors[Math.floor(i / pw)]!;
          const src = par.nodes[i]!;
          const base = i * f;
          if (edge.kind === 'fk') {
            const p = edge.parent![src]!;
            if (p >= 0 && (dstTime === null || dstTime[p]! <= anchor)) {
              nodes[base] = p;
              valid[base] = 1;
              visible[i] = 1;
            }
          } else {
            const start = edge.indptr![src]!;
            const stop = edge.indptr![src + 1]!;
            const end = dstTime === null ? stop : upperBound(edge.indices!, dstTime, start, stop, anchor);
            visible[i] = end - start;
            this.pick(edge.indices!, start, end, f, nodes, valid, base, rng);
          }
        }
      }
      slots.push({ nodes, valid, visible });
    }
    return { size: B, anchors, slots };
  }

  private pick(indices: Int32Array, start: number, end: number, f: number, nodes: Int32Array, valid: Uint8Array, base: number, rng: Rng | null): void {
    const count = end - start;
    if (count <= 0) return;
    if (this.method === 'last' || count <= f || rng === null) {
      // Most recent first.
      const k = Math.min(f, count);
      for (let j = 0; j < k; j++) {
        nodes[base + j] = indices[end - 1 - j]!;
        valid[base + j] = 1;
      }
      return;
    }
    // Floyd's algorithm: f distinct positions in [0, count), O(f²) worst case, independent of count.
    let m = 0;
    for (let j = count - f; j < count; j++) {
      const t = rng.int(j + 1);
      let seen = false;
      for (let k = 0; k < m; k++) {
        if (nodes[base + k] === indices[start + t]) {
          seen = true;
          break;
        }
      }
      nodes[base + m] = indices[start + (seen ? j : t)]!;
      valid[base + m] = 1;
      m++;
    }
  }
}

/** First position in [lo, hi) whose neighbour time is > t (neighbours are time-sorted). */
export function upperBound(indices: Int32Array, time: Float64Array, lo: number, hi: number, t: number): number {
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (time[indices[mid]!]! <= t) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
