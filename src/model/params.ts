/**
 * Named trainable weights with seeded initialization, saved as one little-endian float32 blob plus an
 * index (name, shape, offset). Every layer creates its weights here once, so a model round-trips
 * through `save`/`load` exactly, and fine-tuning can grow an embedding table in place.
 */
import { tf } from '../core/tf.js';
import type { WeightIndexEntry } from '../artifacts/run_store.js';
import { Rng } from '../core/rng.js';


let stores = 0;

export class ParamStore {
  readonly vars = new Map<string, tf.Variable>();
  private readonly rng: Rng;
  /** TF.js variable names are global: each store prefixes its own so two models can coexist. */
  private readonly prefix: string;

  constructor(seed: number) {
    this.rng = new Rng(seed);
    this.prefix = `p${stores++}/`;
  }

  /** Glorot-uniform weight [fanIn, fanOut] (or any shape; fans from the first and last dims). */
  glorot(name: string, shape: number[]): tf.Variable {
    const fanIn = shape.length > 1 ? shape.slice(0, -1).reduce((a, b) => a * b, 1) : shape[0]!;
    const fanOut = shape[shape.length - 1]!;
    const limit = Math.sqrt(6 / Math.max(1, fanIn + fanOut));
    return this.create(name, shape, () => (this.rng.next() * 2 - 1) * limit);
  }

  normal(name: string, shape: number[], std: number): tf.Variable {
    return this.create(name, shape, () => this.rng.normal() * std);
  }

  zeros(name: string, shape: number[]): tf.Variable {
    return this.create(name, shape, () => 0);
  }

  ones(name: string, shape: number[]): tf.Variable {
    return this.create(name, shape, () => 1);
  }

  get(name: string): tf.Variable {
    const v = this.vars.get(name);
    if (!v) throw new Error(`no weight named ${name}`);
    return v;
  }

  private create(name: string, shape: number[], init: () => number): tf.Variable {
    if (this.vars.has(name)) throw new Error(`weight ${name} created twice`);
    const size = shape.reduce((a, b) => a * b, 1);
    const data = new Float32Array(size);
    for (let i = 0; i < size; i++) data[i] = init();
    const initial = tf.tensor(data, shape, 'float32');
    const v = tf.variable(initial, true, `${this.prefix}${name}`);
    initial.dispose();
    this.vars.set(name, v);
    return v;
  }

  /** Number of scalar parameters (optionally excluding names matching a pattern). */
  count(exclude?: RegExp): number {
    let n = 0;
    for (const [name, v] of this.vars) if (!exclude || !exclude.test(name)) n += v.size;
    return n;
  }

  /** Snapshot of every weight as typed arrays (the best checkpoint is kept this way, off the tensor heap). */
  snapshot(): Map<string, Float32Array> {
    const m = new Map<string, Float32Array>();
    for (const [name, v] of this.vars) m.set(name, v.dataSync() as Float32Array);
    return m;
  }

  restore(snap: Map<string, Float32Array>): void {
    for (const [name, v] of this.vars) {
      const data = snap.get(name);
      if (!data) throw new Error(`checkpoint lacks weight ${name}`);
      v.assign(tf.tensor(data, v.shape, 'float32'));
    }
  }

  serialize(snap: Map<string, Float32Array> = this.snapshot()): { index: WeightIndexEntry[]; blob: Float32Array } {
    const index: WeightIndexEntry[] = [];
    let total = 0;
    for (const [name, v] of this.vars) {
      index.push({ name, shape: v.shape, offset: total });
      total += v.size;
    }
    const blob = new Float32Array(total);
    for (const e of index) blob.set(snap.get(e.name)!, e.offset);
    return { index, blob };
  }

  /**
   * Loads weights saved by `serialize`. A saved weight whose first dimension is smaller than the current
   * one (an embedding table whose vocabulary grew) fills the leading rows and keeps the new rows' init.
   */
  load(index: WeightIndexEntry[], blob: Float32Array, opts: { allowGrow?: boolean } = {}): void {
    for (const e of index) {
      const v = this.vars.get(e.name);
      if (!v) throw new Error(`saved weight ${e.name} has no counterpart in the model`);
      const size = e.shape.reduce((a, b) => a * b, 1);
      const saved = blob.subarray(e.offset, e.offset + size);
      const same = e.shape.length === v.shape.length && e.shape.every((d, i) => d === v.shape[i]);
      if (same) {
        v.assign(tf.tensor(saved, v.shape, 'float32'));
      } else if (opts.allowGrow && e.shape.length === v.shape.length && e.shape.slice(1).every((d, i) => d === v.shape[i + 1]) && e.shape[0]! <= v.shape[0]!) {
        const cur = v.dataSync() as Float32Array;
        const merged = new Float32Array(cur);
        merged.set(saved, 0);
        v.assign(tf.tensor(merged, v.shape, 'float32'));
      } else {
        throw new Error(`saved weight ${e.name} has shape [${e.shape}] but the model needs [${v.shape}]`);
      }
    }
  }

  /** Total scalar count, in the order `serialize` lays weights out (creation order). */
  size(): number {
    let n = 0;
    for (const v of this.vars.values()) n += v.size;
    return n;
  }

  /** Sets every weight from a flat blob in `serialize` order. */
  assignBlob(blob: Float32Array): void {
    let o = 0;
    for (const v of this.vars.values()) {
      const t = tf.tensor(blob.subarray(o, o + v.size), v.shape, 'float32');
      v.assign(t);
      t.dispose();
      o += v.size;
    }
  }

  /** Gradients keyed by TF.js variable name → one flat blob in `serialize` order (missing ones are 0). */
  gradientBlob(grads: tf.NamedTensorMap, out: Float32Array = new Float32Array(this.size())): Float32Array {
    let o = 0;
    for (const v of this.vars.values()) {
      const g = grads[v.name];
      if (g) out.set(g.dataSync() as Float32Array, o);
      else out.fill(0, o, o + v.size);
      o += v.size;
    }
    return out;
  }

  dispose(): void {
    for (const v of this.vars.values()) v.dispose();
    this.vars.clear();
  }
}
