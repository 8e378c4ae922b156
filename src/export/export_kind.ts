/**
 * The export side of the student seam (distill/student_kind.ts): what differs between exporting a row
 * student (`fact_row`, `entity`: export.ts) and the session recommender (`session`: session_export.ts) —
 * what the export reads besides the run, the ONNX graph, the parity check against TF.js, and what the
 * version's manifest, README and Triton config say — behind one interface. `exportStudent`
 * (export_student.ts) is the one path both run through: the run resolved and its kind checked, the
 * repository target, the progress steps, the version folder published atomically (model_repository.ts).
 */
import type { BackendRequest } from '../compute/backend.js';
import type { Config } from '../config/load.js';
import type { RunListing } from '../artifacts/run_store.js';
import type { UsageError } from '../core/errors.js';
import type { DistillManifestBase, StudentKindName } from '../distill/student_kind.js';
import type { RepositoryTarget, VersionDescription } from './model_repository.js';

/** The options every kind's export takes. */
export interface StudentExportOptions {
  cfg: Config;
  /** the distilled run: id, folder or latest:<task> */
  run: string;
  out?: string;
  name?: string;
  version?: number;
  backend?: BackendRequest;
  cwd?: string;
}

/** Reports the export's steps (writing, checking, copying) as one progress line. */
export type ExportStep = (what: string) => void;

/**
 * One kind of exported student. `O` its options, `X` what it reads, `W` what writing the version gave
 * (files, checks), `R` the export's result.
 */
export interface ExportKind<O extends StudentExportOptions, X, W, R> {
  /** the run kinds it exports (`row`: a row student's run that predates `student_kind`) */
  readonly kinds: readonly (StudentKindName | 'row')[];
  /** how many progress steps `write` reports */
  readonly steps: number;
  /** the refusal of a distilled run of another kind, naming the command that exports it */
  wrongRun(runId: string): UsageError;
  /** What the export reads: the run's spec and weights, the graph, the embeddings baked into the model. */
  inputs(opts: O, run: RunListing, manifest: DistillManifestBase): Promise<X>;
  /** the model's name in the repository when `--name` is not given */
  defaultName(x: X): string;
  /** Builds the ONNX graph, writes it (and any files beside it) into `tmp`, and checks it against TF.js. */
  write(x: X, opts: O, tmp: string, step: ExportStep): Promise<W>;
  /** manifest.json, README.md and config.pbtxt of the version */
  describe(x: X, target: RepositoryTarget, w: W): VersionDescription;
  /** the export's result (`seconds`: its wall time) */
  result(x: X, target: RepositoryTarget, w: W, seconds: number): R;
}
