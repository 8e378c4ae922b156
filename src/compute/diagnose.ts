/**
 * What `gnnctl doctor` checks: the machine, Node, the tensor backend (chosen by `selectBackend`, with a
 * short matmul probe), DuckDB and onnxruntime-node. Each native dependency is imported lazily and checked
 * by doing a small real thing with it (a `select version()`, a one-node ONNX session), so a broken install
 * shows up as a problem with its message instead of a crash, and the other checks still run.
 *
 * `ok` is false when something gnnctl needs does not work: Node older than the `engines` range, DuckDB or
 * onnxruntime-node failing, an explicit `--backend` request that cannot be met, or `auto` falling back to
 * the slow cpu backend.
 */
import { readFileSync } from 'node:fs';
import os from 'node:os';
import { OnnxGraphBuilder } from '../artifacts/onnx/index.js';
import { GnnctlError } from '../core/errors.js';
import { VERSION } from '../core/version.js';
import { selectBackend, type BackendInfo, type BackendRequest } from './backend.js';
import { probeMatmul, type MatmulProbe } from './probe.js';

export interface Diagnosis {
  ok: boolean;
  /** Each problem says what is wrong and what to do. Empty when `ok`. */
  problems: string[];
  gnnctl: { version: string };
  node: { version: string; required: string; ok: boolean };
  platform: { os: string; arch: string; release: string };
  cpu: { model: string; cores: number };
  memory: { total_bytes: number; free_bytes: number };
  backend: BackendInfo & { matmul: MatmulProbe };
  duckdb: { ok: boolean; version?: string; error?: string };
  onnxruntime: { ok: boolean; version?: string; session?: string; error?: string };
}

export interface DiagnoseOptions {
  backend?: BackendRequest;
  /** Wall-clock budget of the matmul probe (default 0.2 s). */
  probeSeconds?: number;
}

export async function diagnose(options: DiagnoseOptions = {}): Promise<Diagnosis> {
  const problems: string[] = [];

  const required = enginesNode();
  const nodeOk = satisfiesMin(process.versions.node, required);
  if (!nodeOk) {
    problems.push(`Node ${process.version} does not satisfy gnnctl's engines requirement (node ${required}): install Node 20.19 or newer`);
  }

  const requested = options.backend ?? 'auto';
  let info: BackendInfo;
  try {
    info = await selectBackend(requested);
  } catch (e) {
    if (!(e instanceof GnnctlError)) throw e;
    problems.push(`${e.describe()}\n  (doctor checked with --backend auto instead)`);
    info = await selectBackend('auto');
  }
  if (info.name === 'cpu' && requested !== 'cpu') {
    const wasm = info.reasons.find((r) => r.backend === '@tensorflow/tfjs-backend-wasm');
    problems.push(`only the slow cpu backend could start (wasm: ${wasm?.why ?? 'unknown'}); reinstall dependencies with \`npm ci\``);
  }
  const matmul = probeMatmul({ seconds: options.probeSeconds ?? 0.2 });

  const duckdb = await checkDuckdb();
  if (!duckdb.ok) problems.push(`DuckDB (@duckdb/node-api) does not work: ${duckdb.error}; reinstall dependencies with \`npm ci\``);
  const onnxruntime = await checkOnnxRuntime();
  if (!onnxruntime.ok) {
    problems.push(
      `onnxruntime-node does not work: ${onnxruntime.error}; reinstall it with \`npm ci\` (package.json's allowScripts skips onnxruntime-node's CUDA download; see docs/install.md)`,
    );
  }

  const cpus = os.cpus();
  return {
    ok: problems.length === 0,
    problems,
    gnnctl: { version: VERSION },
    node: { version: process.version, required, ok: nodeOk },
    platform: { os: process.platform, arch: process.arch, release: os.release() },
    cpu: { model: cpus[0]?.model.trim() ?? 'unknown', cores: os.availableParallelism() },
    memory: { total_bytes: os.totalmem(), free_bytes: os.freemem() },
    backend: { ...info, matmul },
    duckdb,
    onnxruntime,
  };
}

/** The `engines.node` range from gnnctl's package.json (same relative path from `src/` and `dist/`). */
function enginesNode(): string {
  const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { engines?: { node?: string } };
  return pkg.engines?.node ?? '>=20.19';
}

/** `version` (e.g. `20.20.2`) against a `>=X.Y[.Z]` range; other range forms are not used by gnnctl. */
export function satisfiesMin(version: string, range: string): boolean {
  const m = /^>=\s*(\d+)(?:\.(\d+))?(?:\.(\d+))?$/.exec(range.trim());
  if (!m) return true;
  const want = [Number(m[1]), Number(m[2] ?? 0), Number(m[3] ?? 0)];
  const have = version.replace(/^v/, '').split('.').map((p) => Number.parseInt(p, 10) || 0);
  for (let i = 0; i < 3; i++) {
    if ((have[i] ?? 0) !== want[i]) return (have[i] ?? 0) > want[i]!;
  }
  return true;
}

async function checkDuckdb(): Promise<Diagnosis['duckdb']> {
  try {
    const { DuckDBInstance } = await import('@duckdb/node-api');
    const instance = await DuckDBInstance.create(':memory:');
    try {
      const connection = await instance.connect();
      try {
        const reader = await connection.runAndReadAll('select version() as v');
        return { ok: true, version: String(reader.getRowObjects()[0]?.v) };
      } finally {
        connection.closeSync();
      }
    } finally {
      instance.closeSync();
    }
  } catch (e) {
    return { ok: false, error: firstLine(e) };
  }
}

/** Loads onnxruntime-node and runs a one-node model (`c = a + b`) built with the ONNX writer (artifacts/onnx). */
async function checkOnnxRuntime(): Promise<Diagnosis['onnxruntime']> {
  let version: string | undefined;
  try {
    const ort = await import('onnxruntime-node');
    version = ort.env.versions?.node ?? ort.env.versions?.common;
    const g = new OnnxGraphBuilder({ graphName: 'add', producerName: 'gnnctl doctor' });
    g.addNode('Add', [g.addInput('a', 'FLOAT', [2]), g.addInput('b', 'FLOAT', [2])], ['c']);
    g.addOutput('c', 'FLOAT', [2]);
    const session = await ort.InferenceSession.create(g.toBytes());
    try {
      const out = await session.run({
        a: new ort.Tensor('float32', Float32Array.from([1, 2]), [2]),
        b: new ort.Tensor('float32', Float32Array.from([3, 4]), [2]),
      });
      const c = Array.from(out.c?.data as Float32Array);
      if (c[0] !== 4 || c[1] !== 6) return { ok: false, version, error: `a test session computed [1,2]+[3,4] = [${c}]` };
      return { ok: true, version, session: 'ok' };
    } finally {
      await session.release();
    }
  } catch (e) {
    return { ok: false, version, error: firstLine(e) };
  }
}

function firstLine(e: unknown): string {
  const msg = e instanceof Error ? e.message : String(e);
  return msg.split('\n')[0]!.trim();
}
