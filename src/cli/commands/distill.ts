import { parseBackendRequest } from '../../compute/backend.js';
import { loadConfig } from '../../config/load.js';
import { distill } from '../../distill/distill.js';
import type { CommandOutput } from '../run.js';
import { checkQualityGates, parseGates } from '../gates.js';
import { intFlag, optional } from '../flags.js';
import { warn } from '../../core/log.js';
import { fewRowsWarning } from '../../task/data_warnings.js';

export interface DistillCommandOptions {
  config: string;
  base?: string;
  task?: string;
  embeddings?: string;
  backend?: string;
  epochs?: unknown;
  artifacts?: string;
  failUnder?: string[];
  cwd?: string;
}

export async function distillCommand(opts: DistillCommandOptions): Promise<CommandOutput> {
  const gates = parseGates(opts.failUnder);
  const cfg = loadConfig(opts.config, { artifacts: opts.artifacts, cwd: opts.cwd });
  const r = await distill({
    cfg,
    base: opts.base,
    task: opts.task,
    embeddings: opts.embeddings,
    backend: parseBackendRequest(opts.backend),
    epochs: optional(intFlag('--epochs', 1), opts.epochs),
    cwd: opts.cwd,
  });
  const m = r.metrics;
  const result = {
    run_id: r.runId,
    run_dir: r.runDir,
    task: m.task,
    base_run: m.base_run,
    seconds: Math.round(r.seconds * 10) / 10,
    metrics: { chosen: m.chosen, chosen_reason: m.chosen_reason, val: m.val, test: m.test, full_student: m.full_student, teacher: m.teacher, intervals: m.intervals, teacher_ratio: m.teacher_ratio, teacher_ap_ratio: m.teacher_ap_ratio, ablations: m.ablations, student: m.student, teacher_model: m.teacher_model, embeddings: m.embeddings },
    counts: m.counts,
    warnings: [] as string[],
  };
  // A student with more parameters than training rows can memorise them (issue 32: 100 rows, below chance).
  const few = fewRowsWarning(m.task, m.counts.train, m.student.parameters);
  if (few) {
    warn(few);
    result.warnings.push(few);
  }
  checkQualityGates(gates, result.metrics, result, 'distill');
  const f = (x: unknown): string => {
    const v = (x as Record<string, number> | null | undefined)?.auroc ?? (x as Record<string, number> | null | undefined)?.mae;
    return v === undefined ? '-' : v.toFixed(4);
  };
  const main = (x: Record<string, unknown> | null | undefined): string => (x?.auroc !== undefined ? 'auroc' : 'mae');
  const iv = (x: Record<string, [number, number] | null> | null | undefined): string => {
    const v = x?.[main(x)];
    return v ? ` [95% ${v[0].toFixed(4)} … ${v[1].toFixed(4)}]` : '';
  };
  const lift = m.intervals.lift_over_teacher;
  const text = [
    `distilled run ${r.runId} in ${result.seconds}s: ${r.runDir}`,
    `  test: distilled ${f(m.test)}${iv(m.intervals.test)}  teacher ${f(m.teacher?.test)}${iv(m.intervals.teacher_test)}${m.teacher_ratio ? ` (${(m.teacher_ratio * 100).toFixed(1)}%)` : ''}${m.teacher_ap_ratio ? `; average precision ${(m.teacher_ap_ratio * 100).toFixed(1)}% of the teacher's` : ''}`,
    ...(lift ? [`  student − teacher on test: [95% ${lift[0].toFixed(4)} … ${lift[1].toFixed(4)}] (${m.intervals.lift_over_teacher_judgement})`] : []),
    `  kept and exported: ${m.chosen === 'student' ? 'the full student' : `the ${m.chosen.replace('_', ' ')} ablation`} (${m.chosen_reason})`,
    `  ablations (test): features only ${f(m.ablations.features_only.test)}, embedding only ${f(m.ablations.embedding_only.test)}, RTI only ${f(m.ablations.rti_only.test)}`,
    `  student ${m.student.parameters.toLocaleString('en-US')} parameters (${(m.student.bytes / 1024).toFixed(1)} KiB), teacher ${m.teacher_model.parameters_without_embeddings.toLocaleString('en-US')} without embedding tables; TF.js latency p50 ${m.student.latency_ms_p50} ms`,
    `  embeddings: ${m.embeddings.source}, ${m.embeddings.snapshots.length} snapshots, coverage test ${(m.embeddings.coverage.test * 100).toFixed(1)}%`,
  ].join('\n');
  return { result, text };
}
