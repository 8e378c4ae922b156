/**
 * The no-graph baseline fitted beside the deep model, not after it. Its fit is sequential (one TF.js
 * thread): run after the epochs it would leave the second core idle for longer than an epoch (at `medium`,
 * 710 s against a 263 s fraud epoch; docs/scale.md). Started on a worker thread as soon as the training
 * tables exist, it shares the cores with the epochs (which slow by its share of CPU) and is usually done
 * when they end; the trainer then waits only for what is left.
 *
 * Without the compiled worker script (tests running from src without a build), it fits on this thread
 * when awaited. Results are identical either way: same code, seed and backend.
 */
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import type { BackendRequest } from '../compute/backend.js';
import type { Graph, SharedGraph } from '../graph/graph.js';
import type { FeatureSpec, TableFeatures } from '../model/features.js';
import type { ObjectiveKind } from '../task/objective/objective.js';
import { compiledWorker } from '../core/worker_rpc.js';
import { fitBaseline, type BaselineInputs, type BaselineResult } from './baseline_model.js';

export interface BaselineJobInit {
  graph: SharedGraph;
  featureSpec: FeatureSpec;
  table: string;
  inputs: BaselineInputs;
  kind: ObjectiveKind;
  seed: number;
  backend: BackendRequest;
}

type Listener = (seen: number, note: string) => void;

export class BaselineJob {
  private listener: Listener | null = null;
  /** the latest progress (rows seen, note), for a display attached late */
  latest = { seen: 0, note: '' };
  private constructor(
    readonly onWorker: boolean,
    private readonly run: () => Promise<BaselineResult>,
    /** stops the worker (a run that failed or was abandoned); harmless after the result */
    readonly close: () => Promise<void>,
  ) {}

  /** Progress reports from now on (and the latest one at once). */
  listen(l: Listener | null): void {
    this.listener = l;
    if (l) l(this.latest.seen, this.latest.note);
  }

  private report(seen: number, note: string): void {
    this.latest = { seen, note };
    this.listener?.(seen, note);
  }

  /** The fitted baseline (the worker's, or a fit on this thread now). */
  result(): Promise<BaselineResult> {
    return this.run();
  }

  static start(init: Omit<BaselineJobInit, 'graph'>, graph: Graph, own: TableFeatures): BaselineJob {
    const script = baselineWorkerScript();
    if (!script) {
      const job: BaselineJob = new BaselineJob(false, async () => fitBaseline(own, init.inputs, init.kind, init.seed, (seen, _max, note) => job.report(seen, note)), async () => {});
      return job;
    }
    const worker = new Worker(script);
    let job!: BaselineJob;
    const done = new Promise<BaselineResult>((resolve, reject) => {
      worker.on('message', (m: { type: string; seen?: number; note?: string; result?: BaselineResult; error?: string }) => {
        if (m.type === 'progress') job.report(m.seen!, m.note ?? '');
        else if (m.type === 'done') resolve(m.result!);
        else if (m.type === 'error') reject(new Error(`baseline fit failed: ${m.error}`));
      });
      worker.on('error', reject);
      worker.on('exit', (code) => reject(new Error(`the baseline worker exited (code ${code}) before finishing`)));
    });
    const finished = done.finally(() => void worker.terminate());
    // A run that fails elsewhere must not also report an unhandled rejection from here.
    finished.catch(() => undefined);
    job = new BaselineJob(true, () => finished, async () => void (await worker.terminate()));
    worker.postMessage({ ...init, graph: graph.shareable() } satisfies BaselineJobInit);
    return job;
  }
}

function baselineWorkerScript(): string | null {
  return compiledWorker(fileURLToPath(import.meta.url), 'baseline_worker.js');
}
