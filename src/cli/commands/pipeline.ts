import { parseBackendRequest } from '../../compute/backend.js';
import { loadConfig } from '../../config/load.js';
import { QualityGateError } from '../../core/errors.js';
import { checkRepository } from '../../pipeline/check.js';
import { formatPipeline, runPipeline } from '../../pipeline/pipeline.js';
import { refreshJob, type IncrementalSummary } from '../../pipeline/refresh.js';
import { parseIsoTime } from '../../core/time.js';
import { join, resolve } from 'node:path';
import type { CommandOutput } from '../run.js';
import { publishTarget, type PublishFlags } from '../publish_flags.js';
import { formatPublished } from '../../online_store/publish_snapshot.js';
import { checkQualityGates, parseGates } from '../gates.js';
import { intFlag, numberFlag, optional, secondsFlag, timeFlag } from '../flags.js';

export interface PipelineCommandOptions {
  config: string;
  backend?: string;
  force?: boolean;
  epochs?: unknown;
  distillEpochs?: unknown;
  smoke?: boolean;
  artifacts?: string;
  failUnder?: string[];
  cwd?: string;
}


export async function pipelineCommand(opts: PipelineCommandOptions): Promise<CommandOutput> {
  const gates = parseGates(opts.failUnder);
  const cfg = loadConfig(opts.config, { artifacts: opts.artifacts, cwd: opts.cwd });
  const r = await runPipeline({
    cfg,
    backend: parseBackendRequest(opts.backend),
    force: opts.force,
    epochs: optional(intFlag('--epochs', 1), opts.epochs),
    distillEpochs: optional(intFlag('--distill-epochs', 1), opts.distillEpochs),
    noSmoke: opts.smoke === false,
    publish: publishTarget({}, cfg.online_store, { useBlockUrl: true }),
    cwd: opts.cwd,
  });
  checkQualityGates(gates, r.metrics, r);
  return { result: r, text: [formatPipeline(r), ...(r.published ?? []).map(formatPublished)].join('\n') };
}

export interface RefreshCommandOptions extends PublishFlags {
  config: string;
  modelRepository?: string;
  run?: string;
  predict?: string[];
  incremental?: boolean;
  backend?: string;
  artifacts?: string;
  cwd?: string;
}

export async function refreshCommand(opts: RefreshCommandOptions): Promise<CommandOutput> {
  const cfg = loadConfig(opts.config, { artifacts: opts.artifacts, cwd: opts.cwd });
  const target = publishTarget(opts, cfg.online_store, { useBlockUrl: true });
  const r = await refreshJob({
    cfg,
    modelRepository: opts.modelRepository ? resolve(opts.cwd ?? process.cwd(), opts.modelRepository) : undefined,
    run: opts.run,
    predict: opts.predict,
    publish: target,
    incremental: opts.incremental,
    backend: parseBackendRequest(opts.backend),
    cwd: opts.cwd,
  });
  const lines = r.predictions.map((p) => `predicted ${p.rows.toLocaleString('en-US')} ${p.table} (${p.task}) as of ${p.anchor_time}: ${p.path}`);
  if (r.model !== null && r.incremental) lines.push(...formatIncremental(r.incremental));
  if (r.model !== null) lines.push(`refreshed ${r.model}: version ${r.version}${r.previous_version ? ` (was ${r.previous_version})` : ''} in ${r.seconds}s (embedding ${r.phases.embed}s, export ${r.phases.export}s, drift report ${r.phases.drift}s) with embeddings as of ${Object.values(r.embedding_anchor).join(', ')}: ${r.dir}`);
  for (const p of r.published ?? []) lines.push(formatPublished(p));
  const text = lines.join('\n');
  return { result: r, text };
}

function formatIncremental(inc: IncrementalSummary): string[] {
  const lines = inc.tables.map((t) =>
    t.kind === 'full'
      ? `incremental ${t.table}: full refresh of ${t.rows.toLocaleString('en-US')} (${t.full_reason})`
      : `incremental ${t.table}: recomputed ${t.recomputed.toLocaleString('en-US')}, kept ${t.kept.toLocaleString('en-US')}${t.expired ? ` (${t.expired.toLocaleString('en-US')} recomputed past max_embedding_offset)` : ''} since ${t.previous!.anchor_time}`,
  );
  const saved = inc.seconds_saved !== null ? `, ${inc.seconds_saved}s saved against the last full refresh (${inc.full_refresh_seconds}s)` : inc.full_refresh_seconds === null ? ', time of the last full refresh unknown' : '';
  lines.push(`incremental: recomputed ${inc.recomputed.toLocaleString('en-US')}, kept ${inc.kept.toLocaleString('en-US')} in ${inc.seconds}s of embedding${saved}`);
  return lines;
}

export interface CheckCommandOptions {
  modelRepository?: string;
  config?: string;
  now?: string;
  /** `--drift-threshold PSI` (default 0.25) */
  driftThreshold?: unknown;
  /** `--drift-window T` (default 30 days) */
  driftWindow?: unknown;
  artifacts?: string;
  json?: boolean;
  cwd?: string;
}

export async function checkCommand(opts: CheckCommandOptions): Promise<CommandOutput> {
  const cfg = opts.config ? loadConfig(opts.config, { artifacts: opts.artifacts, cwd: opts.cwd }) : undefined;
  const repo = opts.modelRepository ? resolve(opts.cwd ?? process.cwd(), opts.modelRepository) : join(cfg?.artifactsDir ?? resolve(opts.cwd ?? process.cwd(), opts.artifacts ?? 'artifacts'), 'model_repository');
  const nowText = optional(timeFlag('--now', ['clock']), opts.now);
  const now = nowText === undefined ? undefined : nowText === 'clock' ? Date.now() / 1000 : parseIsoTime(nowText)!;
  const drift = { threshold: numberFlag('--drift-threshold', { above: 0 })(opts.driftThreshold ?? 0.25), window: secondsFlag('--drift-window')(opts.driftWindow ?? 30 * 86400) };
  const r = await checkRepository(repo, cfg, now, drift);
  const text = [
    `${r.ok ? 'OK' : 'FAILED'}: ${repo} (reference time ${r.reference_time}, from the ${r.reference})`,
    ...r.checks.map((c) => `  ${c.ok ? '✓' : '✗'} ${c.model} v${c.version} ${c.check.padEnd(13)} ${c.detail}`),
  ].join('\n');
  if (!r.ok) {
    // The findings are the point of a failed check: print them before the error (JSON carries them in `result`).
    if (!opts.json) process.stdout.write(`${text}\n`);
    throw new QualityGateError(`${r.checks.filter((c) => !c.ok).length} check(s) failed`, { result: r });
  }
  return { result: r, text };
}
