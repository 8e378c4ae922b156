/**
 * One regression tree over binned features, stored as flat arrays (node 0 is the root). An internal node
 * sends a row left when its bin is ≤ `bin` (numeric) or flagged in `catLeft` (categorical), and a missing
 * value (bin 255) left when `missingLeft`; a leaf (`feature` −1) holds its value, shrinkage included.
 */
import { MISSING_BIN } from './bin_mapper.js';

export interface TreeJSON {
  feature: number[];
  bin: number[];
  missing_left: number[];
  left: number[];
  right: number[];
  value: number[];
  gain: number[];
  /** node index → the bins that go left, for categorical nodes. */
  cat_left: Record<string, number[]>;
}

export class Tree {
  /** catLeft as an array by node: prediction looks a node up per row and tree, a Map lookup each time cost more than the compare. */
  private readonly catByNode: (Uint8Array | undefined)[];

  constructor(
    readonly feature: Int32Array,
    readonly bin: Int32Array,
    readonly missingLeft: Uint8Array,
    readonly left: Int32Array,
    readonly right: Int32Array,
    readonly value: Float64Array,
    readonly gain: Float64Array,
    readonly catLeft: ReadonlyMap<number, Uint8Array>,
  ) {
    this.catByNode = Array.from({ length: feature.length }, (_, k) => catLeft.get(k));
  }

  get nodes(): number {
    return this.feature.length;
  }

  get leaves(): number {
    let k = 0;
    for (let i = 0; i < this.feature.length; i++) if (this.feature[i] === -1) k++;
    return k;
  }

  /** The leaf value for row i of column-major binned data with n rows. */
  predictBinned(binned: Uint8Array, n: number, i: number): number {
    let node = 0;
    for (;;) {
      const f = this.feature[node]!;
      if (f < 0) return this.value[node]!;
      const b = binned[f * n + i]!;
      const cat = this.catByNode[node];
      const goLeft = cat ? cat[b] === 1 : b === MISSING_BIN ? this.missingLeft[node] === 1 : b <= this.bin[node]!;
      node = goLeft ? this.left[node]! : this.right[node]!;
    }
  }

  toJSON(): TreeJSON {
    const cat: Record<string, number[]> = {};
    for (const [node, flags] of this.catLeft) {
      const bins: number[] = [];
      flags.forEach((v, b) => v && bins.push(b));
      cat[String(node)] = bins;
    }
    return {
      feature: Array.from(this.feature),
      bin: Array.from(this.bin),
      missing_left: Array.from(this.missingLeft),
      left: Array.from(this.left),
      right: Array.from(this.right),
      value: Array.from(this.value),
      gain: Array.from(this.gain),
      cat_left: cat,
    };
  }

  static fromJSON(j: TreeJSON): Tree {
    const cat = new Map<number, Uint8Array>();
    for (const [node, bins] of Object.entries(j.cat_left)) {
      const flags = new Uint8Array(MISSING_BIN + 1);
      for (const b of bins) flags[b] = 1;
      cat.set(Number(node), flags);
    }
    return new Tree(
      Int32Array.from(j.feature),
      Int32Array.from(j.bin),
      Uint8Array.from(j.missing_left),
      Int32Array.from(j.left),
      Int32Array.from(j.right),
      Float64Array.from(j.value),
      Float64Array.from(j.gain),
      cat,
    );
  }
}
