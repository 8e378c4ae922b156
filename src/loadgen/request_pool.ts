/**
 * The pool of requests a load test sends: built from the model's metadata (and its config's pad values
 * when the server exposes `/config`), generated and serialized before the clock starts so the generator
 * spends its time sending, not building JSON.
 *
 * Per request: one anchor time; a key that is a known one (from `knownKeys`) with probability
 * `knownKeyRate`, else a key no table holds; random fact values; and one RTI sequence length drawn
 * uniformly from 0..`maxSequence`, shared by every sequence input (they describe the same interactions),
 * with timestamps before the anchor. INT64 values are written as exact JSON integers.
 */
import { mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { writeFileAtomic } from '../core/atomic.js';
import { ArtifactError, UsageError } from '../core/errors.js';
import { Rng } from '../core/rng.js';

/** An input or output as `GET /v2/models/{name}` describes it. */
export interface TensorMetadata {
  name: string;
  datatype: string;
  shape: number[];
}

export interface ModelMetadata {
  name: string;
  versions?: string[];
  platform?: string;
  inputs: TensorMetadata[];
  outputs: TensorMetadata[];
}

export interface RequestPoolOptions {
  /** Requests in the pool (at least 2, so consecutive requests never send the same bytes). Default 512. */
  size?: number;
  seed?: number;
  /**
   * Keys the model knows (e.g. an embeddings.parquet key column): per key input name, or one list for
   * every key input. Without them every key is random.
   */
  knownKeys?: readonly (string | bigint)[] | ReadonlyMap<string, readonly (string | bigint)[]>;
  /** Share of requests with a known key, when `knownKeys` is given. Default 0.9. */
  knownKeyRate?: number;
  /** Longest RTI sequence (lengths drawn uniformly from 0..maxSequence). Default 32. */
  maxSequence?: number;
  /**
   * RTI sequence lengths to draw from instead (uniformly), e.g. Kumo's published benchmark's
   * N ∈ {4, 8, 16, 32}. Overrides `maxSequence`.
   */
  sequenceLengths?: readonly number[];
  /**
   * Inputs padded with INT64 min (the config's `pad_value:<input>` parameters), taken for time columns
   * and given timestamps before the anchor. Integer categoricals share that pad value in gnnctl's exports;
   * they then get timestamp-like codes, which the model reads as unknown categories: fine for a load test.
   */
  timeInputs?: ReadonlySet<string>;
  /** Anchor time in ns since the epoch. Default now. */
  anchorNs?: bigint;
}

export interface RequestPool {
  bodies: Buffer[];
  /** Mean body size in bytes. */
  meanBytes: number;
  /** Share of requests with a known key. */
  knownKeyShare: number;
  /** Mean RTI sequence length. */
  meanSequence: number;
}

const DAY_NS = 86_400_000_000_000n;

export function buildRequestPool(meta: ModelMetadata, options: RequestPoolOptions = {}): RequestPool {
  const size = Math.max(2, options.size ?? 512);
  const rng = new Rng(options.seed ?? 1);
  const rand = (): number => rng.next();
  const maxSeq = options.maxSequence ?? 32;
  const known = options.knownKeys instanceof Map ? options.knownKeys : new Map<string, readonly (string | bigint)[]>();
  const shared = Array.isArray(options.knownKeys) ? options.knownKeys : [];
  const hasKnown = shared.length > 0 || [...known.values()].some((k) => k.length > 0);
  const knownRate = hasKnown ? (options.knownKeyRate ?? 0.9) : 0;
  const anchor = options.anchorNs ?? BigInt(Date.now()) * 1_000_000n;
  const batching = meta.inputs.every((t) => t.shape[0] === -1);
  const bodies: Buffer[] = [];
  let knownCount = 0;
  let seqSum = 0;
  for (let r = 0; r < size; r++) {
    const lengths = options.sequenceLengths;
    const seq = lengths && lengths.length > 0 ? lengths[Math.floor(rand() * lengths.length)]! : Math.floor(rand() * (maxSeq + 1));
    seqSum += seq;
    const useKnown = rand() < knownRate;
    if (useKnown) knownCount++;
    const pick = (keys: readonly (string | bigint)[] | undefined): string | bigint | undefined => (keys && keys.length > 0 ? keys[Math.floor(rand() * keys.length)] : undefined);
    const sharedKey = useKnown ? pick(shared) : undefined;
    const keyFor = (input: string): string | bigint | undefined => (!useKnown ? undefined : known.size > 0 ? pick(known.get(input)) : sharedKey);
    const parts: string[] = [];
    for (const t of meta.inputs) {
      const inner = batching ? t.shape.slice(1) : t.shape;
      const isSeq = inner.includes(-1);
      const shape = (batching ? [1] : []).concat(inner.map((d) => (d === -1 ? seq : d)));
      const n = shape.reduce((a, b) => a * b, 1);
      const data = values(t, n, isSeq, { rand, anchor, key: isSeq ? undefined : keyFor(t.name), timeInputs: options.timeInputs });
      parts.push(`{"name":${JSON.stringify(t.name)},"datatype":"${t.datatype}","shape":[${shape.join(',')}],"data":[${data}]}`);
    }
    bodies.push(Buffer.from(`{"id":"${r}","inputs":[${parts.join(',')}]}`));
  }
  return {
    bodies,
    meanBytes: bodies.reduce((a, b) => a + b.length, 0) / size,
    knownKeyShare: knownCount / size,
    meanSequence: seqSum / size,
  };
}

/**
 * Writes a pool as `payload-00000.json`… files in `dir` (created if needed; each file written atomically),
 * for `bench serve --payloads DIR`: the same requests across runs and machines, as Kumo's benchmark
 * sends 128 pre-generated files.
 */
export function writePayloads(pool: RequestPool, dir: string): string[] {
  mkdirSync(dir, { recursive: true });
  return pool.bodies.map((b, i) => {
    const file = join(dir, `payload-${String(i).padStart(5, '0')}.json`);
    writeFileAtomic(file, b);
    return file;
  });
}

/**
 * The request bodies of `dir` (`*.json`, in name order), each checked to be a KServe V2 inference request
 * (a JSON object with an `inputs` array); the mean sequence length is the longest variable dimension of
 * each request's inputs.
 */
export function readPayloads(dir: string): RequestPool & { minBytes: number; maxBytes: number } {
  let names: string[];
  try {
    names = readdirSync(dir).filter((n) => n.endsWith('.json')).sort();
  } catch (e) {
    throw new UsageError(`cannot read --payloads: ${(e as Error).message}`, { value: dir });
  }
  if (names.length === 0) throw new UsageError('--payloads holds no .json request files', { value: dir, hint: 'one KServe V2 inference request (JSON) per file' });
  const bodies: Buffer[] = [];
  let seqSum = 0;
  for (const n of names) {
    const file = join(dir, n);
    const b = readFileSync(file);
    let req: { inputs?: { shape?: number[] }[] };
    try {
      req = JSON.parse(b.toString('utf8')) as typeof req;
    } catch (e) {
      throw new ArtifactError(`the payload is not JSON: ${(e as Error).message}`, { where: file });
    }
    if (typeof req !== 'object' || req === null || !Array.isArray(req.inputs)) throw new ArtifactError('the payload is not a KServe V2 inference request (no "inputs" array)', { where: file });
    seqSum += Math.max(0, ...req.inputs.map((t) => (Array.isArray(t.shape) && t.shape.length >= 3 ? Number(t.shape[1]) : 0)));
    bodies.push(b);
  }
  const sizes = bodies.map((b) => b.length);
  return { bodies, meanBytes: sizes.reduce((a, b) => a + b, 0) / sizes.length, minBytes: Math.min(...sizes), maxBytes: Math.max(...sizes), knownKeyShare: NaN, meanSequence: seqSum / bodies.length };
}

interface Gen {
  rand: () => number;
  anchor: bigint;
  key: string | bigint | undefined;
  timeInputs?: ReadonlySet<string>;
}

/** The JSON text of `n` values for input `t`. */
function values(t: TensorMetadata, n: number, isSeq: boolean, g: Gen): string {
  const { rand, anchor } = g;
  const column = (t.name.split(':').pop() ?? t.name).split('.').pop()!.toLowerCase();
  const out: string[] = new Array<string>(n);
  const isTime = t.datatype === 'INT64' && (g.timeInputs?.has(t.name) || t.name === 'anchor_time' || /(^|_)(time|date|dat|ts|timestamp)$/.test(column));
  const isKey = !isSeq && /(^|_)id$/.test(column);
  for (let i = 0; i < n; i++) {
    switch (t.datatype) {
      case 'INT64':
      case 'UINT64':
        if (t.name === 'anchor_time') out[i] = String(anchor);
        else if (isTime) out[i] = String(anchor - BigInt(Math.floor(rand() * 30 * 86_400)) * (DAY_NS / 86_400n));
        else if (isKey && g.key !== undefined && typeof g.key === 'bigint') out[i] = String(g.key);
        else if (isKey) out[i] = String(10_000_000_000 + Math.floor(rand() * 1e9)); // not a key any table holds
        else out[i] = String(Math.floor(rand() * 100_000));
        break;
      case 'INT8':
      case 'INT16':
      case 'INT32':
      case 'UINT8':
      case 'UINT16':
      case 'UINT32':
        out[i] = String(Math.floor(rand() * 100));
        break;
      case 'BOOL':
        out[i] = rand() < 0.5 ? 'true' : 'false';
        break;
      case 'BYTES':
        if (!isSeq && g.key !== undefined) out[i] = JSON.stringify(String(g.key));
        else out[i] = `"u${Math.floor(rand() * 1e9).toString(36)}"`;
        break;
      default:
        out[i] = String(Math.round(rand() * 10_000) / 100);
    }
  }
  if (isTime && isSeq) out.sort(); // oldest first, as RTI sequences come (same digit count, so text order is numeric)
  return out.join(',');
}
