import { parseBackendRequest } from '../../compute/backend.js';
import { loadConfig } from '../../config/load.js';
import { distillSession } from '../../distill/distill.js';
import { exportSessionRecommender } from '../../export/session_export.js';
import type { CommandOutput } from '../run.js';
import { intFlag, optional } from '../flags.js';

export interface RecommenderDistillOptions {
  config: string;
  userBase?: string;
  itemBase?: string;
  epochs?: unknown;
  backend?: string;
  artifacts?: string;
  cwd?: string;
}

export async function recommenderDistillCommand(opts: RecommenderDistillOptions): Promise<CommandOutput> {
  const cfg = loadConfig(opts.config, { artifacts: opts.artifacts, cwd: opts.cwd });
  const r = await distillSession({ cfg, userBase: opts.userBase, itemBase: opts.itemBase, epochs: optional(intFlag('--epochs', 1), opts.epochs), backend: parseBackendRequest(opts.backend), cwd: opts.cwd });
  const m = r.metrics;
  const k = m.k;
  const f = (x: { map: number; recall: number; ndcg: number }): string => `MAP@${k} ${x.map.toFixed(4)}, recall@${k} ${x.recall.toFixed(4)}, NDCG@${k} ${x.ndcg.toFixed(4)}`;
  const iv = (x: [number, number] | null): string => (x ? ` [95% ${x[0].toFixed(4)} … ${x[1].toFixed(4)}]` : '');
  const d = m.session_departure;
  const result = { run_id: r.runId, run_dir: r.runDir, seconds: Math.round(r.seconds * 10) / 10, metrics: m };
  const text = [
    `session recommender ${r.runId} in ${result.seconds}s: ${r.runDir}`,
    `  test: ${f(m.test)}${iv(m.intervals.test.map_at_k)} (${m.counts.test} users, ${m.counts.items} items)`,
    `  baselines (test): popularity ${f(m.baselines.popularity.test)}; repeat ${f(m.baselines.repeat.test)}; lift over the best ${m.lift_over_best_baseline.toFixed(2)}× (MAP@${k} difference${iv(m.intervals.lift_over_best_baseline)})`,
    `  ablations (test): without the session ${f(m.ablations.no_session.test)}; session only ${f(m.ablations.session_only.test)}`,
    `  users whose session departs from their history (${d.departed.student.examples}): MAP@${k} ${d.departed.student.map.toFixed(4)} with the session vs ${d.departed.no_session.map.toFixed(4)} without; the rest (${d.rest.student.examples}): ${d.rest.student.map.toFixed(4)} vs ${d.rest.no_session.map.toFixed(4)}`,
    m.teacher
      ? `  teacher ${m.distillation.teacher} (KD weight ${m.distillation.kd_weight}): ${f(m.teacher.test)}; the student reaches ${((m.teacher_ratio ?? 0) * 100).toFixed(1)}% of its MAP@${k}`
      : `  no teacher: ${m.distillation.reason}`,
    `  student ${m.student.parameters.toLocaleString('en-US')} parameters + ${m.student.parameters_per_item} per item`,
  ].join('\n');
  return { result, text };
}

export interface RecommenderExportOptions {
  config: string;
  run: string;
  out?: string;
  name?: string;
  version?: string;
  backend?: string;
  artifacts?: string;
  cwd?: string;
}

export async function recommenderExportCommand(opts: RecommenderExportOptions): Promise<CommandOutput> {
  const cfg = loadConfig(opts.config, { artifacts: opts.artifacts, cwd: opts.cwd });
  const version = optional(intFlag('--version', 1), opts.version);
  const r = await exportSessionRecommender({ cfg, run: opts.run, out: opts.out, name: opts.name, version, backend: parseBackendRequest(opts.backend), cwd: opts.cwd });
  const text = [
    `exported ${r.model} version ${r.version} in ${r.seconds}s: ${r.dir}`,
    `  model.onnx ${(r.model_bytes / 2 ** 20).toFixed(1)} MiB; ${r.users.toLocaleString('en-US')} users and ${r.items.toLocaleString('en-US')} items embedded at ${r.embedding_anchor}`,
    `  parity with the trained model on ${r.parity.requests} requests: max |Δ score| ${r.parity.max_abs_diff.toExponential(2)}, top-k keys equal ${r.parity.keys_equal}/${r.parity.requests}`,
  ].join('\n');
  return { result: r, text };
}
