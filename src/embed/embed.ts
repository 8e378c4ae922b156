/**
 * `embed`: the embedding of every entity of a table at one anchor time, from a trained run, into
 * `embeddings.parquet` (or one part file per shard). The daily cron job: fast (exact layer-wise inference
 * by default), restartable (the output appears only when complete), deterministic (same inputs → same
 * file), and refusing a run whose graph schema no longer matches the data.
 */
import { Progress } from '../core/progress.js';
import { VERSION } from '../core/version.js';
import { defaultSnapshotDir, openSnapshot, representations, snapshotMetadata, writeSnapshot, type EmbedMode, type SnapshotFigures, type SnapshotOptions } from './snapshot.js';

export { checkSchema, type EmbedMode } from './snapshot.js';

export type EmbedOptions = SnapshotOptions;

export interface EmbedResult extends SnapshotFigures {
  dim: number;
}

/** What the parquet metadata and the folder manifest record about an embedding file. */
export interface EmbeddingMetadata {
  run_id: string;
  table: string;
  key: string;
  dim: number;
  anchor_time: string;
  mode: EmbedMode;
  graph_fingerprint: string;
  data_fingerprint: string;
  gnnctl: string;
}

/** `artifacts/embeddings/<run-id>/<anchor>/<table>/`: one folder per snapshot and table (a run may embed several). */
export function defaultEmbeddingDir(artifactsDir: string, runId: string, anchor: number, table: string): string {
  return defaultSnapshotDir(artifactsDir, 'embeddings', runId, anchor, table);
}

/** What `embed` calls its snapshot in messages and on disk. */
export const EMBED_LAYOUT = { verb: 'embed', done: 'embedded', folder: 'embeddings', file: 'embeddings.parquet' } as const;

export async function embed(opts: EmbedOptions): Promise<EmbedResult> {
  const t0 = performance.now();
  const s = await openSnapshot(opts, EMBED_LAYOUT);
  try {
    const meta: EmbeddingMetadata = { ...snapshotMetadata(s, VERSION), dim: s.model.spec.channels };
    const timing = { computeMs: 0 };
    const progress = new Progress();
    progress.begin(`embed ${s.table} (${s.mode})`, s.hi - s.lo);
    const figures = await writeSnapshot(s, opts, representations(s, opts, timing, progress), { meta, timing, progress, t0 });
    return { ...figures, dim: meta.dim };
  } finally {
    s.model.dispose();
  }
}

