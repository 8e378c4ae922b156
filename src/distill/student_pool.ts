/**
 * The distillation's students over worker threads. A student trains on one thread (TF.js's wasm backend
 * computes on one), and `distill` trains four: the main student and the three ablations. One after
 * another on one thread they take 170 of 392 seconds of the bundled distillation at `large`.
 * Here each worker holds its own TF.js instance and reads the examples, their as-of embeddings and RTI
 * lists and the graph through SharedArrayBuffers (no copy: they are allocated shared, see
 * core/shared_memory.ts); the students are handed out longest first to whichever worker is free.
 *
 * A student's numbers do not depend on where it trained: `trainStudent` is the same code on the same
 * backend, seeded the same, so the weights, metrics and predictions equal the single-thread run's (tested).
 */
import { fileURLToPath } from 'node:url';
import type { Worker } from 'node:worker_threads';
import type { BackendRequest } from '../compute/backend.js';
import { warn } from '../core/log.js';
import { Progress, type ProgressOptions } from '../core/progress.js';
import { shared } from '../core/shared_memory.js';
import { compiledWorker, WorkerRpc } from '../core/worker_rpc.js';
import type { Graph } from '../graph/graph.js';
import { StudentFeatures, type StudentData } from '../model/student/features.js';
import type { StudentSpec } from '../model/student/spec.js';
import { StudentModel } from '../model/student/student.js';
import { objectiveFor, type ObjectiveKind } from '../task/objective/objective.js';
import { PairValues, type ExampleVectors } from './data.js';
import { trainStudent, type StudentProgress, type TrainedStudent } from './student_training.js';

/** `trainStudent`'s options shared by every student of a run (each job sets its epochs and rows). */
export type StudentOptions = Omit<Parameters<typeof trainStudent>[8], 'epochs' | 'trainRows' | 'progress' | 'label'>;

/** One student to train: a variant of the run's spec (an ablation turns inputs off). */
export interface StudentJob {
  /** names the student in progress lines (`distill features_only epoch 1/2`) */
  name: string;
  variant: Partial<StudentSpec>;
  epochs: number;
  kdWeight: number;
  /** rows (indices into the examples) to train on; default the whole train range */
  trainRows?: Int32Array;
}

/** What every student of a run trains on. */
export interface StudentContext {
  graph: Graph;
  spec: StudentSpec;
  data: StudentData;
  labels: Float32Array;
  ranges: { train: readonly [number, number]; val: readonly [number, number]; test: readonly [number, number] };
  objective: ObjectiveKind;
  teacher: Float32Array | null;
  options: StudentOptions;
  backend: BackendRequest;
}

/** An example-vector store as posted to a worker (a class instance would arrive without its methods). */
type SharedVectors = { dense: Float32Array } | { table: Float32Array; index: Int32Array; dim: number };

export interface StudentWorkerInit {
  graph: ReturnType<Graph['shareable']>;
  spec: StudentSpec;
  data: { nodes: Int32Array; anchors: Float64Array; rti: Int32Array[]; embeddings: { values: SharedVectors; missing: Float32Array }[] };
  labels: Float32Array;
  ranges: StudentContext['ranges'];
  objective: ObjectiveKind;
  teacher: Float32Array | null;
  options: StudentOptions;
  backend: BackendRequest;
}

/** A trained student as a worker returns it: its kept weights instead of the model. */
export type StudentResult = Omit<TrainedStudent, 'model'>;

/** A worker's relay of `trainStudent`'s progress calls (`job`: the job's index). */
export type StudentEvent =
  | { event: 'begin'; job: number; label: string; total: number }
  | { event: 'update'; job: number; done: number; extra: string }
  | { event: 'end'; job: number; line: string };

type Reply = { id: number; error?: string; result?: StudentResult };

/** The compiled worker script, also when gnnctl runs from its TypeScript sources (tests). */
export function studentWorkerScript(): string | null {
  return compiledWorker(fileURLToPath(import.meta.url), 'student_worker.js');
}

/**
 * Trains `jobs` (results in job order) on `workers` threads; on this thread when `workers` ≤ 1, when
 * there is one job, or when the compiled worker script is missing (with a warning). `progress`: where the
 * workers' common progress line goes (tests).
 */
export async function trainStudents(ctx: StudentContext, jobs: StudentJob[], workers: number, progress: ProgressOptions = {}): Promise<TrainedStudent[]> {
  const script = workers > 1 && jobs.length > 1 ? studentWorkerScript() : null;
  if (workers > 1 && jobs.length > 1 && !script) warn('training the students over worker threads needs the compiled worker (npm run build); training them one after another');
  if (!script) {
    const features = new StudentFeatures(ctx.graph, ctx.spec);
    const objective = objectiveFor(ctx.objective);
    return jobs.map((j) =>
      trainStudent({ ...ctx.spec, ...j.variant }, features, ctx.data, ctx.labels, ctx.ranges, objective, ctx.teacher, j.kdWeight, {
        ...ctx.options,
        epochs: j.epochs,
        trainRows: j.trainRows,
        label: j.name,
      }),
    );
  }
  const relay = new StudentRelay(jobs, ctx.ranges, new Progress(progress));
  const rpc = new WorkerRpc<Reply>(script, Math.min(workers, jobs.length), (msg) => relay.on(msg as StudentEvent));
  try {
    const init: StudentWorkerInit = {
      graph: ctx.graph.shareable(),
      spec: ctx.spec,
      data: {
        nodes: shared(ctx.data.nodes),
        anchors: shared(ctx.data.anchors),
        rti: ctx.data.rti.map(shared),
        embeddings: ctx.data.embeddings.map((e) => ({ values: shareVectors(e.values), missing: shared(e.missing) })),
      },
      labels: shared(ctx.labels),
      ranges: ctx.ranges,
      objective: ctx.objective,
      teacher: ctx.teacher && shared(ctx.teacher),
      options: ctx.options,
      backend: ctx.backend,
    };
    await Promise.all(rpc.workers.map((w) => rpc.call(w, { type: 'init', init })));
    // Longest first (rows trained and scored), so the last job to start is a short one.
    const queue = jobs.map((_, i) => i).sort((a, b) => relay.planned(b) - relay.planned(a));
    const results: StudentResult[] = new Array(jobs.length);
    const drain = async (w: Worker): Promise<void> => {
      for (let i = queue.shift(); i !== undefined; i = queue.shift()) {
        const j = jobs[i]!;
        results[i] = (await rpc.call(w, { type: 'train', index: i, job: { name: j.name, variant: j.variant, epochs: j.epochs, kdWeight: j.kdWeight, trainRows: j.trainRows } })).result!;
        relay.finished(i);
      }
    };
    relay.begin();
    await Promise.all(rpc.workers.map(drain));
    relay.end();
    return results.map((r, i) => {
      const model = new StudentModel({ ...ctx.spec, ...jobs[i]!.variant }, ctx.options.seed, ctx.options.dropout);
      model.params.restore(r.best);
      return { model, ...r };
    });
  } finally {
    relay.stop();
    await rpc.close();
  }
}

function shareVectors(v: StudentData['embeddings'][number]['values']): SharedVectors {
  if (v instanceof PairValues) return { table: shared(v.table), index: shared(v.index), dim: v.dim };
  if (v instanceof Float32Array) return { dense: shared(v) };
  throw new Error('student workers read example vectors from a Float32Array or a PairValues');
}

/** The worker's side of `shareVectors`. */
export function vectorsFromShared(s: SharedVectors): ExampleVectors {
  return 'dense' in s ? s.dense : new PairValues(s.table, s.index, s.dim);
}

/**
 * One progress line for all the students in flight (two `trainStudent` loops cannot share a terminal's
 * line), and each student's epoch summaries as they come. The units are rows, trained or scored: an
 * epoch trains its rows and then scores the validation rows, the end scores the test rows. At `large` an
 * ablation trains 30,000 rows and scores 1.3M, so counting trained rows alone would say nothing of its
 * time. A student that stops early credits its remaining epochs, so the ETA holds.
 */
class StudentRelay {
  /** per job: rows of its finished epochs, the current epoch's trained rows, rows per epoch, its label */
  private readonly state: { past: number; current: number; epochRows: number; label: string }[];
  private readonly testRows: number;

  constructor(private readonly jobs: StudentJob[], ranges: StudentContext['ranges'], private readonly progress: Progress) {
    const valRows = ranges.val[1] - ranges.val[0];
    this.testRows = ranges.test[1] - ranges.test[0];
    this.state = jobs.map((j) => ({ past: 0, current: 0, epochRows: (j.trainRows?.length ?? ranges.train[1] - ranges.train[0]) + valRows, label: '' }));
  }

  planned(i: number): number {
    return this.jobs[i]!.epochs * this.state[i]!.epochRows + this.testRows;
  }

  begin(): void {
    const total = this.jobs.reduce((a, _, i) => a + this.planned(i), 0);
    this.progress.begin(`distill: ${this.jobs.length} students`, total);
  }

  on(e: StudentEvent): void {
    const s = this.state[e.job];
    if (!s) return;
    if (e.event === 'begin') {
      s.label = e.label.replace(/^distill /, '');
      s.current = 0;
    } else if (e.event === 'update') {
      s.current = e.done;
    } else {
      s.past += s.epochRows;
      s.current = 0;
      this.progress.log(e.line);
    }
    this.redraw();
  }

  finished(i: number): void {
    const s = this.state[i]!;
    s.past = this.planned(i);
    s.current = 0;
    s.label = '';
    this.redraw();
  }

  end(): void {
    this.progress.end(`distill: ${this.jobs.length} students trained (${this.jobs.map((j) => j.name).join(', ')})`);
  }

  stop(): void {
    this.progress.stop();
  }

  private redraw(): void {
    const done = this.state.reduce((a, s) => a + s.past + s.current, 0);
    this.progress.update(done, this.state.map((s) => s.label).filter(Boolean).join(' · '));
  }
}

/** A worker's `StudentProgress`: forwards the calls to the main thread, updates at most every 200 ms. */
export function relayProgress(post: (e: StudentEvent) => void, job: number): StudentProgress {
  let last = 0;
  return {
    begin: (label: string, total: number) => post({ event: 'begin', job, label, total }),
    update: (done: number, extra = '') => {
      const now = performance.now();
      if (now - last < 200) return;
      last = now;
      post({ event: 'update', job, done, extra });
    },
    end: (line: string) => post({ event: 'end', job, line }),
    stop: () => {},
  };
}
