/** `gnnctl anomaly fit | score | watch`: parse flags, load the config, call the stage, print. */
import { parseBackendRequest } from '../../compute/backend.js';
import { loadConfig } from '../../config/load.js';
import { UsageError } from '../../errors.js';
import { fitAnomaly, type FitResult } from '../../anomaly/fit.js';
import type { CommandOutput } from '../run.js';

export interface AnomalyCommandOptions {
  config: string;
  run?: string;
  from?: string;
  until?: string;
  to?: string;
  out?: string;
  epochs?: string;
  backend?: string;
  artifacts?: string;
  interval?: string;
  prometheus?: string;
  alertmanager?: string;
  port?: string;
  host?: string;
  stateFile?: string;
  maxTicks?: string;
  json?: boolean;
  quiet?: boolean;
  cwd?: string;
}

/** ISO time (or epoch seconds) → epoch seconds; a clear usage error otherwise. */
export function parseTimeFlag(flag: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const text = value.trim();
  const t = /^\d+(\.\d+)?$/.test(text) ? Number(text) : Date.parse(/[zZ]|[+-]\d\d:?\d\d$/.test(text) || !/T|\s\d/.test(text) ? text : `${text}Z`) / 1000;
  if (!Number.isFinite(t)) throw new UsageError('not a time', { where: flag, value, hint: `write an ISO time, e.g. ${flag} 2026-01-06T00:00:00Z` });
  return t;
}

function positiveInt(flag: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  if (!/^\d+$/.test(value.trim()) || Number(value) < 1) throw new UsageError(`${flag} must be a positive integer`, { where: flag, value, hint: `e.g. ${flag} 10` });
  return Number(value);
}

export async function anomalyFitCommand(opts: AnomalyCommandOptions): Promise<CommandOutput<FitResult>> {
  const from = parseTimeFlag('--from', opts.from);
  const until = parseTimeFlag('--until', opts.until);
  if (from !== undefined && until !== undefined && until <= from) throw new UsageError('--until must be after --from', { where: '--until', value: opts.until });
  const epochs = positiveInt('--epochs', opts.epochs);
  const cfg = loadConfig(opts.config, { artifacts: opts.artifacts, cwd: opts.cwd });
  const r = await fitAnomaly(cfg, { from, until, epochs, backend: parseBackendRequest(opts.backend) });
  const text = [
    `anomaly run ${r.run_id}: fitted on ${r.train_snapshots} snapshots (${r.fit_from} .. ${r.fit_until}), warm-up ${r.warmup_snapshots}`,
    `  ${r.services} services, ${r.mean_edges} calls per snapshot; features ${r.feature_columns.join(', ')}`,
    `  loss ${r.loss.map((l) => l.toFixed(4)).join(' → ')}; threshold τ = ${r.threshold.toFixed(3)} (flat baseline ${r.flat_threshold.toFixed(3)})`,
    `  ${r.run_dir} (${r.backend}, ${r.seconds} s)`,
  ].join('\n');
  return { result: r, text };
}

export async function anomalyScoreCommand(_opts: AnomalyCommandOptions): Promise<CommandOutput> {
  throw new UsageError('not yet');
}
export async function anomalyWatchCommand(_opts: AnomalyCommandOptions): Promise<CommandOutput> {
  throw new UsageError('not yet');
}
