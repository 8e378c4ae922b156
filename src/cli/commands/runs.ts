import { loadConfig } from '../../config/load.js';
import { listRuns } from '../../artifacts/run_store.js';
import { join, resolve } from 'node:path';
import type { CommandOutput } from '../run.js';

export interface RunsOptions {
  config?: string;
  artifacts?: string;
  cwd?: string;
}

export async function runsListCommand(opts: RunsOptions): Promise<CommandOutput> {
  const artifacts = opts.config
    ? loadConfig(opts.config, { artifacts: opts.artifacts, cwd: opts.cwd }).artifactsDir
    : resolve(opts.cwd ?? process.cwd(), opts.artifacts ?? 'artifacts');
  const runs = listRuns(artifacts).map((r) => {
    const m = r.manifest.metrics as { test?: Record<string, number> } | undefined;
    const test = m?.test ?? {};
    const metric = 'auroc' in test ? 'auroc' : 'mae' in test ? 'mae' : 'map_at_k' in test ? 'map_at_k' : null;
    return {
      id: r.id,
      kind: r.manifest.kind,
      task: r.manifest.task,
      status: r.manifest.status,
      metric,
      value: metric ? test[metric] : null,
      created: r.manifest.created_at,
      dir: r.dir,
    };
  });
  const lines = runs.length
    ? [
        `${'run'.padEnd(36)} ${'kind'.padEnd(8)} ${'task'.padEnd(12)} ${'status'.padEnd(11)} ${'test metric'.padEnd(14)} created`,
        ...runs.map((r) => `${r.id.padEnd(36)} ${r.kind.padEnd(8)} ${r.task.padEnd(12)} ${r.status.padEnd(11)} ${(r.metric ? `${r.metric} ${r.value?.toFixed(4)}` : '-').padEnd(14)} ${r.created.slice(0, 19).replace('T', ' ')}`),
      ]
    : [`no runs in ${join(artifacts, 'runs')}`];
  return { result: { runs }, text: lines.join('\n') };
}
