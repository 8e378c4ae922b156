import { parseBackendRequest } from '../../compute/backend.js';
import { loadConfig } from '../../config/load.js';
import { exportModel } from '../../export/export.js';
import type { CommandOutput } from '../run.js';
import { intFlag, optional } from '../flags.js';

export interface ExportCommandOptions {
  config: string;
  run: string;
  embeddings?: string[];
  out?: string;
  name?: string;
  version?: string;
  backend?: string;
  artifacts?: string;
  cwd?: string;
}

export async function exportCommand(opts: ExportCommandOptions): Promise<CommandOutput> {
  const cfg = loadConfig(opts.config, { artifacts: opts.artifacts, cwd: opts.cwd });
  // Triton version folders are positive integers.
  const version = optional(intFlag('--version', 1), opts.version);
  const r = await exportModel({ cfg, run: opts.run, embeddings: opts.embeddings, out: opts.out, name: opts.name, version, backend: parseBackendRequest(opts.backend), cwd: opts.cwd });
  const text = [
    `exported ${r.model} version ${r.version} in ${r.seconds}s: ${r.dir}`,
    `  model.onnx ${(r.model_bytes / 2 ** 20).toFixed(1)} MiB; embeddings ${Object.entries(r.embedding_rows).map(([t, n]) => `${t} ${n.toLocaleString('en-US')} rows @ ${r.embedding_anchor[t]}`).join(', ')}`,
    r.parity ? `  parity with the trained model on ${r.parity.examples} rows: max |Δ| ${r.parity.max_abs_diff.toExponential(2)}, batch-1 vs batch |Δ| ${r.parity.max_batch_diff.toExponential(2)}` : '  parity check skipped',
    ...(r.parity?.latency_ms ? [`  onnxruntime batch-1 latency (1 thread): p50 ${r.parity.latency_ms.p50} ms, p99 ${r.parity.latency_ms.p99} ms over ${r.parity.latency_ms.runs} requests`] : []),
  ].join('\n');
  return { result: r, text };
}
