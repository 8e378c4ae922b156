/**
 * The helpers composed the way the export stage will compose them: a fact row, an entity embedding
 * looked up by key, and a variable-length RTI sequence, into one probability. The JS reference below
 * is the formula the TF.js distilled model computes; ORT must match it at batch 1, inside a padded
 * dynamic batch, with unknown keys and with empty sequences.
 */
import { describe, expect, it } from 'vitest';
import {
  concat,
  dense,
  INT64_MIN,
  keyedEmbedding,
  maskedMeanPool,
  OnnxGraphBuilder,
  relativeTime,
  squeeze,
  standardize,
} from '../../../src/artifacts/onnx/index.js';
import { expectClose, f32, i64, openSession, randomFloats, str } from './ort_helpers.js';

const RTI = 'transactions.customer_id->customers.customer_id->transactions.customer_id';
const DAY = 86_400e9;
const D = 4; // embedding dim
const H = 6; // hidden units
const vocab = ['c1', 'c2', '003'];
const table = randomFloats(vocab.length * D, 41);
const priceStats = { mean: Float32Array.of(20), std: Float32Array.of(8) };
const rtiStats = { mean: Float32Array.of(15), std: Float32Array.of(5) };
const inDim = 2 + D + 2;
const W1 = randomFloats(inDim * H, 42);
const b1 = randomFloats(H, 43);
const W2 = randomFloats(H, 44);
const b2 = Float32Array.of(0.1);

function buildModel(): Uint8Array {
  const g = new OnnxGraphBuilder();
  const anchor = g.addInput('anchor_time', 'INT64', ['batch', 1]);
  const price = g.addInput('transactions.price', 'FLOAT', ['batch', 1]);
  const customer = g.addInput('transactions.customer_id', 'STRING', ['batch', 1]);
  const rtiPrice = g.addInput(`${RTI}:price`, 'FLOAT', ['batch', 'seq', 1]);
  const rtiTime = g.addInput(`${RTI}:t_dat`, 'INT64', ['batch', 'seq', 1]);

  const p = standardize(g, price, { ...priceStats, name: 'price' });
  const emb = squeeze(g, keyedEmbedding(g, customer, { vocab, table: { data: table, rows: vocab.length, dim: D, name: 'customers' }, fallback: 'zeros' }), [1]);
  const rel = relativeTime(g, rtiTime, anchor, { tRank: 3 });
  const rp = standardize(g, rtiPrice, { ...rtiStats, name: 'rti_price' });
  const pooled = maskedMeanPool(g, concat(g, [rp.value, rel.value], 2), squeeze(g, rel.mask, [2]));
  const h = dense(g, concat(g, [p.value, p.isNull, emb, pooled], 1), { kernel: W1, bias: b1, inputDim: inDim, units: H, activation: 'relu', name: 'hidden' });
  const y = dense(g, h, { kernel: W2, bias: b2, inputDim: H, units: 1, activation: 'sigmoid', name: 'head' });
  g.addOutput('prediction', 'FLOAT', ['batch', 1], { from: y });
  g.setMetadata('gnnctl.kind', 'distilled');
  return g.toBytes();
}

interface Request {
  anchor: bigint;
  price: number;
  customer: string;
  rti: { price: number; t: bigint }[];
}

/** The distilled model's formula in plain JS (float64 except where float32 rounding is part of the spec). */
function predictJs(r: Request): number {
  const std = (x: number, s: { mean: Float32Array; std: Float32Array }) => (Number.isNaN(x) ? 0 : Math.fround(Math.fround(x - s.mean[0]!) / s.std[0]!));
  const row = vocab.indexOf(r.customer);
  const emb = row < 0 ? new Array<number>(D).fill(0) : Array.from(table.subarray(row * D, (row + 1) * D));
  const valid = r.rti.filter((e) => e.t !== INT64_MIN);
  const n = Math.max(valid.length, 1);
  const pooled = [valid.reduce((a, e) => a + std(e.price, rtiStats), 0) / n, valid.reduce((a, e) => a + Math.fround(Number(r.anchor - e.t) / DAY), 0) / n];
  const x = [std(r.price, priceStats), Number.isNaN(r.price) ? 1 : 0, ...emb, ...pooled];
  let z = b2[0]!;
  for (let j = 0; j < H; j++) {
    let s = b1[j]!;
    for (let k = 0; k < inDim; k++) s += x[k]! * W1[k * H + j]!;
    z += Math.max(s, 0) * W2[j]!;
  }
  return 1 / (1 + Math.exp(-z));
}

/** A dynamic batch: sequences padded to the longest with the INT64_MIN time sentinel and NaN prices. */
function feeds(reqs: Request[]) {
  const seq = Math.max(0, ...reqs.map((r) => r.rti.length));
  const pad = <T,>(r: Request, f: (e: { price: number; t: bigint }) => T, fill: T) => [...r.rti.map(f), ...new Array<T>(seq - r.rti.length).fill(fill)];
  const b = reqs.length;
  return {
    anchor_time: i64(reqs.map((r) => r.anchor), [b, 1]),
    'transactions.price': f32(reqs.map((r) => r.price), [b, 1]),
    'transactions.customer_id': str(reqs.map((r) => r.customer), [b, 1]),
    [`${RTI}:price`]: f32(reqs.flatMap((r) => pad(r, (e) => e.price, NaN)), [b, seq, 1]),
    [`${RTI}:t_dat`]: i64(reqs.flatMap((r) => pad(r, (e) => e.t, INT64_MIN)), [b, seq, 1]),
  };
}

const anchor = 1_710_000_000_000_000_000n;
const day = 86_400_000_000_000n;
const requests: Request[] = [
  { anchor, price: 29.99, customer: 'c2', rti: [{ price: 19.99, t: anchor - 2n * day }, { price: 4.99, t: anchor - day }, { price: 12.5, t: anchor - 3n }] },
  { anchor: anchor + day, price: NaN, customer: 'unknown', rti: [] },
  { anchor, price: 5, customer: '003', rti: [{ price: NaN, t: anchor - 30n * day }] },
  { anchor, price: 100, customer: '3', rti: [{ price: 50, t: anchor - 400n * day }, { price: 1, t: anchor }] },
];

describe('a distilled model composed from the helpers', () => {
  it('matches the JS formula at batch 1 and inside a padded dynamic batch', async () => {
    const session = await openSession(buildModel());
    try {
      const batched = await session.run(feeds(requests));
      expect(batched.prediction!.dims).toEqual([requests.length, 1]);
      const got = batched.prediction!.data as Float32Array;
      expectClose(got, requests.map(predictJs));
      for (let i = 0; i < requests.length; i++) {
        const one = await session.run(feeds([requests[i]!]));
        expectClose(one.prediction!.data as Float32Array, [got[i]!], 1e-6);
      }
      // A batch where every request has an empty sequence (seq = 0 on the wire).
      const empty = await session.run(feeds([requests[1]!, { ...requests[0]!, rti: [] }]));
      expectClose(empty.prediction!.data as Float32Array, [predictJs(requests[1]!), predictJs({ ...requests[0]!, rti: [] })]);
      expect(Array.from(got).every((p) => p > 0 && p < 1)).toBe(true);
    } finally {
      await session.release();
    }
  });
});
