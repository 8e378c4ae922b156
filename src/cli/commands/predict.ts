import { parseBackendRequest } from '../../compute/backend.js';
import { loadConfig } from '../../config/load.js';
import { predict } from '../../predict/predict.js';
import type { EmbedMode } from '../../embed/snapshot.js';
import { NotImplementedError } from '../../core/errors.js';
import { choiceFlag, optional, shardFlag, timeFlag, workersFlag } from '../flags.js';
import { publishTarget } from '../publish_flags.js';
import type { CommandOutput } from '../run.js';
import type { EmbedCommandOptions } from './embed.js';

export interface PredictCommandOptions extends EmbedCommandOptions {
  withEmbeddings?: boolean;
  serveModel?: boolean;
}

export async function predictCommand(opts: PredictCommandOptions): Promise<CommandOutput> {
  const mode = optional(choiceFlag<EmbedMode>('--mode', ['exact', 'sampled']), opts.mode) ?? 'exact';
  const anchorTime = optional(timeFlag('--anchor-time', ['latest']), opts.anchorTime);
  const shard = optional(shardFlag('--shard'), opts.shard);
  const workers = optional(workersFlag('--workers'), opts.workers);
  const cfg = loadConfig(opts.config, { artifacts: opts.artifacts, cwd: opts.cwd });
  const target = publishTarget(opts, cfg.online_store);
  const r = await predict({
    cfg,
    run: opts.run,
    table: opts.table,
    anchorTime,
    out: opts.out,
    shard,
    mode,
    workers,
    withEmbeddings: opts.withEmbeddings,
    serveModel: opts.serveModel,
    allowSchemaDrift: opts.allowSchemaDrift,
    backend: parseBackendRequest(opts.backend),
    cwd: opts.cwd,
  });
  if (r.prediction === 'top_k') {
    if (target) throw new NotImplementedError('--publish of top-k lists (ranking runs) is not implemented; publish a binary or regression run\'s predictions, or the embeddings with `gnnctl embed --publish`', { value: r.task });
    const text =
      `wrote the top ${r.k} ${r.item_table} of ${(r.rows / r.k).toLocaleString('en-US', { maximumFractionDigits: 0 })} ${r.table} (${r.task}, ${r.served_by === 'model' ? r.mode : `served by ${r.served_by}`}, anchor ${r.anchor_time}, ${r.items.toLocaleString('en-US')} items) in ${r.seconds}s: ${r.path}` +
      `\n  compute ${r.compute_seconds}s, ${r.entities_per_s.toLocaleString('en-US')} entities/s${r.workers > 1 ? ` over ${r.workers} worker threads` : ''}${r.item_embeddings ? `\n  item embeddings: ${r.item_embeddings}` : ''}`;
    return { result: r, text };
  }
  const text = `wrote ${r.rows.toLocaleString('en-US')} ${r.table} predictions (${r.task}: ${r.prediction}, served by the ${r.served_by}, ${r.mode}, anchor ${r.anchor_time}${r.with_embeddings ? ', with embeddings' : ''}) in ${r.seconds}s: ${r.path}\n  compute ${r.compute_seconds}s, ${r.entities_per_s.toLocaleString('en-US')} entities/s${r.workers > 1 ? ` over ${r.workers} worker threads` : ''}`;
  if (!target) return { result: r, text };
  const { publishSnapshot, formatPublished } = await import('../../online_store/publish_snapshot.js');
  const published = await publishSnapshot({ path: r.path, kind: 'prediction', model: r.task, run_id: r.run_id, anchor_time: r.anchor_time, dim: 0 }, target);
  return { result: { ...r, published }, text: `${text}\n${formatPublished(published)}` };
}
