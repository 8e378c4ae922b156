/**
 * A snapshot as the model sees it: standardised node features, the observed call edges with their
 * weights (each call's share of its source's outgoing traffic), and the message-passing edge list —
 * calls in both directions (a service is shaped by its callers' load and its callees' latency) plus a
 * self-loop per service, each with edge features [share, is_reverse, is_self, standardised extras…].
 */
import { standardise, type FeatureStats } from './features.js';
import type { Snapshot } from './source.js';

export interface SnapshotGraph {
  ts: number;
  services: string[];
  index: Map<string, number>;
  n: number;
  /** [n × F] standardised */
  x: Float32Array;
  /** observed directed calls */
  src: Int32Array;
  dst: Int32Array;
  share: Float32Array;
  /** message-passing edges (j → i), self-loops included */
  mpSrc: Int32Array;
  mpDst: Int32Array;
  /** [m × edgeDim] */
  mpAttr: Float32Array;
  /** undirected neighbours (callers and callees) per service */
  neighbours: number[][];
}

/** The same service names in the same order. */
export function sameServices(a: readonly string[], b: readonly string[]): boolean {
  if (a === b) return true;
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** Width of the message-passing edge features for `extra` standardised edge columns. */
export function edgeDim(extra: number): number {
  return 3 + extra;
}

/**
 * `previous`: the last snapshot's graph; when it has the same services in the same order (the usual
 * case between scrapes) its name → row index is reused rather than rebuilt.
 */
export function buildGraph(s: Snapshot, stats: FeatureStats, previous?: SnapshotGraph | null): SnapshotGraph {
  const n = s.services.length;
  const E = s.src.length;
  const Fe = stats.edge.length;
  const out = new Float64Array(n);
  for (let e = 0; e < E; e++) out[s.src[e]!]! += s.rate[e]!;
  const outDeg = new Int32Array(n);
  for (let e = 0; e < E; e++) outDeg[s.src[e]!]!++;
  const share = new Float32Array(E);
  for (let e = 0; e < E; e++) {
    const tot = out[s.src[e]!]!;
    // A source whose calls all report rate 0 (idle) spreads its weight evenly rather than dividing by 0.
    share[e] = tot > 0 ? s.rate[e]! / tot : 1 / outDeg[s.src[e]!]!;
  }
  const extra = standardise(s.edgeFeatures, stats.edge);
  const D = edgeDim(Fe);
  const m = 2 * E + n;
  const mpSrc = new Int32Array(m);
  const mpDst = new Int32Array(m);
  const mpAttr = new Float32Array(m * D);
  // Each call twice: forward at e, reversed at E + e (written out: a per-edge [[e, 0], [E + e, 1]]
  // literal allocated two arrays per call on every scrape).
  for (let e = 0; e < E; e++) {
    const a = s.src[e]!;
    const b = s.dst[e]!;
    const f0 = e * D;
    const r0 = (E + e) * D;
    mpSrc[e] = a;
    mpDst[e] = b;
    mpSrc[E + e] = b;
    mpDst[E + e] = a;
    mpAttr[f0] = share[e]!;
    mpAttr[r0] = share[e]!;
    mpAttr[r0 + 1] = 1;
    for (let f = 0; f < Fe; f++) {
      const v = extra[e * Fe + f]!;
      mpAttr[f0 + 3 + f] = v;
      mpAttr[r0 + 3 + f] = v;
    }
  }
  for (let i = 0; i < n; i++) {
    const k = 2 * E + i;
    mpSrc[k] = i;
    mpDst[k] = i;
    mpAttr[k * D + 2] = 1;
  }
  const neighbours: number[][] = Array.from({ length: n }, () => []);
  for (let e = 0; e < E; e++) {
    neighbours[s.src[e]!]!.push(s.dst[e]!);
    neighbours[s.dst[e]!]!.push(s.src[e]!);
  }
  return {
    ts: s.ts,
    services: s.services,
    index: previous && sameServices(previous.services, s.services) ? previous.index : new Map(s.services.map((name, i) => [name, i])),
    n,
    x: standardise(s.features, stats.node),
    src: s.src,
    dst: s.dst,
    share,
    mpSrc,
    mpDst,
    mpAttr,
    neighbours,
  };
}

/**
 * How the current snapshot's services map onto a past snapshot's embeddings: row i of `matrix`
 * [n_now × n_past] is one-hot at service i's past row when it existed then; otherwise the mean over its
 * current neighbours that did (a new service starts from its neighbourhood's history — no cold-start
 * spike); otherwise all zero with `fallback[i] = 1` (the caller then uses the current embedding).
 * Services that left since are simply not referenced: removed services drop out.
 */
export function alignment(now: { services: string[]; neighbours: number[][] }, past: { index: Map<string, number>; n: number }): { matrix: Float32Array; fallback: Float32Array; newServices: number } {
  const n = now.services.length;
  const matrix = new Float32Array(n * past.n);
  const fallback = new Float32Array(n);
  let newServices = 0;
  for (let i = 0; i < n; i++) {
    const j = past.index.get(now.services[i]!);
    if (j !== undefined) {
      matrix[i * past.n + j] = 1;
      continue;
    }
    newServices++;
    const rows = now.neighbours[i]!.map((nb) => past.index.get(now.services[nb]!)).filter((r): r is number => r !== undefined);
    if (rows.length === 0) {
      fallback[i] = 1;
      continue;
    }
    for (const r of rows) matrix[i * past.n + r]! += 1 / rows.length;
  }
  return { matrix, fallback, newServices };
}
