/**
 * The pipeline's last stage: one real request against the exported model through `gnnctl serve`
 * (in-process, on an ephemeral port), built from the model's own metadata, answered with a finite value.
 */
import type { Config } from '../config/load.js';
import { ArtifactError } from '../core/errors.js';

export interface SmokeResult {
  url: string;
  status: number;
  output: string;
  value: number;
  ms: number;
}

export async function smokeRequest(_cfg: Config, repository: string, model: string): Promise<SmokeResult> {
  const { startServer } = await import('../serve/server.js');
  const server = await startServer({ modelRepository: repository, host: '127.0.0.1', port: 0, pollIntervalMs: 0 });
  try {
    const base = server.url;
    const meta = (await (await fetch(`${base}/v2/models/${encodeURIComponent(model)}`)).json()) as {
      inputs: { name: string; datatype: string; shape: number[] }[];
      outputs: { name: string }[];
    };
    const now = BigInt(Date.now()) * 1_000_000n;
    const inputs = meta.inputs.map((i) => {
      const seq = i.shape.length === 3;
      const shape = seq ? [1, 3, 1] : [1, 1];
      const n = seq ? 3 : 1;
      const data = Array.from({ length: n }, (_, k) => {
        if (i.datatype === 'BYTES') return `smoke-${k}`;
        if (i.datatype === 'INT64') return /time|dat|date/.test(i.name) ? Number(now - BigInt(k + 1) * 86_400_000_000_000n) : 1;
        return 0.05;
      });
      return { name: i.name, datatype: i.datatype, shape, data };
    });
    const t = performance.now();
    const res = await fetch(`${base}/v2/models/${encodeURIComponent(model)}/infer`, { method: 'POST', body: JSON.stringify({ inputs }), headers: { 'content-type': 'application/json' } });
    const ms = performance.now() - t;
    const body = (await res.json()) as { outputs?: { name: string; data: number[] }[]; error?: string };
    const out = body.outputs?.[0];
    if (res.status !== 200 || !out || !Number.isFinite(out.data[0])) {
      throw new ArtifactError(`the serve smoke request failed: HTTP ${res.status} ${body.error ?? JSON.stringify(body).slice(0, 200)}`, { where: `${base}/v2/models/${model}/infer` });
    }
    return { url: `${base}/v2/models/${model}/infer`, status: res.status, output: out.name, value: out.data[0]!, ms };
  } finally {
    await server.stop();
  }
}
