/**
 * onnxruntime sessions in one worker thread (see `session_host.ts` for why): the main thread sends a
 * merged batch (typed arrays transferred, not copied; strings cloned), the worker runs it and sends the
 * outputs back the same way. Session creation happens there too, so loading a new version does not
 * stall requests.
 *
 * The worker's code is a string evaluated as a CommonJS script (`eval: true`), because the worker must
 * start from plain JavaScript both from `dist/` and under vitest, which runs this file as TypeScript.
 */
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import type { HostTensor, TensorValues } from './datatypes.js';
import { ortType, v2FromOrt } from './datatypes.js';
import { ortSessionOptions, SessionHostError, type HostedSession, type SessionHost, type SessionInfo, type SessionOptions } from './session_host.js';

const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const ort = require(workerData.ortPath);
const sessions = new Map();
let nextSession = 1;

function describe(m) {
  return m.isTensor ? { name: m.name, type: m.type, shape: [...m.shape] } : { name: m.name };
}

function transferable(data, list) {
  if (!Array.isArray(data) && data.byteOffset === 0 && data.byteLength === data.buffer.byteLength) list.push(data.buffer);
}

parentPort.on('message', async (m) => {
  try {
    if (m.op === 'load') {
      const s = await ort.InferenceSession.create(m.path, m.options);
      const id = nextSession++;
      sessions.set(id, s);
      parentPort.postMessage({ id: m.id, ok: true, session: id, info: { inputs: s.inputMetadata.map(describe), outputs: s.outputMetadata.map(describe) } });
    } else if (m.op === 'run') {
      const s = sessions.get(m.session);
      if (!s) throw new Error('session ' + m.session + ' was released');
      const feeds = {};
      for (const f of m.feeds) feeds[f.name] = new ort.Tensor(f.type, f.data, f.shape);
      const result = await s.run(feeds, m.outputs);
      const outputs = [];
      const list = [];
      for (const name of m.outputs) {
        const t = result[name];
        outputs.push({ name, type: t.type, data: t.data, shape: t.dims });
        transferable(t.data, list);
      }
      try {
        parentPort.postMessage({ id: m.id, ok: true, outputs }, list);
      } catch {
        parentPort.postMessage({ id: m.id, ok: true, outputs });
      }
    } else if (m.op === 'release') {
      const s = sessions.get(m.session);
      sessions.delete(m.session);
      if (s) await s.release();
      parentPort.postMessage({ id: m.id, ok: true });
    }
  } catch (e) {
    parentPort.postMessage({ id: m.id, ok: false, error: String((e && e.message) || e) });
  }
});
`;

interface Reply {
  id: number;
  ok: boolean;
  error?: string;
  session?: number;
  info?: SessionInfo;
  outputs?: { name: string; type: string; data: TensorValues; shape: number[] }[];
}

export class WorkerSessionHost implements SessionHost {
  readonly kind = 'worker' as const;
  private readonly worker: Worker;
  private readonly pending = new Map<number, { resolve: (r: Reply) => void; reject: (e: Error) => void }>();
  private nextId = 1;
  private dead: Error | undefined;

  constructor() {
    const ortPath = createRequire(import.meta.url).resolve('onnxruntime-node');
    this.worker = new Worker(WORKER_SOURCE, { eval: true, workerData: { ortPath } });
    this.worker.on('message', (r: Reply) => {
      const p = this.pending.get(r.id);
      if (!p) return;
      this.pending.delete(r.id);
      if (r.ok) p.resolve(r);
      else p.reject(new Error(r.error));
    });
    const fail = (cause: Error) => {
      const e = cause instanceof SessionHostError ? cause : new SessionHostError(`the onnxruntime worker thread failed: ${cause.message}`);
      this.dead ??= e;
      for (const p of this.pending.values()) p.reject(e);
      this.pending.clear();
    };
    this.worker.on('error', fail);
    this.worker.on('exit', (code) => fail(new SessionHostError(`the onnxruntime worker thread exited (code ${code})`)));
  }

  call(message: Record<string, unknown>, transfer: ArrayBuffer[] = []): Promise<Reply> {
    if (this.dead) return Promise.reject(this.dead);
    const id = this.nextId++;
    return new Promise<Reply>((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.worker.postMessage({ ...message, id }, transfer);
    });
  }

  async load(modelPath: string, options: SessionOptions = {}): Promise<HostedSession> {
    const r = await this.call({ op: 'load', path: modelPath, options: ortSessionOptions(options) });
    return new WorkerSession(this, r.session!, r.info!);
  }

  async close(): Promise<void> {
    if (this.dead) return;
    this.dead = new SessionHostError('the onnxruntime worker was closed');
    await this.worker.terminate();
  }
}

class WorkerSession implements HostedSession {
  constructor(
    private readonly host: WorkerSessionHost,
    private readonly id: number,
    readonly info: SessionInfo,
  ) {}

  async run(feeds: ReadonlyMap<string, HostTensor>, outputs: readonly string[]): Promise<Map<string, HostTensor>> {
    const list: ArrayBuffer[] = [];
    const wire = [];
    for (const [name, t] of feeds) {
      wire.push({ name, type: ortType(t.datatype), data: t.data, shape: t.shape });
      const d = t.data;
      // Only whole, unshared buffers move; a view into a larger buffer is copied by the structured clone.
      if (!Array.isArray(d) && d.byteOffset === 0 && d.byteLength === d.buffer.byteLength && !list.includes(d.buffer as ArrayBuffer)) list.push(d.buffer as ArrayBuffer);
    }
    const r = await this.host.call({ op: 'run', session: this.id, feeds: wire, outputs }, list);
    const out = new Map<string, HostTensor>();
    for (const o of r.outputs!) {
      const datatype = v2FromOrt(o.type);
      if (!datatype) throw new Error(`output "${o.name}" has onnxruntime type ${o.type}, which gnnctl serve does not handle`);
      out.set(o.name, { datatype, data: o.data, shape: o.shape });
    }
    return out;
  }

  async release(): Promise<void> {
    await this.host.call({ op: 'release', session: this.id });
  }
}
