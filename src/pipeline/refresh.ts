/**
 * `refresh`: the daily cron job. Embeds the entities of the deployed model's base run at the newest time
 * in the data and exports them, with the same distilled model, as the next version of the model in the
 * repository — no retraining. A running `gnnctl serve` (or Triton with a polling repository) picks the
 * new version up without a restart.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { BackendRequest } from '../compute/backend.js';
import type { Config } from '../config/load.js';
import type { DistillManifest } from '../distill/distill.js';
import { embed } from '../embed/embed.js';
import { ArtifactError } from '../core/errors.js';
import { exportModel } from '../export/export.js';
import { readManifest, readModelJson, resolveRun } from '../artifacts/run_store.js';
import { warn } from '../core/log.js';
import { buildGraph } from '../graph/build.js';
import { Graph } from '../graph/graph.js';
import type { FeatureSpec } from '../model/features.js';
import { driftReport, type DriftReport } from './drift.js';

export interface RefreshOptions {
  cfg: Config;
  modelRepository?: string;
  /** distilled run to serve (default: the one the latest version was exported from) */
  run?: string;
  backend?: BackendRequest;
  cwd?: string;
}

export interface RefreshResult {
  model: string;
  version: number;
  previous_version: number | null;
  dir: string;
  distilled_run: string;
  base_run: string;
  embedding_anchor: Record<string, string>;
  embedding_rows: Record<string, number>;
  /** the base run's feature drift on the data this version was embedded from (reported, not enforced: `gnnctl check` gates on it) */
  drift: DriftReport;
  seconds: number;
}

export async function refresh(opts: RefreshOptions): Promise<RefreshResult> {
  const t0 = performance.now();
  const { cfg } = opts;
  const repo = opts.modelRepository ?? join(cfg.artifactsDir, 'model_repository');
  const name = cfg.export.name;
  const modelDir = join(repo, name);
  const previous = latestVersion(modelDir);
  let distilledRef = opts.run;
  if (!distilledRef) {
    if (previous === null) {
      throw new ArtifactError(`no exported version of ${name} in ${repo} to refresh`, { hint: 'export one first (gnnctl pipeline or gnnctl export), or pass --run with a distilled run' });
    }
    distilledRef = (JSON.parse(readFileSync(join(modelDir, String(previous), 'manifest.json'), 'utf8')) as { distilled_run: string }).distilled_run;
  }
  const distilled = resolveRun(cfg.artifactsDir, distilledRef, { kind: 'distill', cwd: opts.cwd });
  const dm = readManifest<DistillManifest>(distilled.dir);
  const tables = [...new Set((JSON.parse(readFileSync(join(distilled.dir, 'model', 'student.json'), 'utf8')) as { embeddings: { target: string }[] }).embeddings.map((e) => e.target))];
  const files: string[] = [];
  for (const table of tables) {
    const r = await embed({ cfg, run: dm.base_run, table, mode: 'exact', backend: opts.backend, cwd: opts.cwd });
    files.push(r.path);
  }
  const r = await exportModel({ cfg, run: distilled.id, embeddings: files, out: repo, name, backend: opts.backend, cwd: opts.cwd });
  const base = resolveRun(cfg.artifactsDir, dm.base_run, { kind: 'train', cwd: opts.cwd });
  const drift = driftReport(Graph.load((await buildGraph(cfg)).dir), readModelJson<FeatureSpec>(base.dir, 'features.json'));
  if (!drift.ok) warn(`refresh: ${drift.features.filter((f) => f.drifted).length} feature(s) drifted above PSI ${drift.threshold} (max ${drift.max_psi}); run \`gnnctl check --config …\` and consider retraining`);
  return {
    model: name,
    version: r.version,
    previous_version: previous,
    dir: r.dir,
    distilled_run: distilled.id,
    base_run: dm.base_run,
    embedding_anchor: r.embedding_anchor,
    embedding_rows: r.embedding_rows,
    drift,
    seconds: Math.round((performance.now() - t0) / 10) / 100,
  };
}

export function latestVersion(modelDir: string): number | null {
  if (!existsSync(modelDir)) return null;
  const v = readdirSync(modelDir)
    .filter((d) => /^\d+$/.test(d) && existsSync(join(modelDir, d, 'manifest.json')))
    .map(Number);
  return v.length ? Math.max(...v) : null;
}
