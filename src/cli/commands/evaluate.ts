import { parseBackendRequest } from '../../compute/backend.js';
import { loadConfig } from '../../config/load.js';
import { UsageError } from '../../core/errors.js';
import { evaluate, type AnchorChoice } from '../../evaluate/evaluate.js';
import { checkQualityGates, parseGates } from '../gates.js';
import { optional, timeFlag } from '../flags.js';
import type { CommandOutput } from '../run.js';

export interface EvaluateCommandOptions {
  config: string;
  run: string;
  from?: unknown;
  to?: unknown;
  /** ISO times, comma- or space-separated */
  anchors?: string[];
  failUnder?: string[];
  allowSchemaDrift?: boolean;
  backend?: string;
  artifacts?: string;
  cwd?: string;
}

export async function evaluateCommand(opts: EvaluateCommandOptions): Promise<CommandOutput> {
  const gates = parseGates(opts.failUnder);
  const from = optional(timeFlag('--from'), opts.from);
  const to = optional(timeFlag('--to'), opts.to);
  const listed = (opts.anchors ?? []).flatMap((a) => a.split(',')).map((a) => a.trim()).filter(Boolean);
  for (const a of listed) timeFlag('--anchors')(a);
  if (listed.length && (from || to)) throw new UsageError('--anchors and --from/--to both choose anchors', { where: '--anchors', hint: 'pass one of them' });
  if ((from === undefined) !== (to === undefined)) throw new UsageError('--from and --to go together', { where: from ? '--to' : '--from', hint: 'e.g. --from 2020-06-01 --to 2020-09-01' });
  const choice: AnchorChoice = listed.length ? { anchors: listed } : from && to ? { from, to } : null;
  const cfg = loadConfig(opts.config, { artifacts: opts.artifacts, cwd: opts.cwd });
  const r = await evaluate({ cfg, run: opts.run, choice, backend: parseBackendRequest(opts.backend), allowSchemaDrift: opts.allowSchemaDrift, cwd: opts.cwd });
  checkQualityGates(gates, { test: r.metrics }, r);
  const mm = r.main_metric;
  const value = (m: unknown): string => {
    const v = (m as Record<string, number>)[mm];
    return v === undefined || v === null || !Number.isFinite(v) ? 'undefined' : v.toFixed(4);
  };
  const iv = r.intervals[mm];
  const lines = [
    `evaluated run ${r.run_id} (${r.task}) at ${r.anchors.length} anchor(s) (${r.anchors_from}${r.empty_anchors.length ? `; ${r.empty_anchors.length} with no ${r.target_table} row in their window` : ''}): ${(r.metrics as { n: number }).n.toLocaleString('en-US')} examples`,
    `  ${mm} ${value(r.metrics)}${iv ? ` (95% interval ${iv[0].toFixed(4)} … ${iv[1].toFixed(4)})` : ''}`,
    ...(r.by_anchor.length > 1 ? ['  per anchor:', ...r.by_anchor.map((a) => `    ${a.anchor}  n ${String(a.n).padStart(6)}  ${mm} ${value(a.metrics)}`)] : []),
    `  wrote ${r.path}`,
  ];
  return { result: r, text: lines.join('\n') };
}

