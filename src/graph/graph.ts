/**
 * A built graph loaded into memory: typed arrays per table and per edge type, read straight from the
 * graph artifact's files (no per-row objects). Later stages read graphs only through this class.
 */
import { closeSync, existsSync, fstatSync, openSync, readFileSync, readSync } from 'node:fs';
import { join } from 'node:path';
import { ArtifactError } from '../core/errors.js';
import { sharedArray } from '../core/shared_memory.js';
import type { CategoricalColumnManifest, EdgeManifest, GraphManifest, NumericColumnManifest, TableManifest } from '../artifacts/graph_manifest.js';

export interface NodeTable {
  name: string;
  rows: number;
  manifest: TableManifest;
  /** epoch seconds per node (time order), or null for tables without a time column */
  time: Float64Array | null;
  numeric: { meta: NumericColumnManifest; values: Float32Array }[];
  categorical: { meta: CategoricalColumnManifest; codes: Int32Array }[];
  timestamps: { name: string; values: Float64Array }[];
}

export interface EdgeType {
  meta: EdgeManifest;
  name: string;
  src: string;
  dst: string;
  kind: 'fk' | 'rev';
  /** fk: parent node id per src node (−1: none) */
  parent: Int32Array | null;
  /** rev: CSR over src nodes, neighbours in time order */
  indptr: Int32Array | null;
  indices: Int32Array | null;
}

export class Graph {
  readonly dir: string;
  readonly manifest: GraphManifest;
  readonly tables: Record<string, NodeTable>;
  readonly edges: EdgeType[];
  /** `prefixSum`'s arrays, by edge and column */
  private readonly prefixSums: Map<string, Float64Array>;

  private constructor(dir: string, manifest: GraphManifest, tables: Record<string, NodeTable>, edges: EdgeType[], prefixSums: Map<string, Float64Array> = new Map()) {
    this.dir = dir;
    this.manifest = manifest;
    this.tables = tables;
    this.edges = edges;
    this.prefixSums = prefixSums;
  }

  static load(dir: string): Graph {
    const mpath = join(dir, 'manifest.json');
    if (!existsSync(mpath)) throw new ArtifactError(`no graph at ${dir} (manifest.json missing)`, { hint: 'run `gnnctl graph build --config FILE`' });
    const manifest = JSON.parse(readFileSync(mpath, 'utf8')) as GraphManifest;
    const tables: Record<string, NodeTable> = {};
    for (const [name, tm] of Object.entries(manifest.tables)) {
      tables[name] = {
        name,
        rows: tm.rows,
        manifest: tm,
        time: tm.time_file ? readF64(join(dir, tm.time_file)) : null,
        numeric: tm.numeric.map((meta) => ({ meta, values: readF32(join(dir, meta.file)) })),
        categorical: tm.categorical.map((meta) => ({ meta, codes: readI32(join(dir, meta.file)) })),
        timestamps: tm.timestamps.map((m) => ({ name: m.name, values: readF64(join(dir, m.file)) })),
      };
    }
    const edges: EdgeType[] = manifest.edges.map((meta) => {
      if (meta.kind === 'fk') {
        const fk = manifest.tables[meta.src]!.foreign_keys.find((f) => f.column === meta.column)!;
        return { meta, name: meta.name, src: meta.src, dst: meta.dst, kind: 'fk', parent: readI32(join(dir, fk.file)), indptr: null, indices: null };
      }
      return {
        meta,
        name: meta.name,
        src: meta.src,
        dst: meta.dst,
        kind: 'rev',
        parent: null,
        indptr: readI32(join(dir, meta.indptr_file!)),
        indices: readI32(join(dir, meta.indices_file!)),
      };
    });
    return new Graph(dir, manifest, tables, edges);
  }

  /**
   * What a worker thread needs to rebuild this graph without copying it: the arrays live in
   * SharedArrayBuffers (see `buffer`), so posting them shares the memory.
   */
  shareable(): SharedGraph {
    return { dir: this.dir, manifest: this.manifest, tables: this.tables, edges: this.edges, prefixSums: [...this.prefixSums] };
  }

  static fromShared(s: SharedGraph): Graph {
    return new Graph(s.dir, s.manifest, s.tables, s.edges, new Map(s.prefixSums));
  }

  /**
   * Prefix sums of a numeric column of a reverse edge's child table in the edge's CSR order (length
   * edges + 1, NaN read as 0): a sum over any window of a node's time-sorted neighbours is then two reads
   * (the activity inputs, model/features.ts). Computed once per graph, in shared memory, and handed to
   * worker threads with it (`shareable`): every thread computing its own would take ~350 ms and 16 MB per
   * column at `medium`, 256 MB at `large` (32M transactions).
   */
  prefixSum(edge: EdgeType, column: string): Float64Array {
    const key = `${edge.name}\u0000${column}`;
    let p = this.prefixSums.get(key);
    if (p) return p;
    const indices = edge.indices;
    const values = this.tables[edge.dst]?.numeric.find((c) => c.meta.name === column)?.values;
    if (edge.kind !== 'rev' || !indices || !values) throw new Error(`prefixSum: ${edge.name} is not a reverse edge to a table with the numeric column ${column}`);
    p = sharedArray(Float64Array, indices.length + 1);
    for (let k = 0; k < indices.length; k++) {
      const x = values[indices[k]!]!;
      p[k + 1] = p[k]! + (Number.isNaN(x) ? 0 : x);
    }
    this.prefixSums.set(key, p);
    return p;
  }

  table(name: string): NodeTable {
    const t = this.tables[name];
    if (!t) throw new ArtifactError(`the graph has no table "${name}"`, { hint: `tables: ${Object.keys(this.tables).join(', ')}` });
    return t;
  }

  /** Edge types leaving a node type (the neighbours it aggregates from). */
  edgesFrom(table: string): EdgeType[] {
    return this.edges.filter((e) => e.src === table);
  }
}

export interface SharedGraph {
  dir: string;
  manifest: GraphManifest;
  tables: Record<string, NodeTable>;
  edges: EdgeType[];
  prefixSums: [string, Float64Array][];
}

/**
 * A file's bytes in a SharedArrayBuffer, read straight into it: data-parallel training hands the graph
 * to worker threads without a copy per thread (the graph is the largest thing in memory at H&M scale).
 */
function buffer(path: string): SharedArrayBuffer {
  const fd = openSync(path, 'r');
  try {
    const size = fstatSync(fd).size;
    const sab = new SharedArrayBuffer(size);
    const view = new Uint8Array(sab);
    for (let o = 0; o < size; ) {
      const n = readSync(fd, view, o, size - o, o);
      if (n <= 0) throw new Error(`short read of ${path}`);
      o += n;
    }
    return sab;
  } finally {
    closeSync(fd);
  }
}

export function readF64(path: string): Float64Array {
  return new Float64Array(buffer(path));
}

export function readF32(path: string): Float32Array {
  return new Float32Array(buffer(path));
}

export function readI32(path: string): Int32Array {
  return new Int32Array(buffer(path));
}
