import { loadConfig } from '../../config/load.js';
import { isoSeconds } from '../../core/duration.js';
import { buildGraph } from '../../graph/build.js';
import { formatFeatureListing, formatSummary, summarizeGraph } from '../../graph/inspect.js';
import { treeFeatureListing } from '../../train/tree_features.js';
import type { CommandOutput } from '../run.js';

export interface GraphOptions {
  config: string;
  artifacts?: string;
  force?: boolean;
  /** fit statistics as `train --task` does (graph/fit_until.ts) */
  task?: string;
  /** inspect: list the tree models' inputs (train/tree_features.ts) */
  features?: boolean;
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
  if (!opts.features) return { result: summary, text: formatSummary(summary) };
  // Trees train for binary and regression tasks; a ranking task's re-ranker has its own inputs.
  const tasks = opts.task ? [cfg.taskSpecs[opts.task]!] : Object.values(cfg.taskSpecs).filter((t) => t.query.taskType !== 'ranking');
  const features = tasks.map((t) => treeFeatureListing(r.manifest, t));
  return { result: { ...summary, features }, text: [formatSummary(summary), ...features.map(formatFeatureListing)].join('\n\n') };
}
