/**
 * Request/reply over a pool of worker threads: each message gets an id, the worker answers with the same
 * id (and `error` when it failed), and a worker that dies rejects everything still waiting. Training's
 * data-parallel engine and the embedding pool both talk to their workers this way.
 */
import { existsSync } from 'node:fs';
import { Worker } from 'node:worker_threads';

export interface WorkerReply {
  id: number;
  error?: string;
}

export class WorkerRpc<R extends WorkerReply> {
  private nextId = 1;
  private readonly pending = new Map<number, { resolve: (r: R) => void; reject: (e: Error) => void }>();
  readonly workers: Worker[];

  /**
   * `onEvent`: what a worker posts without an id, between replies (a long job's progress); without it,
   * such messages are dropped.
   */
  constructor(script: string, count: number, onEvent?: (msg: Record<string, unknown>, w: Worker) => void) {
    this.workers = Array.from({ length: count }, () => new Worker(script));
    for (const w of this.workers) {
      w.on('message', (r: R) => {
        if (r.id === undefined) {
          onEvent?.(r as unknown as Record<string, unknown>, w);
          return;
        }
        const p = this.pending.get(r.id);
        if (!p) return;
        this.pending.delete(r.id);
        if (r.error) p.reject(new Error(r.error));
        else p.resolve(r);
      });
      w.on('error', (e) => {
        for (const p of this.pending.values()) p.reject(e);
        this.pending.clear();
      });
    }
  }

  get size(): number {
    return this.workers.length;
  }

  call(w: Worker, msg: Record<string, unknown>): Promise<R> {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      w.postMessage({ ...msg, id });
    });
  }

  async close(): Promise<void> {
    await Promise.all(this.workers.map((w) => w.terminate()));
  }
}

/**
 * The compiled worker script beside a module, also when gnnctl runs from its TypeScript sources (tests
 * import `src/…/x.ts`; workers need `dist/…/worker.js`). `modulePath` is the caller's module file
 * (`fileURLToPath(import.meta.url)`); null when the build is missing.
 */
export function compiledWorker(modulePath: string, workerFile: string): string | null {
  const dir = modulePath.slice(0, modulePath.lastIndexOf('/'));
  const js = modulePath.endsWith('.ts') ? `${dir.replace(/\/src(\/[^/]+)$/, '/dist$1')}/${workerFile}` : `${dir}/${workerFile}`;
  return existsSync(js) ? js : null;
}
