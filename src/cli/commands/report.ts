import { statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { loadConfig } from '../../config/load.js';
import { renderReport } from '../../report/index.js';
import { resolveRun } from '../../artifacts/run_store.js';
import { writeFileAtomic } from '../../core/atomic.js';
import { fmtBytes } from '../../report/format.js';
import type { CommandOutput } from '../run.js';

export interface ReportOptions {
  /** run id, run folder, or `latest` / `latest:<task>` */
  run: string;
  /** output file (default: `<run dir>/report.html`) */
  out?: string;
  config?: string;
  artifacts?: string;
  json?: boolean;
  cwd?: string;
}

export interface ReportResult {
  path: string;
  run_id: string;
  kind: 'train' | 'distill' | 'anomaly';
  bytes: number;
}

/** `gnnctl report RUN [--out FILE]`: writes the run's self-contained HTML report, atomically. */
export async function reportCommand(opts: ReportOptions): Promise<CommandOutput<ReportResult>> {
  const cwd = opts.cwd ?? process.cwd();
  const artifactsDir = opts.config ? loadConfig(opts.config, { artifacts: opts.artifacts, cwd }).artifactsDir : resolve(cwd, opts.artifacts ?? 'artifacts');
  const run = resolveRun(artifactsDir, opts.run, { cwd });
  const report = renderReport(run.dir, { artifactsDir });
  const path = opts.out ? resolve(cwd, opts.out) : join(run.dir, 'report.html');
  writeFileAtomic(path, report.html);
  const bytes = statSync(path).size;
  return {
    result: { path, run_id: report.runId, kind: report.kind, bytes },
    text: `wrote the ${report.kind} report of ${report.runId} to ${path} (${fmtBytes(bytes).replace('\u00a0', ' ')})`,
  };
}
