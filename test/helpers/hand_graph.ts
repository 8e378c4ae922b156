/**
 * Hand-made graphs for sampler and batch tests: two node types, `users` (no time column) and `events`
 * (time-ordered, one user each), with the FK edge events → users and its reverse CSR users ← events.
 * Only the fields the sampler, planner and feature code read are filled in (a real `Graph` around them).
 */
import { Graph, type EdgeType, type NodeTable } from '../../src/graph/graph.js';
import { reverseCsr } from '../../src/graph/csr.js';

export interface HandGraph {
  graph: Graph;
  /** event node → user node */
  owner: Int32Array;
  /** event times (epoch seconds, non-decreasing in node order) */
  time: Float64Array;
  fk: EdgeType;
  rev: EdgeType;
}

export const FK_EDGE = 'events.user_id->users';
export const REV_EDGE = 'users<-events.user_id';

/** `owner[i]` is the user of event i, `time[i]` its time (must be non-decreasing: node ids are time order). */
export function handGraph(owner: Int32Array, time: Float64Array, users: number, opts: { userTime?: Float64Array } = {}): HandGraph {
  for (let i = 1; i < time.length; i++) if (time[i]! < time[i - 1]!) throw new Error('event times must be non-decreasing in node order');
  const { indptr, indices } = reverseCsr(owner, users);
  const table = (name: string, rows: number, t: Float64Array | null): NodeTable =>
    ({ name, rows, manifest: {} as NodeTable['manifest'], time: t, numeric: [], categorical: [], timestamps: [] }) as NodeTable;
  const fk: EdgeType = { meta: {} as EdgeType['meta'], name: FK_EDGE, src: 'events', dst: 'users', kind: 'fk', parent: owner, indptr: null, indices: null };
  const rev: EdgeType = { meta: {} as EdgeType['meta'], name: REV_EDGE, src: 'users', dst: 'events', kind: 'rev', parent: null, indptr, indices };
  const tables = { users: table('users', users, opts.userTime ?? null), events: table('events', owner.length, time) };
  const graph = Graph.fromShared({ dir: '', manifest: {} as Graph['manifest'], tables, edges: [fk, rev], prefixSums: [] });
  return { graph, owner, time, fk, rev };
}

/** Wraps a typed array so every element read is counted (for cost assertions, not speed). */
export function countingArray<T extends Int32Array | Float64Array>(a: T, counter: { reads: number }): T {
  return new Proxy(a, {
    get(target, prop) {
      if (typeof prop === 'string' && /^\d+$/.test(prop)) {
        counter.reads++;
        return target[Number(prop)];
      }
      const v = Reflect.get(target, prop, target) as unknown;
      return typeof v === 'function' ? (v as (...args: unknown[]) => unknown).bind(target) : v;
    },
  });
}
