/**
 * Where onnxruntime sessions live and run. The batcher and the model manager only see this interface,
 * so the choice below is one flag:
 *
 * - `InlineSessionHost`: sessions on the main thread. onnxruntime-node's `session.run` returns a promise
 *   but computes synchronously on the calling thread (it is deferred with `setImmediate`, not moved to a
 *   thread pool), and so does session creation: while a batch runs or a model loads, the event loop
 *   waits. Cheapest per batch (no message passing).
 * - `WorkerSessionHost` (`worker_host.ts`, the default): sessions in a worker thread; the main thread
 *   only parses, batches and answers, and loading a new version never stalls requests.
 *
 * Measured on 2 cores at 2,000 req/s (bench/serve.mjs, a shared machine): both reached p99 ≈ 9 ms in
 * the quietest runs; the worker costs ≈ 30% more CPU per request (messages, thread wake-ups), had the
 * shorter long tail (p99.9, max), and keeps a hot reload (≈ 100–300 ms of session creation for a 25 MB
 * model) off the main thread.
 */
import * as ort from 'onnxruntime-node';
import type { HostTensor } from './datatypes.js';
import { v2FromOrt, ortType } from './datatypes.js';

/** The session host itself failed (the worker thread died): the server's fault, not the request's. */
export class SessionHostError extends Error {
  override readonly name = 'SessionHostError';
}

/** Name, onnxruntime element type and shape (symbolic dims as their names) of a model input or output. */
export interface ValueInfo {
  name: string;
  /** onnxruntime's type name (`float32`, `int64`, `string`, …), or undefined for non-tensor values. */
  type?: string;
  shape?: (number | string)[];
}

export interface SessionInfo {
  inputs: ValueInfo[];
  outputs: ValueInfo[];
}

export interface SessionOptions {
  /** onnxruntime intra-op threads per session. Default 1: small batches do not gain from more on 2 cores. */
  intraOpThreads?: number;
}

export interface HostedSession {
  readonly info: SessionInfo;
  /** Runs the model; `outputs` lists the outputs to fetch. */
  run(feeds: ReadonlyMap<string, HostTensor>, outputs: readonly string[]): Promise<Map<string, HostTensor>>;
  release(): Promise<void>;
}

export interface SessionHost {
  readonly kind: 'main' | 'worker';
  /** Creates a session for the model file (external data is resolved next to it). */
  load(modelPath: string, options?: SessionOptions): Promise<HostedSession>;
  /** Releases the host (the worker thread); sessions must be released first. */
  close(): Promise<void>;
}

export function ortSessionOptions(options: SessionOptions = {}): ort.InferenceSession.SessionOptions {
  return {
    intraOpNumThreads: options.intraOpThreads ?? 1,
    interOpNumThreads: 1,
    executionMode: 'sequential',
    graphOptimizationLevel: 'all',
  };
}

export function sessionInfo(s: ort.InferenceSession): SessionInfo {
  const describe = (m: ort.InferenceSession.ValueMetadata): ValueInfo =>
    m.isTensor ? { name: m.name, type: m.type, shape: [...m.shape] } : { name: m.name };
  return { inputs: s.inputMetadata.map(describe), outputs: s.outputMetadata.map(describe) };
}

export class InlineSessionHost implements SessionHost {
  readonly kind = 'main' as const;

  async load(modelPath: string, options: SessionOptions = {}): Promise<HostedSession> {
    const session = await ort.InferenceSession.create(modelPath, ortSessionOptions(options));
    return new InlineSession(session);
  }

  async close(): Promise<void> {}
}

class InlineSession implements HostedSession {
  readonly info: SessionInfo;
  private readonly session: ort.InferenceSession;

  constructor(session: ort.InferenceSession) {
    this.session = session;
    this.info = sessionInfo(session);
  }

  async run(feeds: ReadonlyMap<string, HostTensor>, outputs: readonly string[]): Promise<Map<string, HostTensor>> {
    const ortFeeds: Record<string, ort.Tensor> = {};
    for (const [name, t] of feeds) ortFeeds[name] = new ort.Tensor(ortType(t.datatype), t.data as never, t.shape);
    const result = await this.session.run(ortFeeds, outputs as string[]);
    const out = new Map<string, HostTensor>();
    for (const name of outputs) out.set(name, fromOrt(result[name]!, name));
    return out;
  }

  async release(): Promise<void> {
    await this.session.release();
  }
}

export function fromOrt(t: ort.Tensor, name: string): HostTensor {
  const datatype = v2FromOrt(t.type);
  if (!datatype) throw new Error(`output "${name}" has onnxruntime type ${t.type}, which gnnctl serve does not handle`);
  // onnxruntime-node hands BOOL outputs back as a Uint8Array already; strings as string[].
  return { datatype, data: t.data as HostTensor['data'], shape: [...t.dims] };
}
