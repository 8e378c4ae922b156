/**
 * The student seam: what differs between the kinds of distilled model — which examples it learns from and
 * what each example carries, how it trains and which ablations stand beside it, what its metrics and its
 * run manifest say — behind one interface, as the objective seam (`task/objective/`) does for task kinds.
 * `distillStudent` (distill_student.ts) is the one path every kind runs through (run folder, weights, spec
 * file, metrics, the run's ending); the export side's counterpart is `export/export_kind.ts`. A new kind
 * of student is a new implementation of this interface, not a copy of the pipeline.
 *
 * The kinds:
 * - `fact_row`: one prediction per fact row at the row's own time (fraud per transaction);
 * - `entity`: one prediction per entity at request time (churn per customer) — the same student with the
 *   entity as the "row" and the request's anchor as its time (`row_student.ts` implements both);
 * - `session`: the session-aware recommender of a ranking task, top-k items per user from the user's
 *   embedding and last interactions (`session/session_kind.ts`).
 */
import type { RunManifestBase } from '../artifacts/run_store.js';
import type { Config } from '../config/load.js';
import type { ParamStore } from '../model/params.js';

export const STUDENT_KINDS = ['fact_row', 'entity', 'session'] as const;
export type StudentKindName = (typeof STUDENT_KINDS)[number];

/** What every distill run's manifest holds besides the common head. */
export interface DistillManifestBase extends RunManifestBase {
  kind: 'distill';
  /** which student the run holds; absent in runs written before the field existed (see `studentKindOfRun`) */
  student_kind?: StudentKindName;
}

/** A student trained to its best validation epoch: the model, the weights it keeps, and its validation and test metrics. */
export interface TrainedModel<V = unknown> {
  /** `spec`: what the run's spec file holds (the variant's own, for an ablation) */
  model: { readonly spec: object; readonly params: ParamStore; parameterCount(): number; dispose(): void };
  best: Map<string, Float32Array>;
  val: V;
  test: V;
  bestEpoch: number;
}

/** What every kind's training loop takes (Adam on mini-batches, early stopping on validation). */
export interface StudentTrainOptions {
  epochs: number;
  batchSize: number;
  lr: number;
  /** epochs without a validation gain before stopping */
  patience: number;
  dropout: number;
  seed: number;
}

/** The options every kind's distill takes. */
export interface StudentDistillOptions {
  cfg: Config;
  epochs?: number;
  cwd?: string;
}

/** What `prepare` hands the later steps: at least the config and the timings. */
export interface PreparedStudent {
  cfg: Config;
  /** seconds per preparation stage, filled in as they end; the run manifest's `timings` */
  timings: Record<string, number>;
}

/**
 * One kind of student. `O` its options, `P` its prepared data, `S` the trained students (main and
 * ablations), `M` its metrics.json.
 */
export interface StudentKind<O extends StudentDistillOptions, P extends PreparedStudent, S, M> {
  readonly name: StudentKindName;
  /** the spec file beside the weights in the run folder */
  readonly specFile: string;
  /** Base run(s), graph, examples and what each example carries, the teacher's targets, the spec. */
  prepare(opts: O): Promise<P>;
  /** The run's `running` manifest: the common head and this kind's lineage fields (`student_kind` is added by the caller). */
  manifest(p: P, opts: O, startedAt: string): DistillManifestBase;
  /** Trains the main student and its ablations. */
  train(p: P, opts: O): Promise<S>;
  /** the student whose weights and spec the run keeps */
  main(s: S): TrainedModel;
  /** metrics.json: the main student beside its teacher, baselines and ablations */
  metrics(p: P, opts: O, s: S, studentBytes: number): M;
  /** the headline metrics the manifest repeats */
  headline(m: M): Record<string, unknown>;
  /** Frees the students' models that are still held. */
  disposeStudents(s: S): void;
  /** Frees what `prepare` loaded (the base runs' models). */
  release(p: P): void;
}

/**
 * The kind of student a distill run holds. Runs written before `student_kind` existed: a session run says
 * `model: session_recommender`; the others are row students (`fact_row` or, when their spec has no time
 * column, `entity`: the caller that has the spec decides).
 */
export function studentKindOfRun(manifest: { student_kind?: unknown; model?: unknown }): StudentKindName | 'row' {
  const k = manifest.student_kind;
  if (typeof k === 'string' && (STUDENT_KINDS as readonly string[]).includes(k)) return k as StudentKindName;
  return manifest.model === 'session_recommender' ? 'session' : 'row';
}
