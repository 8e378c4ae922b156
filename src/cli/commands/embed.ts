import { parseBackendRequest } from '../../compute/backend.js';
import { loadConfig } from '../../config/load.js';
import { embed, type EmbedMode } from '../../embed/embed.js';
import { optional, shardFlag, timeFlag, workersFlag } from '../flags.js';
import { UsageError } from '../../core/errors.js';
import { publishTarget, type PublishFlags } from '../publish_flags.js';
import type { CommandOutput } from '../run.js';

export interface EmbedCommandOptions extends PublishFlags {
  config: string;
  run: string;
  table?: string;
  anchorTime?: unknown;
  out?: string;
  shard?: unknown;
  mode?: string;
  allowSchemaDrift?: boolean;
  backend?: string;
  /** 'auto' or a count (a string from the command line) */
  workers?: unknown;
  artifacts?: string;
  cwd?: string;
}

export async function embedCommand(opts: EmbedCommandOptions): Promise<CommandOutput> {
  const mode = (opts.mode ?? 'exact') as EmbedMode;
  if (mode !== 'exact' && mode !== 'sampled') throw new UsageError('bad --mode', { value: opts.mode, hint: 'exact or sampled' });
  const workers = optional(workersFlag('--workers'), opts.workers);
  const cfg = loadConfig(opts.config, { artifacts: opts.artifacts, cwd: opts.cwd });
  const target = publishTarget(opts, cfg.online_store);
  const r = await embed({
    workers,
    cfg,
    run: opts.run,
    table: opts.table,
    anchorTime: optional(timeFlag('--anchor-time', ['latest']), opts.anchorTime),
    out: opts.out,
    shard: optional(shardFlag('--shard'), opts.shard),
    mode,
    allowSchemaDrift: opts.allowSchemaDrift,
    backend: parseBackendRequest(opts.backend),
    cwd: opts.cwd,
  });
  const text = `wrote ${r.rows.toLocaleString('en-US')} ${r.table} embeddings (dim ${r.dim}, ${r.mode}, anchor ${r.anchor_time}) in ${r.seconds}s: ${r.path}\n  compute ${r.compute_seconds}s, ${r.entities_per_s.toLocaleString('en-US')} entities/s${r.workers > 1 ? ` over ${r.workers} worker threads` : ''}`;
  if (!target) return { result: r, text };
  const { publishSnapshot, formatPublished } = await import('../../online_store/publish_snapshot.js');
  const published = await publishSnapshot({ path: r.path, kind: 'embedding', model: r.table, run_id: r.run_id, anchor_time: r.anchor_time, dim: r.dim }, target);
  return { result: { ...r, published }, text: `${text}\n${formatPublished(published)}` };
}
