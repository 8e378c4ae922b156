/**
 * `distill` and `recommender distill`: one path (`distillStudent`) for every kind of student
 * (student_kind.ts), the kind chosen from the config. `gnnctl distill` distils the `distillation` block's
 * task as a row student — `entity` for a task with one prediction per entity, `fact_row` otherwise
 * (row_student.ts); `gnnctl recommender distill` distils the `session_recommender` block's ranking task as
 * the session recommender (session/session_kind.ts).
 */
import { distillStudent } from './distill_student.js';
import { rowKindFor, rowStudentKind, type DistillOptions, type DistillResult } from './row_student.js';
import { sessionKind, type DistillSessionOptions, type DistillSessionResult } from './session/session_kind.js';

export { defaultCadence, distillRunKey, prepareDistill, STUDENT_SPEC_FILE } from './row_student.js';
export type { DistillManifest, DistillMetrics, DistillOptions, DistillResult, PreparedDistill } from './row_student.js';

/** Distils the config's `distillation` task (or `opts.task`) as a row student. */
export async function distill(opts: DistillOptions): Promise<DistillResult> {
  return distillStudent(rowStudentKind(rowKindFor(opts)), opts);
}

/** Distils the config's `session_recommender` ranking task as the session recommender. */
export async function distillSession(opts: DistillSessionOptions): Promise<DistillSessionResult> {
  return distillStudent(sessionKind, opts);
}
