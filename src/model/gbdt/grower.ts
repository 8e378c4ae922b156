/**
 * Grows one tree leaf-wise: the leaf whose best split gains most is split next, until `max_leaf_nodes`
 * leaves, `max_depth`, `min_samples_leaf` or a non-positive gain stops it (LightGBM's growth, which
 * scikit-learn's HistGradientBoosting shares). The node's rows are a range of one partition array, split
 * stably in place, so a leaf's rows stay in ascending order and the histogram kernel reads columns forward.
 */
import { MISSING_BIN, type FeatureKind } from './bin_mapper.js';
import { FEATURE_SLOTS, subtractHistogram, type HistogramBuilder, type HistogramInputs } from './histogram.js';
import { findBestSplit, type NodeStats, type Split, type SplitRules } from './split.js';
import { Tree } from './tree.js';

export interface GrowOptions {
  maxLeaves: number;
  maxDepth: number | null;
  learningRate: number;
  rules: SplitRules;
}

/** A leaf of the grown tree and its rows: `partition[start..end)`. */
export interface LeafRange {
  node: number;
  start: number;
  end: number;
}

export interface GrownTree {
  tree: Tree;
  leaves: LeafRange[];
}

interface Candidate {
  node: number;
  start: number;
  end: number;
  depth: number;
  slot: number;
  stats: NodeStats;
  split: Split | null;
}

export class TreeGrower {
  private readonly scratch: Uint32Array;
  private readonly freeSlots: number[] = [];

  constructor(
    private readonly inp: HistogramInputs,
    private readonly builder: HistogramBuilder,
    private readonly kinds: readonly FeatureKind[],
    private readonly valueBins: readonly number[],
    private readonly opts: GrowOptions,
  ) {
    this.scratch = new Uint32Array(inp.rows);
  }

  /** Number of histogram slots a builder needs for trees of `maxLeaves` leaves. */
  static slots(maxLeaves: number): number {
    return maxLeaves + 1;
  }

  grow(grad: Float32Array, hess: Float32Array): GrownTree {
    const { rows: n, partition, og, oh } = this.inp;
    const { rules, learningRate, maxLeaves, maxDepth } = this.opts;
    this.freeSlots.length = 0;
    for (let s = TreeGrower.slots(maxLeaves) - 1; s >= 0; s--) this.freeSlots.push(s);
    for (let i = 0; i < n; i++) partition[i] = i;
    og.set(grad);
    oh.set(hess);

    const feature: number[] = [-1];
    const bin: number[] = [-1];
    const missingLeft: number[] = [0];
    const left: number[] = [-1];
    const right: number[] = [-1];
    const gains: number[] = [0];
    const catLeft = new Map<number, Uint8Array>();

    const rootSlot = this.freeSlots.pop()!;
    this.builder.build(0, n, rootSlot);
    let g = 0;
    let h = 0;
    for (let i = 0; i < n; i++) {
      g += grad[i]!;
      h += hess[i]!;
    }
    const root: Candidate = { node: 0, start: 0, end: n, depth: 0, slot: rootSlot, stats: { g, h, count: n }, split: null };
    this.evaluate(root);
    const open: Candidate[] = [root];
    const done: Candidate[] = [];
    let leafCount = 1;

    while (leafCount < maxLeaves) {
      let bi = -1;
      for (let k = 0; k < open.length; k++) {
        const s = open[k]!.split;
        if (s && (bi < 0 || s.gain > open[bi]!.split!.gain)) bi = k;
      }
      if (bi < 0) break;
      const c = open[bi]!;
      open.splice(bi, 1);
      const s = c.split!;
      const mid = this.partitionRows(c.start, c.end, s);
      const ln = feature.length;
      feature[c.node] = s.feature;
      bin[c.node] = s.bin;
      missingLeft[c.node] = s.missingLeft ? 1 : 0;
      left[c.node] = ln;
      right[c.node] = ln + 1;
      gains[c.node] = s.gain;
      if (s.catLeft) catLeft.set(c.node, s.catLeft);
      for (let k = 0; k < 2; k++) {
        feature.push(-1);
        bin.push(-1);
        missingLeft.push(0);
        left.push(-1);
        right.push(-1);
        gains.push(0);
      }
      // Counts from the partition: the split's own are estimated from hessians (split.ts).
      const lc: Candidate = { node: ln, start: c.start, end: mid, depth: c.depth + 1, slot: -1, stats: { ...s.left, count: mid - c.start }, split: null };
      const rc: Candidate = { node: ln + 1, start: mid, end: c.end, depth: c.depth + 1, slot: -1, stats: { ...s.right, count: c.end - mid }, split: null };
      leafCount++;
      const canSplit = (x: Candidate): boolean =>
        leafCount < maxLeaves && (maxDepth === null || x.depth < maxDepth) && x.end - x.start >= 2 * rules.minSamplesLeaf;
      const wantL = canSplit(lc);
      const wantR = canSplit(rc);
      if (wantL || wantR) {
        // Build the smaller child from its rows; the larger is the parent's histogram minus it, in place.
        const [small, large] = lc.end - lc.start <= rc.end - rc.start ? [lc, rc] : [rc, lc];
        small.slot = this.freeSlots.pop()!;
        for (let i = small.start; i < small.end; i++) og[i] = grad[partition[i]!]!;
        for (let i = small.start; i < small.end; i++) oh[i] = hess[partition[i]!]!;
        this.builder.build(small.start, small.end, small.slot);
        const size = this.inp.features * FEATURE_SLOTS;
        subtractHistogram(this.builder.hist, c.slot * size, small.slot * size, c.slot * size, this.inp.features);
        large.slot = c.slot;
        for (const x of [lc, rc]) {
          if (x === lc ? wantL : wantR) this.evaluate(x);
          if (x.split) open.push(x);
          else {
            this.freeSlots.push(x.slot);
            done.push(x);
          }
        }
      } else {
        this.freeSlots.push(c.slot);
        done.push(lc, rc);
      }
    }

    const leaves = [...open, ...done].sort((a, b) => a.node - b.node);
    const value = new Float64Array(feature.length);
    for (const l of leaves) value[l.node] = (-l.stats.g / (l.stats.h + rules.l2)) * learningRate;
    const tree = new Tree(
      Int32Array.from(feature),
      Int32Array.from(bin),
      Uint8Array.from(missingLeft),
      Int32Array.from(left),
      Int32Array.from(right),
      value,
      Float64Array.from(gains),
      catLeft,
    );
    return { tree, leaves: leaves.map((l) => ({ node: l.node, start: l.start, end: l.end })) };
  }

  private evaluate(c: Candidate): void {
    const size = this.inp.features * FEATURE_SLOTS;
    c.split = findBestSplit(this.builder.hist, c.slot * size, c.stats, this.kinds, this.valueBins, this.opts.rules);
  }

  /** Stable in-place partition of `partition[start..end)` by the split; returns where the right part starts. */
  private partitionRows(start: number, end: number, s: Split): number {
    const { binned, rows: n, partition } = this.inp;
    const col = s.feature * n;
    const tmp = this.scratch;
    let l = start;
    let r = 0;
    const cat = s.catLeft;
    const missingLeft = s.missingLeft;
    const thr = s.bin;
    for (let i = start; i < end; i++) {
      const row = partition[i]!;
      const b = binned[col + row]!;
      const goLeft = cat ? cat[b] === 1 : b === MISSING_BIN ? missingLeft : b <= thr;
      if (goLeft) partition[l++] = row;
      else tmp[r++] = row;
    }
    partition.set(tmp.subarray(0, r), l);
    return l;
  }
}
