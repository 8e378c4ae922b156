/**
 * Session recommender inputs as typed arrays, from raw requests (key values and nanosecond times, what the
 * exported model reads) — the same formulas the ONNX graph computes: Δ in float64 days from the int64
 * difference, rounded once to float32; unknown user → fallback; unknown session item → the fallback row.
 */
import type { SessionBatch } from './session_model.js';
import type { SessionSpec } from './session_spec.js';

const NS_PER_DAY = 86_400e9;

/** One request as a client sends it. */
export interface SessionRequest {
  anchor_ns: bigint;
  user: string | bigint;
  /** session elements, any order; at most `session.max_length` */
  items: (string | bigint)[];
  times_ns: bigint[];
}

/** A key → row map over a table's keys (keys compared as text, so "007" and "7" stay distinct). */
export function keyIndex(keys: ArrayLike<string | bigint>): Map<string, number> {
  const m = new Map<string, number>();
  for (let i = 0; i < keys.length; i++) m.set(String(keys[i]), i);
  return m;
}

export function sessionBatchFromRequests(
  spec: SessionSpec,
  reqs: readonly SessionRequest[],
  users: { index: Map<string, number>; vectors: Float32Array },
  items: Map<string, number>,
): SessionBatch {
  const n = reqs.length;
  const N = spec.session.max_length;
  const du = spec.user.dim;
  const user = new Float32Array(n * du);
  const userMissing = new Float32Array(n);
  const itemRows = new Int32Array(n * N).fill(spec.items);
  const mask = new Float32Array(n * N);
  const delta = new Float32Array(n * N);
  reqs.forEach((r, i) => {
    const u = users.index.get(String(r.user));
    if (u === undefined) userMissing[i] = 1;
    else user.set(users.vectors.subarray(u * du, (u + 1) * du), i * du);
    if (r.items.length > N) throw new RangeError(`a session has ${r.items.length} elements, the model takes at most ${N}`);
    r.items.forEach((key, j) => {
      const slot = i * N + j;
      itemRows[slot] = items.get(String(key)) ?? spec.items;
      mask[slot] = 1;
      delta[slot] = Math.max(0, Math.fround(Number(r.anchor_ns - r.times_ns[j]!) / NS_PER_DAY));
    });
  });
  return { n, user, userMissing, items: itemRows, mask, delta };
}
