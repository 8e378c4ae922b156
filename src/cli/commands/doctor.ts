/**
 * `gnnctl doctor`: what gnnctl will run on here, and whether its native pieces work. The checks live in
 * `compute/diagnose.ts`; this file parses the options and lays the result out as a table.
 *
 * It exits 0 even when it finds problems (they are in `ok` / `problems`, and in the text), so a CI step
 * can print the whole report and decide on `ok` itself.
 */
import type { CommandOutput } from '../run.js';
import { parseBackendRequest } from '../../compute/backend.js';
import { diagnose, type Diagnosis } from '../../compute/diagnose.js';

/** As commander passes them (so the declaration in main.ts needs no cast); checked here. */
export interface DoctorOptions {
  json?: boolean;
  /** `--backend`: auto | tensorflow | wasm | cpu (default auto). */
  backend?: unknown;
}

export async function doctorCommand(opts: DoctorOptions): Promise<CommandOutput<Diagnosis>> {
  const backend = parseBackendRequest(opts.backend === undefined ? undefined : String(opts.backend));
  const result = await diagnose({ backend });
  return { result, text: formatDiagnosis(result) };
}

export function formatDiagnosis(d: Diagnosis): string {
  const b = d.backend;
  const backendLine = [
    `${b.name} (requested ${b.requested})`,
    b.simd === undefined ? undefined : `SIMD ${b.simd ? 'on' : 'off'}`,
    b.threads === undefined ? undefined : `${b.threads} thread${b.threads === 1 ? '' : 's'}`,
    b.matmul_library === undefined ? undefined : `products in ${b.matmul_library === 'onnxruntime' ? "onnxruntime's MLAS" : 'XNNPACK'}`,
  ]
    .filter((s) => s !== undefined)
    .join(', ');
  const m = b.matmul;
  const summary: [string, string][] = [
    ['gnnctl', d.gnnctl.version],
    ['node', `${d.node.version} (requires ${d.node.required}: ${d.node.ok ? 'ok' : 'TOO OLD'})`],
    ['platform', `${d.platform.os} ${d.platform.arch} (${d.platform.release})`],
    ['cpu', `${d.cpu.model}, ${d.cpu.cores} core${d.cpu.cores === 1 ? '' : 's'}`],
    ['memory', `${gib(d.memory.free_bytes)} free of ${gib(d.memory.total_bytes)}`],
    ['tfjs', b.tfjs_version],
    ['backend', backendLine],
    ['matmul', `${m.gflops.toFixed(1)} GFLOP/s (${m.m}×${m.k} · ${m.k}×${m.n}, ${m.iterations} runs in ${m.seconds.toFixed(2)} s)`],
  ];
  if (b.added_kernels && b.added_kernels.length > 0) summary.push(['added kernels', b.added_kernels.join(', ')]);
  if (b.replaced_kernels && b.replaced_kernels.length > 0) summary.push(['faster kernels', b.replaced_kernels.join(', ')]);
  summary.push(['duckdb', d.duckdb.ok ? d.duckdb.version ?? '?' : `FAILED: ${d.duckdb.error}`]);
  summary.push([
    'onnxruntime',
    d.onnxruntime.ok ? `${d.onnxruntime.version ?? '?'} (test session: ${d.onnxruntime.session})` : `FAILED: ${d.onnxruntime.error}`,
  ]);

  const lines = [`gnnctl doctor: ${d.ok ? 'ok' : `${d.problems.length} problem${d.problems.length === 1 ? '' : 's'}`}`, ''];
  lines.push(...table(summary.map(([k, v]) => [k, v])));
  lines.push('', 'tensor backends (in order of preference)');
  lines.push(...table(b.reasons.map((r) => [r.backend, r.status, r.why])));
  if (d.problems.length > 0) {
    lines.push('', 'problems');
    for (const p of d.problems) lines.push(`  - ${p.replace(/\n/g, '\n    ')}`);
  }
  return `${lines.join('\n')}\n`;
}

/** Rows as left-aligned columns, two spaces apart, indented by two; the last column is not padded. */
function table(rows: string[][]): string[] {
  const widths: number[] = [];
  for (const row of rows) row.forEach((cell, i) => (widths[i] = Math.max(widths[i] ?? 0, cell.length)));
  return rows.map((row) => `  ${row.map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd(widths[i]!))).join('  ')}`);
}

function gib(bytes: number): string {
  return `${(bytes / 2 ** 30).toFixed(1)} GiB`;
}
