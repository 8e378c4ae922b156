import { loadConfig } from '../../config/load.js';
import { isoSeconds } from '../../core/duration.js';
import { buildGraph } from '../../graph/build.js';
import { formatSummary, summarizeGraph } from '../../graph/inspect.js';
import type { CommandOutput } from '../run.js';

export interface GraphOptions {
  config: string;
  artifacts?: string;
  force?: boolean;
  /** fit statistics as `train --task` does (graph/fit_until.ts) */
  task?: string;
  cwd?: string;
}

export async function graphBuildCommand(opts: GraphOptions): Promise<CommandOutput> {
  const cfg = loadConfig(opts.config, { artifacts: opts.artifacts, cwd: opts.cwd });
  const r = await buildGraph(cfg, { force: opts.force, fit: opts.task ? { task: opts.task } : undefined });
  const m = r.manifest;
  const result = {
    dir: r.dir,
    fingerprint: m.fingerprint,
    schema_fingerprint: m.schema_fingerprint,
    cached: r.cached,
    fit_until: m.fit_until === null ? null : isoSeconds(m.fit_until),
    seconds: Math.round(r.seconds * 100) / 100,
    tables: Object.fromEntries(Object.entries(m.tables).map(([k, t]) => [k, t.rows])),
    edges: Object.fromEntries(m.edges.map((e) => [e.name, e.count])),
    timings: m.timings,
  };
  const text = [
    `graph ${r.cached ? 'reused (cached)' : 'built'} in ${result.seconds}s: ${r.dir}`,
    ...Object.entries(result.tables).map(([k, n]) => `  ${k}: ${n.toLocaleString('en-US')} nodes`),
    ...Object.entries(result.edges).map(([k, n]) => `  ${k}: ${n.toLocaleString('en-US')} edges`),
  ].join('\n');
  return { result, text };
}

export async function graphInspectCommand(opts: GraphOptions): Promise<CommandOutput> {
  const cfg = loadConfig(opts.config, { artifacts: opts.artifacts, cwd: opts.cwd });
  const r = await buildGraph(cfg, { fit: opts.task ? { task: opts.task } : undefined });
  const summary = summarizeGraph(r.dir, r.manifest);
  return { result: summary, text: formatSummary(summary) };
}
