/**
 * Named trainable weights of the anomaly model, created once with seeded Glorot-uniform values, and
 * saved as `model/weights.bin` (float32, concatenated) + `model/weights.json` (name, shape, offset).
 */
import { tf } from '../../core/tf.js';
import type { Rng } from '../../core/rng.js';

export interface WeightEntry {
  name: string;
  shape: number[];
  offset: number;
}

export class Params {
  readonly vars = new Map<string, tf.Variable>();

  constructor(private readonly rng: Rng) {}

  /** Glorot-uniform weight [fanIn, fanOut] (or any shape, fans from its first and last dims). */
  glorot(name: string, shape: number[]): tf.Variable {
    const fanIn = shape.length > 1 ? shape.slice(0, -1).reduce((a, b) => a * b, 1) : shape[0]!;
    const fanOut = shape[shape.length - 1]!;
    const limit = Math.sqrt(6 / (fanIn + fanOut));
    const size = shape.reduce((a, b) => a * b, 1);
    const data = new Float32Array(size);
    for (let i = 0; i < size; i++) data[i] = (this.rng.next() * 2 - 1) * limit;
    return this.add(name, tf.tensor(data, shape));
  }

  zeros(name: string, shape: number[]): tf.Variable {
    return this.add(name, tf.zeros(shape));
  }

  private add(name: string, t: tf.Tensor): tf.Variable {
    if (this.vars.has(name)) throw new Error(`weight ${name} defined twice`);
    const v = tf.variable(t, true, `${name}_${Math.random().toString(36).slice(2, 8)}`);
    t.dispose();
    this.vars.set(name, v);
    return v;
  }

  list(): tf.Variable[] {
    return [...this.vars.values()];
  }

  export(): { index: WeightEntry[]; blob: Float32Array } {
    const index: WeightEntry[] = [];
    let total = 0;
    for (const [name, v] of this.vars) {
      index.push({ name, shape: v.shape, offset: total });
      total += v.size;
    }
    const blob = new Float32Array(total);
    for (const e of index) blob.set(this.vars.get(e.name)!.dataSync() as Float32Array, e.offset);
    return { index, blob };
  }

  /** Loads saved values; a missing or mis-shaped weight means the run and the code disagree. */
  load(index: WeightEntry[], blob: Float32Array): void {
    const byName = new Map(index.map((e) => [e.name, e]));
    for (const [name, v] of this.vars) {
      const e = byName.get(name);
      if (!e || e.shape.join('x') !== v.shape.join('x')) throw new Error(`saved weight ${name} missing or shaped ${e?.shape.join('x')} (model expects ${v.shape.join('x')})`);
      v.assign(tf.tensor(blob.subarray(e.offset, e.offset + v.size), v.shape));
    }
  }

  dispose(): void {
    for (const v of this.vars.values()) v.dispose();
    this.vars.clear();
  }
}
