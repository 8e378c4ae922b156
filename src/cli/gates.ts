/**
 * `--fail-under METRIC=VALUE` quality gates: CI fails a build (exit 4) when a metric is worse than the
 * bar. METRIC is a dotted path into the command's `metrics` (e.g. `test.auroc`, `baseline.test.auroc`,
 * `lift`); for error metrics (mae, rmse) "under" means "worse", i.e. the gate fails when the value is above.
 */
import { QualityGateError, UsageError } from '../core/errors.js';

export interface Gate {
  path: string;
  value: number;
}

const LOWER_IS_BETTER = /(^|\.)(mae|rmse|loss)$/;

export function parseGates(specs: string[] | undefined): Gate[] {
  return (specs ?? []).map((s) => {
    const m = /^([A-Za-z0-9_.]+)=(-?\d+(?:\.\d+)?)$/.exec(s);
    if (!m) throw new UsageError('bad --fail-under', { value: s, hint: 'write METRIC=VALUE, e.g. --fail-under test.auroc=0.7' });
    return { path: m[1]!, value: Number(m[2]) };
  });
}

/**
 * @param stage a command that is one stage of `pipeline` (e.g. 'distill') also accepts the pipeline's
 * path for the same metric (`distill.teacher_ap_ratio`), so one CI gate line works for both commands.
 */
export function checkQualityGates(gates: Gate[], metrics: unknown, result: unknown, stage?: string): void {
  const failures: string[] = [];
  for (const g of gates) {
    const path = stage && g.path.startsWith(`${stage}.`) ? g.path.slice(stage.length + 1) : g.path;
    const v = path.split('.').reduce<unknown>((o, k) => (o && typeof o === 'object' ? (o as Record<string, unknown>)[k] : undefined), metrics);
    if (typeof v !== 'number') {
      throw new UsageError(`--fail-under: no numeric metric "${g.path}"`, { hint: 'use a path into the metrics object, e.g. test.auroc or lift' });
    }
    const worse = LOWER_IS_BETTER.test(g.path) ? v > g.value : v < g.value;
    if (worse) failures.push(`${g.path} = ${v} (bar ${g.value})`);
  }
  if (failures.length) throw new QualityGateError(`quality gate failed: ${failures.join('; ')}`, { result });
}
