/**
 * One loaded version of a model: its onnxruntime session (checked against `config.pbtxt` and warmed
 * up with a zero request before it serves), its dynamic batcher, and a reference count so that a
 * version replaced by a newer one finishes its in-flight requests before its session is released.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ArtifactError } from '../core/errors.js';
import { allocValues, v2FromOrt, type HostTensor } from './datatypes.js';
import type { DimGroup, InferRequest } from './decode.js';
import { DynamicBatcher, type BatcherObserver } from './batcher.js';
import { HttpError } from './http_error.js';
import type { ServedModelSpec, TensorSpec } from './model_spec.js';
import type { VersionFolder } from './repository.js';
import type { EmbeddingAnchor } from './server_metrics.js';
import { SessionHostError, type HostedSession, type SessionHost, type SessionInfo, type SessionOptions, type ValueInfo } from './session_host.js';

export type VersionState = 'ready' | 'retiring' | 'released';

export class ModelVersion {
  readonly name: string;
  readonly version: number;
  readonly spec: ServedModelSpec;
  readonly folder: VersionFolder;
  /** Axes that share a symbolic dimension in the ONNX model; requests must agree on them. */
  readonly sharedDims: DimGroup[];
  readonly loadMs: number;
  /** When this version's embeddings were computed, per table (from the export's manifest.json; may be empty). */
  readonly embeddingAnchors: EmbeddingAnchor[];
  /** Records one request's time in the server (seconds), for the request-duration histogram. */
  readonly observeDuration: (seconds: number) => void;
  private readonly session: HostedSession;
  private readonly batcher: DynamicBatcher;
  private refs = 0;
  private stateValue: VersionState = 'ready';
  private retired: Promise<void> | undefined;
  private releaseWaiter: (() => void) | undefined;

  constructor(args: {
    spec: ServedModelSpec;
    folder: VersionFolder;
    session: HostedSession;
    sharedDims: DimGroup[];
    observer?: BatcherObserver;
    observeDuration?: (seconds: number) => void;
    loadMs: number;
    embeddingAnchors?: EmbeddingAnchor[];
  }) {
    this.name = args.spec.name;
    this.version = args.folder.version;
    this.spec = args.spec;
    this.folder = args.folder;
    this.session = args.session;
    this.sharedDims = args.sharedDims;
    this.loadMs = args.loadMs;
    this.embeddingAnchors = args.embeddingAnchors ?? [];
    this.observeDuration = args.observeDuration ?? (() => undefined);
    this.batcher = new DynamicBatcher({
      spec: args.spec,
      run: (feeds, outputs) => this.session.run(feeds, outputs),
      instances: args.spec.instanceCount,
      observer: args.observer,
      describeError: (e) => {
        if (e instanceof HttpError) return e;
        if (e instanceof SessionHostError) return new HttpError(503, `model "${this.name}" version ${this.version} is unavailable: ${e.message}`, undefined, 'BACKEND');
        return new HttpError(400, `model "${this.name}" version ${this.version} failed on this request: ${e instanceof Error ? e.message : String(e)}`, undefined, 'BACKEND');
      },
    });
  }

  get state(): VersionState {
    return this.stateValue;
  }

  /** Requests waiting in the batcher for a batch to run them. */
  get queued(): number {
    return this.batcher.queued;
  }

  /** In-flight requests holding this version. */
  get inFlight(): number {
    return this.refs;
  }

  /** Takes a reference for one request; false once the version is retiring (resolve again). */
  acquire(): boolean {
    if (this.stateValue !== 'ready') return false;
    this.refs++;
    return true;
  }

  /** Gives back a reference taken with `acquire`. */
  release(): void {
    this.refs--;
    if (this.refs === 0 && this.releaseWaiter) this.releaseWaiter();
  }

  /**
   * Runs a decoded request through the batcher (the caller holds a reference). `deadline` is a
   * `performance.now()` time: still queued then, the request is dropped with 504.
   */
  infer(req: InferRequest, deadline?: number): Promise<Map<string, HostTensor>> {
    return this.batcher.submit(req, deadline);
  }

  /** Runs queued batches now instead of waiting out the queue delay, from now on (shutdown). */
  flush(): void {
    void this.batcher.drain();
  }

  /**
   * Stops taking requests, waits for the in-flight ones and the queued batches, then releases the
   * session. Idempotent.
   */
  retire(): Promise<void> {
    this.retired ??= (async () => {
      this.stateValue = 'retiring';
      if (this.refs > 0) await new Promise<void>((resolve) => (this.releaseWaiter = resolve));
      await this.batcher.drain();
      await this.session.release();
      this.stateValue = 'released';
    })();
    return this.retired;
  }
}

export interface LoadVersionOptions {
  sessionOptions?: SessionOptions;
  observer?: BatcherObserver;
  /** Records one request's time in the server (seconds). */
  observeDuration?: (seconds: number) => void;
}

/**
 * Creates the session for `folder`, checks the model's inputs and outputs against the config, runs a
 * warm-up request and returns the ready version. Throws an ArtifactError naming every mismatch; the
 * session is released on failure.
 */
export async function loadModelVersion(host: SessionHost, spec: ServedModelSpec, folder: VersionFolder, options: LoadVersionOptions = {}): Promise<ModelVersion> {
  const t0 = performance.now();
  let session: HostedSession;
  try {
    session = await host.load(folder.modelPath, options.sessionOptions);
  } catch (e) {
    throw new ArtifactError(`onnxruntime cannot load the model: ${e instanceof Error ? e.message : String(e)}`, { where: folder.modelPath });
  }
  try {
    const problems = checkIo(spec, session.info);
    if (problems.length > 0) {
      throw new ArtifactError(`the model does not match config.pbtxt:\n${problems.map((p) => `  - ${p}`).join('\n')}`, { where: folder.modelPath });
    }
    await warmUp(spec, session, folder);
    return new ModelVersion({
      spec,
      folder,
      session,
      sharedDims: sharedDims(spec, session.info),
      observer: options.observer,
      observeDuration: options.observeDuration,
      loadMs: performance.now() - t0,
      embeddingAnchors: await readEmbeddingAnchors(folder.dir),
    });
  } catch (e) {
    await session.release().catch(() => undefined);
    throw e;
  }
}

/**
 * The embedding anchor times the export recorded in `<version>/manifest.json` (`embeddings[].table`,
 * `embeddings[].anchor_time`). A repository written by hand or by another tool has no manifest: no
 * anchors, and no embedding-age metric, rather than a refusal to serve.
 */
export async function readEmbeddingAnchors(dir: string): Promise<EmbeddingAnchor[]> {
  let manifest: unknown;
  try {
    manifest = JSON.parse(await readFile(join(dir, 'manifest.json'), 'utf8'));
  } catch {
    return [];
  }
  const embeddings = (manifest as { embeddings?: unknown }).embeddings;
  if (!Array.isArray(embeddings)) return [];
  const out: EmbeddingAnchor[] = [];
  for (const e of embeddings as { table?: unknown; anchor_time?: unknown }[]) {
    const ms = typeof e?.anchor_time === 'string' ? Date.parse(e.anchor_time) : NaN;
    if (typeof e?.table === 'string' && Number.isFinite(ms)) out.push({ table: e.table, anchorSeconds: ms / 1000 });
  }
  return out;
}

/** Every disagreement between the config and the ONNX model's declared inputs and outputs. */
export function checkIo(spec: ServedModelSpec, info: SessionInfo): string[] {
  const problems: string[] = [];
  const batching = spec.maxBatchSize > 0;
  const compare = (kind: 'input' | 'output', specs: TensorSpec[], values: ValueInfo[]) => {
    const byName = new Map(values.map((v) => [v.name, v]));
    for (const s of specs) {
      const v = byName.get(s.name);
      if (!v) {
        problems.push(`config ${kind} "${s.name}" is not an ${kind} of the ONNX model (its ${kind}s: ${values.map((x) => `"${x.name}"`).join(', ')})`);
        continue;
      }
      const dt = v.type === undefined ? undefined : v2FromOrt(v.type);
      if (dt !== s.datatype) problems.push(`${kind} "${s.name}": config.pbtxt says ${s.datatype}, the ONNX model has ${v.type ?? 'a non-tensor value'}`);
      if (!v.shape) continue;
      if (v.shape.length !== s.shape.length) {
        problems.push(`${kind} "${s.name}": config.pbtxt gives ${s.shape.length} dimensions ${JSON.stringify(s.shape)} (batch included), the ONNX model ${v.shape.length} ${JSON.stringify(v.shape)}`);
        continue;
      }
      v.shape.forEach((d, i) => {
        const c = s.shape[i]!;
        if (batching && i === 0) {
          if (typeof d === 'number' && d !== spec.maxBatchSize && spec.maxBatchSize > 1) {
            problems.push(`${kind} "${s.name}": the ONNX model fixes the batch dimension to ${d}, but max_batch_size is ${spec.maxBatchSize}`);
          }
        } else if (typeof d === 'number' && d > 0 && c !== -1 && d !== c) {
          problems.push(`${kind} "${s.name}": dimension ${i} is ${c} in config.pbtxt but ${d} in the ONNX model`);
        }
      });
    }
    if (kind === 'input') {
      const declared = new Set(specs.map((s) => s.name));
      for (const v of values) if (!declared.has(v.name)) problems.push(`the ONNX model has input "${v.name}", which config.pbtxt does not declare`);
    }
  };
  compare('input', spec.inputs, info.inputs);
  compare('output', spec.outputs, info.outputs);
  return problems;
}

/** Input axes grouped by the symbolic dimension they share in the ONNX model (the batch axis aside). */
export function sharedDims(spec: ServedModelSpec, info: SessionInfo): DimGroup[] {
  const groups = new Map<string, DimGroup>();
  const first = spec.maxBatchSize > 0 ? 1 : 0;
  for (const v of info.inputs) {
    if (!spec.inputByName.has(v.name)) continue;
    v.shape?.forEach((d, axis) => {
      if (axis < first || typeof d !== 'string' || d === '') return;
      let g = groups.get(d);
      if (!g) groups.set(d, (g = []));
      g.push({ input: v.name, axis });
    });
  }
  return [...groups.values()].filter((g) => g.length > 1);
}

/** The zero request: every input at batch 1, variable dims of length 1 filled with the pad value. */
export function zeroRequest(spec: ServedModelSpec): Map<string, HostTensor> {
  const feeds = new Map<string, HostTensor>();
  for (const s of spec.inputs) {
    const dims = s.dims.map((d) => (d === -1 ? 1 : d));
    const shape = spec.maxBatchSize > 0 ? [1, ...dims] : dims;
    const n = shape.reduce((a, b) => a * b, 1);
    feeds.set(s.name, { datatype: s.datatype, shape, data: allocValues(s.datatype, n, s.variable ? s.pad : undefined) });
  }
  return feeds;
}

async function warmUp(spec: ServedModelSpec, session: HostedSession, folder: VersionFolder): Promise<void> {
  let out: Map<string, HostTensor>;
  try {
    out = await session.run(zeroRequest(spec), spec.outputs.map((o) => o.name));
  } catch (e) {
    throw new ArtifactError(`the warm-up request (zeros, batch 1) failed: ${e instanceof Error ? e.message : String(e)}`, { where: folder.modelPath });
  }
  const problems: string[] = [];
  for (const o of spec.outputs) {
    const t = out.get(o.name);
    if (!t) {
      problems.push(`output "${o.name}" is missing`);
      continue;
    }
    if (t.datatype !== o.datatype) problems.push(`output "${o.name}" is ${t.datatype}, config.pbtxt says ${o.datatype}`);
    const ok = t.shape.length === o.shape.length && o.shape.every((d, i) => (spec.maxBatchSize > 0 && i === 0 ? t.shape[0] === 1 : d === -1 || d === t.shape[i]));
    if (!ok) problems.push(`output "${o.name}" has shape ${JSON.stringify(t.shape)} for a batch of 1, config.pbtxt says ${JSON.stringify(o.shape)}`);
  }
  if (problems.length > 0) throw new ArtifactError(`the warm-up request's outputs do not match config.pbtxt: ${problems.join('; ')}`, { where: folder.modelPath });
}
