import { loadConfig } from '../../config/load.js';
import { configReference } from '../../config/reference.js';
import type { CommandOutput } from '../run.js';

export async function configReferenceCommand(): Promise<CommandOutput> {
  const md = configReference();
  return { result: { markdown: md }, text: md };
}

export async function configValidateCommand(opts: { config: string; cwd?: string }): Promise<CommandOutput> {
  const cfg = loadConfig(opts.config, { cwd: opts.cwd });
  const result = { ok: true, path: cfg.path, tables: Object.keys(cfg.tableSpecs), tasks: Object.fromEntries(Object.entries(cfg.taskSpecs).map(([k, t]) => [k, t.query.taskType])), distillation: Boolean(cfg.distillation) };
  return { result, text: `${cfg.path}: valid (${result.tables.length} tables, tasks: ${Object.entries(result.tasks).map(([k, v]) => `${k} (${v})`).join(', ') || 'none'})` };
}
