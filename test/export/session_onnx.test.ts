/**
 * The session recommender's ONNX graph against the TF.js model it is built from, on random weights: the
 * ONNX top-k equals a brute-force top-k of the TF.js scores (keys and scores), an unknown user falls back
 * to the learned vector, unknown session items to the item fallback, candidates restrict the ranking
 * (fewer than k leave empty slots), and requests of different session lengths agree at batch 1 and padded
 * in one batch. Every case runs with and without the elements' session context (recency rank and count).
 */
import { tf } from '../../src/core/tf.js';
import * as ort from 'onnxruntime-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { selectBackend } from '../../src/compute/backend.js';
import { Rng } from '../../src/core/rng.js';
import { buildSessionOnnx, itemOutputName, sessionRequestInputs, SCORE_OUTPUT } from '../../src/export/session_onnx.js';
import { INT64_MIN } from '../../src/artifacts/onnx/ops/time.js';
import { keyIndex, sessionBatchFromRequests, type SessionRequest } from '../../src/model/student/session_features.js';
import { SessionModel } from '../../src/model/student/session_model.js';
import { NO_ITEM_SCORE, type SessionSpec } from '../../src/model/student/session_spec.js';

const PATH = 'customers.customer_id->transactions.customer_id';
const baseSpec: SessionSpec = {
  query: 'PREDICT LIST_DISTINCT(transactions.article_id, 0, 7, days) RANK TOP 5 FOR EACH customers.customer_id',
  user: { table: 'customers', column: 'customer_id', type: 'VARCHAR', dim: 6 },
  item: { table: 'articles', column: 'article_id', type: 'VARCHAR', dim: 5 },
  items: 40,
  session: { path: PATH, fact_table: 'transactions', item_column: 'article_id', time_column: 't_dat', max_length: 6 },
  k: 5,
  dim: 8,
  user_dim: 4,
  element_dim: 7,
  hidden: 9,
  use_user: true,
  use_rti: true,
};
const userKeys = Array.from({ length: 30 }, (_, i) => `c${String(i).padStart(3, '0')}`);
const itemKeys = Array.from({ length: baseSpec.items }, (_, i) => `0${100 + i}`);
const rng = new Rng(7);
const userVectors = Float32Array.from({ length: userKeys.length * baseSpec.user.dim }, () => rng.normal());
const itemVectors = Float32Array.from({ length: itemKeys.length * baseSpec.item.dim }, () => rng.normal());
const DAY = 86_400_000_000_000n;
const NOW = 1_600_000_000_000_000_000n;

describe.each([{ element_context: false }, { element_context: true }])('session recommender ONNX graph, element_context $element_context', (variant) => {
  const spec: SessionSpec = { ...baseSpec, ...variant };
  let model: SessionModel;
  let weights: Map<string, Float32Array>;
  let session: ort.InferenceSession;

  beforeAll(async () => {
    await selectBackend('wasm');
    model = new SessionModel(spec, 3, 0);
    // Random values everywhere (zero-initialised fallbacks and biases would hide lookups that go wrong).
    weights = new Map([...model.params.snapshot()].map(([k, v]) => [k, Float32Array.from(v, () => rng.normal() * 0.5)]));
    model.params.restore(weights);
    const g = buildSessionOnnx({ spec, weights, users: { keys: userKeys, vectors: userVectors, dim: spec.user.dim }, items: { keys: itemKeys, vectors: itemVectors, dim: spec.item.dim } });
    session = await ort.InferenceSession.create(g.toBytes());
  });
  afterAll(async () => {
    await session?.release();
    model?.dispose();
  });

  function request(user: string, n: number, seed: number): SessionRequest {
    const r = new Rng(seed);
    return {
      anchor_ns: NOW,
      user,
      items: Array.from({ length: n }, () => (r.next() < 0.1 ? 'unknown-item' : itemKeys[Math.floor(r.next() * itemKeys.length)]!)),
      times_ns: Array.from({ length: n }, () => NOW - BigInt(Math.floor(r.next() * 90)) * DAY - BigInt(Math.floor(r.next() * 86_400)) * 1_000_000_000n),
    };
  }

  /** ORT feeds for requests padded to the longest session; `candidates` per request (absent: not fed). */
  function feeds(reqs: SessionRequest[], candidates?: string[][]): Record<string, ort.Tensor> {
    const n = reqs.length;
    const S = Math.max(0, ...reqs.map((r) => r.items.length));
    const items: string[] = [];
    const times = new BigInt64Array(n * S).fill(INT64_MIN);
    reqs.forEach((r, i) => {
      for (let j = 0; j < S; j++) {
        items.push(j < r.items.length ? String(r.items[j]) : '');
        if (j < r.items.length) times[i * S + j] = r.times_ns[j]!;
      }
    });
    const out: Record<string, ort.Tensor> = {
      anchor_time: new ort.Tensor('int64', BigInt64Array.from(reqs, (r) => r.anchor_ns), [n, 1]),
      'customers.customer_id': new ort.Tensor('string', reqs.map((r) => String(r.user)), [n, 1]),
      [`${PATH}:t_dat`]: new ort.Tensor('int64', times, [n, S, 1]),
      [`${PATH}:article_id`]: new ort.Tensor('string', items, [n, S, 1]),
    };
    {
      candidates ??= reqs.map(() => []);
      const C = Math.max(0, ...candidates.map((c) => c.length));
      out.candidates = new ort.Tensor('string', candidates.flatMap((c) => Array.from({ length: C }, (_, j) => c[j] ?? '')), [n, C]);
    }
    return out;
  }

  function tfScores(reqs: SessionRequest[]): Float32Array[] {
    const b = sessionBatchFromRequests(spec, reqs, { index: keyIndex(userKeys), vectors: userVectors }, keyIndex(itemKeys));
    const s = tf.tidy(() => model.scores(b, tf.tensor2d(itemVectors, [spec.items, spec.item.dim]), false));
    const all = s.dataSync() as Float32Array;
    s.dispose();
    return reqs.map((_, i) => all.slice(i * spec.items, (i + 1) * spec.items));
  }

  function bruteTopK(scores: Float32Array, allowed?: Set<number>): { keys: string[]; scores: number[] } {
    const order = Array.from(scores.keys())
      .filter((i) => !allowed || allowed.has(i))
      .sort((a, b) => scores[b]! - scores[a]!)
      .slice(0, spec.k);
    return { keys: order.map((i) => itemKeys[i]!), scores: order.map((i) => scores[i]!) };
  }

    it('declares the contract\'s inputs; candidates may be left out (an empty list)', () => {
      const inputs = sessionRequestInputs(spec);
      expect(inputs.map((i) => i.name)).toEqual(['anchor_time', 'customers.customer_id', `${PATH}:t_dat`, `${PATH}:article_id`, 'candidates']);
      expect(inputs.find((i) => i.name === 'candidates')).toMatchObject({ missingValue: '', padValue: '', elemType: 'STRING', dims: [-1] });
      expect(session.outputNames).toEqual(['articles.article_id', 'score']);
    });

    it('the full-catalogue top-k equals a brute-force top-k of the TF.js scores, for known and unknown users', async () => {
      const reqs = [request('c001', 6, 1), request('c017', 3, 2), request('nobody', 4, 3), request('c002', 0, 4), request('c029', 1, 5)];
      const expected = tfScores(reqs);
      for (const [i, r] of reqs.entries()) {
        const out = await session.run(feeds([r]));
        const want = bruteTopK(expected[i]!);
        expect(Array.from(out[itemOutputName(spec)]!.data as string[])).toEqual(want.keys);
        const got = Array.from(out[SCORE_OUTPUT]!.data as Float32Array);
        got.forEach((v, j) => expect(Math.abs(v - want.scores[j]!)).toBeLessThan(1e-4));
      }
    });

    it('an unknown user is answered from the learned fallback: the same answer for any unknown key, different from a known user', async () => {
      const a = await session.run(feeds([request('nobody', 3, 9)]));
      const b = await session.run(feeds([request('someone-else', 3, 9)]));
      const c = await session.run(feeds([request('c003', 3, 9)]));
      expect(Array.from(a.score!.data as Float32Array)).toEqual(Array.from(b.score!.data as Float32Array));
      expect(Array.from(a.score!.data as Float32Array)).not.toEqual(Array.from(c.score!.data as Float32Array));
      expect((a.score!.data as Float32Array).every(Number.isFinite)).toBe(true);
    });

    it('a padded batch of different session lengths gives each request its batch-1 answer', async () => {
      const reqs = [request('c001', 6, 11), request('c005', 0, 12), request('x', 2, 13)];
      const batch = await session.run(feeds(reqs));
      for (const [i, r] of reqs.entries()) {
        const one = await session.run(feeds([r]));
        const got = Array.from(batch.score!.data as Float32Array).slice(i * spec.k, (i + 1) * spec.k);
        const want = Array.from(one.score!.data as Float32Array);
        got.forEach((v, j) => expect(Math.abs(v - want[j]!)).toBeLessThan(1e-5));
        expect((batch[itemOutputName(spec)]!.data as string[]).slice(i * spec.k, (i + 1) * spec.k)).toEqual(one[itemOutputName(spec)]!.data);
      }
    });

    it('a session with repeated items and equal times (shared recency ranks) agrees with TF.js, in any element order', async () => {
      const t1 = NOW - 2n * DAY;
      const t2 = NOW - 9n * DAY;
      const items = [itemKeys[4]!, itemKeys[7]!, itemKeys[4]!, itemKeys[11]!, itemKeys[4]!, itemKeys[7]!];
      const times = [t1, t1, t2, t2, NOW - 30n * DAY, t1];
      const fwd: SessionRequest = { anchor_ns: NOW, user: 'c004', items, times_ns: times };
      const rev: SessionRequest = { anchor_ns: NOW, user: 'c004', items: [...items].reverse(), times_ns: [...times].reverse() };
      const want = bruteTopK(tfScores([fwd])[0]!);
      for (const r of [fwd, rev]) {
        const out = await session.run(feeds([r]));
        expect(Array.from(out[itemOutputName(spec)]!.data as string[])).toEqual(want.keys);
        Array.from(out.score!.data as Float32Array).forEach((v, j) => expect(Math.abs(v - want.scores[j]!)).toBeLessThan(1e-4));
      }
    });

    it('candidates restrict the ranking; fewer than k leave empty slots; none (or only padding) rank the catalogue', async () => {
      const reqs = [request('c001', 4, 21), request('c002', 4, 22), request('c003', 4, 23)];
      const expected = tfScores(reqs);
      const cands = [[itemKeys[3]!, itemKeys[9]!, itemKeys[1]!, itemKeys[30]!, itemKeys[22]!, itemKeys[17]!, itemKeys[5]!], [itemKeys[8]!, 'not-an-item', itemKeys[2]!], []];
      const out = await session.run(feeds(reqs, cands));
      const keys = out[itemOutputName(spec)]!.data as string[];
      const scores = out.score!.data as Float32Array;
      const r0 = bruteTopK(expected[0]!, new Set([3, 9, 1, 30, 22, 17, 5]));
      expect(keys.slice(0, 5)).toEqual(r0.keys);
      const r1 = bruteTopK(expected[1]!, new Set([8, 2]));
      expect(keys.slice(5, 10)).toEqual([...r1.keys, '', '', '']);
      expect(Array.from(scores.slice(7, 10))).toEqual([NO_ITEM_SCORE, NO_ITEM_SCORE, NO_ITEM_SCORE]);
      expect(keys.slice(10, 15)).toEqual(bruteTopK(expected[2]!).keys);
      // An empty [1, 0] list (what gnnctl serve feeds when a request leaves candidates out): the whole catalogue.
      const none = await session.run(feeds([reqs[0]!]));
      expect(Array.from(none[itemOutputName(spec)]!.data as string[])).toEqual(bruteTopK(expected[0]!).keys);
    });
});
