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
    const keys = path.split('.');
    const parent = keys.slice(0, -1).reduce<unknown>((o, k) => (o && typeof o === 'object' ? (o as Record<string, unknown>)[k] : undefined), metrics);
    const last = keys[keys.length - 1]!;
    const present = parent !== null && typeof parent === 'object' && last in parent;
    const v = present ? (parent as Record<string, unknown>)[last] : undefined;
    if (!present || (v !== null && typeof v !== 'number')) {
      throw new UsageError(`--fail-under: no numeric metric "${g.path}"`, { hint: 'use a path into the metrics object, e.g. test.auroc or lift' });
    }
    // An undefined metric (NaN in memory, null in JSON) fails the gate: a bar no number cleared is not met.
    if (v === null || !Number.isFinite(v)) {
      failures.push(`${g.path} is undefined (${undefinedReason(last, parent as Record<string, unknown>, metrics)}; bar ${g.value})`);
      continue;
    }
    const worse = LOWER_IS_BETTER.test(g.path) ? (v as number) > g.value : (v as number) < g.value;
    if (worse) failures.push(`${g.path} = ${v} (bar ${g.value})`);
  }
  if (failures.length) throw new QualityGateError(`quality gate failed: ${failures.join('; ')}`, { result });
}

/** Why a metric has no value, read from the metrics beside it (the sample size and class balance). */
export function undefinedReason(key: string, siblings: Record<string, unknown>, metrics: unknown): string {
  const n = siblings.n;
  if (n === 0) return 'the set is empty: no examples at its anchors';
  const rate = siblings.positive_rate;
  if (rate === 0) return `no positive examples among ${n}`;
  if (rate === 1) return `no negative examples among ${n}`;
  if (key === 'lift' || key === 'val_lift') {
    const m = metrics as Record<string, unknown> | null;
    if (m && m.baseline === null) return 'the run has no baseline to compare with';
    return 'the model\'s or the baseline\'s metric is undefined';
  }
  return 'the metric could not be computed on these examples';
}
