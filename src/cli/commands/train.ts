import { parseBackendRequest } from '../../compute/backend.js';
import { loadConfig } from '../../config/load.js';
import { InterruptedError } from '../../core/errors.js';
import { train } from '../../train/trainer.js';
import type { CommandOutput } from '../run.js';
import { checkQualityGates, parseGates } from '../gates.js';
import { intFlag, optional } from '../flags.js';

export interface TrainCommandOptions {
  config: string;
  task: string;
  backend?: string;
  initFrom?: string;
  epochs?: unknown;
  artifacts?: string;
  failUnder?: string[];
  cwd?: string;
}

export async function trainCommand(opts: TrainCommandOptions): Promise<CommandOutput> {
  const gates = parseGates(opts.failUnder);
  const cfg = loadConfig(opts.config, { artifacts: opts.artifacts, cwd: opts.cwd });
  const r = await train({
    cfg,
    task: opts.task,
    backend: parseBackendRequest(opts.backend),
    init_from: opts.initFrom,
    epochs: optional(intFlag('--epochs', 1), opts.epochs),
  });
  const m = r.metrics;
  const result = {
    run_id: r.runId,
    run_dir: r.runDir,
    status: r.status,
    task: m.task,
    kind: m.kind,
    seconds: Math.round(r.seconds * 10) / 10,
    metrics: { val: m.val, test: m.test, baseline: m.baseline ? { val: m.baseline.val, test: m.baseline.test } : null, lift: m.lift, val_lift: m.val_lift },
    best_epoch: m.best_epoch,
    counts: m.counts,
    seeds_per_s: m.epochs.length ? Math.round(m.epochs.reduce((a, e) => a + e.seeds_per_s, 0) / m.epochs.length) : 0,
  };
  if (r.status === 'interrupted') {
    throw new InterruptedError(`training interrupted; the best checkpoint (epoch ${m.best_epoch}) is usable`, { where: r.runDir });
  }
  checkQualityGates(gates, result.metrics, result);
  const mm = m.main_metric;
  const pick = (x: unknown): string => {
    const v = (x as Record<string, number> | null)?.[mm];
    return v === undefined ? '-' : v.toFixed(4);
  };
  const text = [
    `run ${r.runId} (${r.status}) in ${result.seconds}s: ${r.runDir}`,
    `  ${mm}: val ${pick(m.val)}  test ${pick(m.test)}  no-graph baseline test ${pick(m.baseline?.test ?? null)}  lift ${m.lift === null ? '-' : m.lift.toFixed(4)}`,
    `  best epoch ${m.best_epoch} of ${m.epochs.length}; ${result.seeds_per_s.toLocaleString('en-US')} seeds/s`,
  ].join('\n');
  return { result, text };
}
