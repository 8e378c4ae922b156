/**
 * A snapshot as the model sees it: standardised node features, the observed call edges with their
 * weights (each call's share of its source's outgoing traffic), and the message-passing edge list —
 * calls in both directions (a service is shaped by its callers' load and its callees' latency) plus a
 * self-loop per service, each with edge features [share, is_reverse, is_self, standardised extras…].
 */
import { standardise, type FeatureStats } from './features.js';
import type { Snapshot } from './source.js';
import { FRESH, type Arrays } from './workspace.js';

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
  readonly neighbours: number[][];
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
 * `arrays`: where the graph's typed arrays come from — fresh ones by default; a `Workspace` (the
 * detector's) reuses them, and the graph's arrays then last only until the next build with it.
 */
export function buildGraph(s: Snapshot, stats: FeatureStats, previous?: SnapshotGraph | null, arrays: Arrays = FRESH): SnapshotGraph {
  const n = s.services.length;
  // The columns in locals: a property load inside the loops is not hoisted once the function has seen
  // snapshots of more than one shape, and cost more than the loops' own work.
  const { src, dst, rate } = s;
  const E = src.length;
  const Fe = stats.edge.length;
  const out = arrays.float64('graph.out', n);
  for (let e = 0; e < E; e++) out[src[e]!]! += rate[e]!;
  const outDeg = arrays.int32('graph.out_degree', n);
  for (let e = 0; e < E; e++) outDeg[src[e]!]!++;
  const share = arrays.float32('graph.share', E);
  for (let e = 0; e < E; e++) {
    const tot = out[src[e]!]!;
    // A source whose calls all report rate 0 (idle) spreads its weight evenly rather than dividing by 0.
    share[e] = tot > 0 ? rate[e]! / tot : 1 / outDeg[src[e]!]!;
  }
  const extra = standardise(s.edgeFeatures, stats.edge, arrays.float32('graph.edge_features', s.edgeFeatures.length));
  const D = edgeDim(Fe);
  const m = 2 * E + n;
  const mpSrc = arrays.int32('graph.mp_src', m);
  const mpDst = arrays.int32('graph.mp_dst', m);
  const mpAttr = arrays.float32('graph.mp_attr', m * D);
  // Each call twice: forward at e, reversed at E + e (written out: a per-edge [[e, 0], [E + e, 1]]
  // literal allocated two arrays per call on every scrape).
  for (let e = 0; e < E; e++) {
    const a = src[e]!;
    const b = dst[e]!;
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
  // Built on first use (events, new services, exporting the state): n arrays per snapshot would be 40%
  // of a scrape's garbage at 500 services, and most snapshots need none of them.
  let neighbours: number[][] | undefined;
  return {
    ts: s.ts,
    services: s.services,
    index: previous && sameServices(previous.services, s.services) ? previous.index : new Map(s.services.map((name, i) => [name, i])),
    n,
    x: standardise(s.features, stats.node, arrays.float32('graph.x', s.features.length)),
    src,
    dst,
    share,
    mpSrc,
    mpDst,
    mpAttr,
    get neighbours(): number[][] {
      return (neighbours ??= undirectedNeighbours(n, src, dst));
    },
  };
}

function undirectedNeighbours(n: number, src: Int32Array, dst: Int32Array): number[][] {
  const out: number[][] = Array.from({ length: n }, () => []);
  for (let e = 0; e < src.length; e++) {
    out[src[e]!]!.push(dst[e]!);
    out[dst[e]!]!.push(src[e]!);
  }
  return out;
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
