import { parseBackendRequest } from '../../compute/backend.js';
import { loadConfig } from '../../config/load.js';
import { exportModel } from '../../export/export.js';
import { exportTrainRun } from '../../export/tree_export.js';
import type { CommandOutput } from '../run.js';
import { choiceFlag, externalDataFlag, intFlag, optional } from '../flags.js';

export interface ExportCommandOptions {
  config: string;
  run: string;
  embeddings?: string[];
  out?: string;
  name?: string;
  version?: string;
  quantize?: string;
  externalData?: string | number;
  embeddingsFromStore?: boolean;
  backend?: string;
  artifacts?: string;
  cwd?: string;
}

export async function exportCommand(opts: ExportCommandOptions): Promise<CommandOutput> {
  const cfg = loadConfig(opts.config, { artifacts: opts.artifacts, cwd: opts.cwd });
  // Triton version folders are positive integers.
  const version = optional(intFlag('--version', 1), opts.version);
  // A train run: its trees (model.kind gbdt) export over request features; its GNN or hybrid is refused with how it is served.
  const trees = await exportTrainRun({ cfg, run: opts.run, out: opts.out, name: opts.name, version, cwd: opts.cwd, studentFlags: { '--embeddings': opts.embeddings, '--quantize': opts.quantize, '--external-data': opts.externalData, '--embeddings-from-store': opts.embeddingsFromStore } });
  if (trees) return trees;
  const quantize = optional(choiceFlag('--quantize', ['none', 'int8'] as const), opts.quantize);
  const externalData = optional(externalDataFlag('--external-data'), opts.externalData);
  const r = await exportModel({ cfg, run: opts.run, embeddings: opts.embeddings, out: opts.out, name: opts.name, version, quantize, externalData, embeddingsFromStore: Boolean(opts.embeddingsFromStore), backend: parseBackendRequest(opts.backend), cwd: opts.cwd });
  const q = r.quantization;
  const text = [
    `exported ${r.model} version ${r.version} in ${r.seconds}s: ${r.dir}`,
    ...(r.online_store ? [`  embeddings from the online store: ${r.online_store.map((t) => `${t.input} ← ${t.table} (key ${t.key})`).join(', ')}; serve with gnnctl serve --online-store redis://…`] : []),
    `  model.onnx ${(r.files.model_onnx_bytes / 2 ** 20).toFixed(1)} MiB${r.files.external_data_bytes ? ` + model.onnx.data ${(r.files.external_data_bytes / 2 ** 20).toFixed(1)} MiB (external: ${r.files.external_tensors.join(', ')})` : ''}; embeddings ${Object.entries(r.embedding_rows).map(([t, n]) => `${t} ${n.toLocaleString('en-US')} rows @ ${r.embedding_anchor[t]}`).join(', ')}`,
    ...(q
      ? [
          `  ${q.mode} entity tables: ${(q.embedding_table_bytes.quantized / 2 ** 20).toFixed(1)} MiB (${q.size_ratio}x smaller than FLOAT32); on ${q.test_rows} test rows max |Δ score| ${q.max_abs_diff.toExponential(2)} (tolerance ${q.tolerance}), ${q.metric} ${q.fp32} → ${q.quantized} (Δ ${q.delta})`,
        ]
      : []),
    r.parity ? `  parity with the trained model${q ? ' (the same graph in FLOAT32; the int8 model is held to the tolerance above)' : ''} on ${r.parity.examples} rows: max |Δ| ${r.parity.max_abs_diff.toExponential(2)}, batch-1 vs batch |Δ| ${r.parity.max_batch_diff.toExponential(2)}` : '  parity check skipped',
    ...(r.parity?.latency_ms ? [`  onnxruntime batch-1 latency (1 thread): p50 ${r.parity.latency_ms.p50} ms, p99 ${r.parity.latency_ms.p99} ms over ${r.parity.latency_ms.runs} requests`] : []),
  ].join('\n');
  return { result: r, text };
}
