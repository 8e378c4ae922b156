/**
 * The life of one run folder, written once for every stage that makes runs (train, distill, the session
 * recommender's distill, anomaly fit): the folder and a `running` manifest at the start, Ctrl-C turned
 * into a stop request, and exactly one ending: `finish` (metrics.json, then the manifest `complete`, or
 * `interrupted` after Ctrl-C) or `fail` (the manifest `failed` with the error's message).
 *
 * ```ts
 * const run = RunLifecycle.start(cfg.artifactsDir, manifest, { interruptible: true });
 * return run.guard(async () => {
 *   const metrics = await fitSomething(run.stop);   // the loop checks run.stop.requested between steps
 *   return run.finish(metrics, headline);
 * });
 * ```
 *
 * The manifest object stays the caller's: set fields on `run.manifest` and call `save()` to write it.
 * The lifecycle needs only the fields of `LifecycleManifest`, so runs without a graph (anomaly fit) use it too.
 */
import { join } from 'node:path';
import { writeJsonAtomic } from '../core/atomic.js';
import { warn } from '../core/log.js';
import { round } from '../core/number.js';
import { VERSION } from '../core/version.js';
import type { GraphManifest, GraphSchema } from './graph_manifest.js';
import { createRunDir, type RunManifestBase, type RunStatus } from './run_store.js';

export interface RunLifecycleOptions {
  /**
   * Turn the first Ctrl-C into `stop.requested = true` (the loop finishes its step and the run ends
   * `interrupted` with its best checkpoint); a second Ctrl-C exits at once with code 130. Default false:
   * Ctrl-C ends the process as usual.
   */
  interruptible?: boolean;
  /** `performance.now()` when the stage began, for `timings.total` (default: now). */
  t0?: number;
}

/** What the lifecycle reads and writes of a run manifest (RunManifestBase has it all; anomaly runs have no graph). */
export interface LifecycleManifest {
  id: string;
  status: RunStatus;
  finished_at?: string;
  timings: Record<string, number>;
  /** headline metrics (the full set is in metrics.json) */
  metrics?: unknown;
  /** a failed run's error message */
  error?: unknown;
}

/** How a finished run ended, and its wall time. */
export interface RunEnding {
  status: 'complete' | 'interrupted';
  seconds: number;
}

export class RunLifecycle<M extends LifecycleManifest> {
  /** set by the first Ctrl-C of an interruptible run: stop after the current step */
  readonly stop = { requested: false };
  private ended = false;
  private onSigint: (() => void) | null = null;

  private constructor(
    readonly dir: string,
    readonly manifest: M,
    private readonly t0: number,
  ) {}

  /** Creates `<artifacts>/runs/<manifest.id>/` (with `model/`) and writes the manifest as `running`. */
  static start<M extends LifecycleManifest>(artifactsDir: string, manifest: M, opts: RunLifecycleOptions = {}): RunLifecycle<M> {
    const dir = createRunDir(artifactsDir, manifest.id);
    manifest.status = 'running';
    const run = new RunLifecycle(dir, manifest, opts.t0 ?? performance.now());
    run.save();
    if (opts.interruptible) {
      run.onSigint = (): void => {
        if (run.stop.requested) process.exit(130);
        run.stop.requested = true;
        warn('interrupt: stopping after this step; the best checkpoint is kept (Ctrl-C again to quit now)');
      };
      process.on('SIGINT', run.onSigint);
    }
    return run;
  }

  get id(): string {
    return this.manifest.id;
  }

  /** seconds since `t0` */
  seconds(): number {
    return (performance.now() - this.t0) / 1000;
  }

  /** Writes the manifest as it is now (atomically). */
  save(): void {
    writeJsonAtomic(join(this.dir, 'manifest.json'), this.manifest);
  }

  /**
   * Ends the run: writes `metrics.json`, then the manifest with its status (`interrupted` after Ctrl-C),
   * `finished_at`, `timings.total` and, when given, the headline metrics.
   */
  finish(metrics: unknown, headline?: unknown): RunEnding {
    this.end('finish');
    writeJsonAtomic(join(this.dir, 'metrics.json'), metrics);
    const status = this.stop.requested ? 'interrupted' : 'complete';
    const seconds = this.seconds();
    this.manifest.status = status;
    this.manifest.finished_at = new Date().toISOString();
    this.manifest.timings.total = round(seconds, 2);
    if (headline !== undefined) this.manifest.metrics = headline;
    this.save();
    return { status, seconds };
  }

  /** Marks the run `failed` with the error's message. A run that already ended stays as it ended. */
  fail(error: unknown): void {
    if (this.ended) return;
    this.end('fail');
    this.manifest.status = 'failed';
    this.manifest.error = error instanceof Error ? error.message : String(error);
    this.save();
  }

  /** Stops listening for Ctrl-C (idempotent). */
  release(): void {
    if (this.onSigint) process.off('SIGINT', this.onSigint);
    this.onSigint = null;
  }

  /** Runs `body`; if it throws, the run is marked failed and the error rethrown. Ctrl-C is released either way. */
  async guard<T>(body: () => Promise<T>): Promise<T> {
    try {
      return await body();
    } catch (e) {
      this.fail(e);
      throw e;
    } finally {
      this.release();
    }
  }

  private end(how: 'finish' | 'fail'): void {
    if (this.ended) throw new Error(`run ${this.id}: ${how} after the run already ended`);
    this.ended = true;
  }
}

/** What every run manifest starts with, besides its stage's own fields. */
export interface RunManifestHeadOptions<K extends RunManifestBase['kind']> {
  kind: K;
  id: string;
  task: string;
  /** ISO time the stage began (default: now) */
  created_at?: string;
  /** the graph folder and its manifest */
  graph_dir: string;
  graph: Pick<GraphManifest, 'fingerprint' | 'schema_fingerprint' | 'schema'> & Partial<Pick<GraphManifest, 'fit_until'>>;
  backend: string;
  seed: number;
  config: unknown;
  timings?: Record<string, number>;
}

/** The common head of a run manifest, status `running`: kind, id, versions, graph identity and schema, backend, seed, config. */
export function runManifestHead<K extends RunManifestBase['kind']>(o: RunManifestHeadOptions<K>): RunManifestBase & { kind: K; graph_schema: GraphSchema } {
  return {
    kind: o.kind,
    id: o.id,
    task: o.task,
    status: 'running',
    gnnctl: VERSION,
    created_at: o.created_at ?? new Date().toISOString(),
    graph: { dir: o.graph_dir, fingerprint: o.graph.fingerprint, schema_fingerprint: o.graph.schema_fingerprint, fit_until: o.graph.fit_until },
    graph_schema: o.graph.schema,
    backend: o.backend,
    seed: o.seed,
    config: o.config,
    timings: o.timings ?? {},
  };
}
