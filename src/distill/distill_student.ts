/**
 * The one distill path every kind of student runs through (student_kind.ts): prepare the kind's data,
 * start the run (folder, `running` manifest with the kind named in `student_kind`), train the students,
 * keep the main student's weights and spec file, write the metrics, end the run once — `complete`, or
 * `failed` with the error — and free the models whatever happened.
 */
import { RunLifecycle } from '../artifacts/run_lifecycle.js';
import { saveWeights, writeModelJson } from '../artifacts/run_store.js';
import type { PreparedStudent, StudentDistillOptions, StudentKind } from './student_kind.js';

/** A finished distill run. */
export interface StudentDistillResult<M> {
  runId: string;
  runDir: string;
  metrics: M;
  seconds: number;
}

export async function distillStudent<O extends StudentDistillOptions, P extends PreparedStudent, S, M>(kind: StudentKind<O, P, S, M>, opts: O): Promise<StudentDistillResult<M>> {
  const t0 = performance.now();
  const startedAt = new Date().toISOString();
  const p = await kind.prepare(opts);
  try {
    const manifest = { ...kind.manifest(p, opts, startedAt), student_kind: kind.name };
    const run = RunLifecycle.start(p.cfg.artifactsDir, manifest, { t0 });
    return await run.guard(async () => {
      const students = await kind.train(p, opts);
      try {
        const main = kind.main(students);
        const ser = main.model.params.serialize(main.best);
        saveWeights(run.dir, ser.index, ser.blob);
        writeModelJson(run.dir, kind.specFile, main.model.spec);
        const metrics = kind.metrics(p, opts, students, ser.blob.byteLength);
        const ending = run.finish(metrics, kind.headline(metrics));
        return { runId: run.id, runDir: run.dir, metrics, seconds: ending.seconds };
      } finally {
        kind.disposeStudents(students);
      }
    });
  } finally {
    kind.release(p);
  }
}
