/**
 * Triton's statistics extension and Triton-named metrics, read from a real server after a known mix of
 * requests: counts must add up the way Triton defines them.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ModelStatJson } from '../../src/serve/model_stats.js';
import { get, infer, inferBody, KEY_INPUT, MODEL, startTestServer, tempRepo, txRequest, type TempRepo, type TestServer } from './helpers.js';

let repo: TempRepo;
let server: TestServer;
let url: string;
const anchor = '2026-01-02T03:04:05Z';
const SINGLE = 7;

beforeAll(async () => {
  repo = tempRepo({ maxBatchSize: 8, maxQueueDelayUs: 2000 });
  // What `gnnctl export` writes beside the model: the embeddings' anchor time.
  writeFileSync(join(repo.root, MODEL, '1', 'manifest.json'), JSON.stringify({ kind: 'export', embeddings: [{ table: 'customers', anchor_time: anchor, rows: 1000 }] }));
  server = await startTestServer(repo.root);
  url = server.url;
  // 7 requests of one row (concurrent, so some share a batch), one of two rows, one malformed.
  const ok = await Promise.all(Array.from({ length: SINGLE }, (_, i) => infer(url, inferBody(txRequest(i, i % 3)))));
  expect(ok.every((r) => r.status === 200)).toBe(true);
  const two = inferBody(txRequest(9, 1)).replaceAll('"shape":[1,', '"shape":[2,').replace(/"data":\[([^\]]*)\]/g, '"data":[$1,$1]');
  expect((await infer(url, two)).status).toBe(200);
  const bad = inferBody(txRequest(1, 1)).replace(`"name":"${KEY_INPUT}","datatype":"BYTES"`, `"name":"${KEY_INPUT}","datatype":"INT64"`);
  expect((await infer(url, bad)).status).toBe(400);
});

afterAll(async () => {
  await server?.stop();
  repo?.cleanup();
});

describe('GET /v2/models[/{m}[/versions/{v}]]/stats', () => {
  it('counts rows, requests, executions and durations as Triton defines them', async () => {
    const r = await get(url, `/v2/models/${MODEL}/stats`);
    expect(r.status).toBe(200);
    const { model_stats } = r.json() as { model_stats: ModelStatJson[] };
    expect(model_stats).toHaveLength(1);
    const s = model_stats[0]!;
    expect(s).toMatchObject({ name: MODEL, version: '1', inference_count: SINGLE + 2 });
    expect(s.last_inference).toBeGreaterThan(Date.now() - 60_000);
    const st = s.inference_stats;
    expect(st.success.count).toBe(SINGLE + 1);
    expect(st.fail.count).toBe(1);
    expect(st.success.ns).toBeGreaterThan(0);
    expect(st.queue.count).toBe(SINGLE + 1);
    for (const k of ['compute_input', 'compute_infer', 'compute_output'] as const) expect(st[k].count).toBe(SINGLE + 1);
    expect(st.cache_hit).toEqual({ count: 0, ns: 0 });
    expect(s.execution_count).toBeGreaterThanOrEqual(1);
    expect(s.execution_count).toBeLessThanOrEqual(SINGLE + 1);
    // Batch statistics: one entry per executed size, adding up to the executions and the rows.
    const execs = s.batch_stats.reduce((n, b) => n + b.compute_infer.count, 0);
    const rows = s.batch_stats.reduce((n, b) => n + b.batch_size * b.compute_infer.count, 0);
    expect([execs, rows]).toEqual([s.execution_count, SINGLE + 2]);
  });

  it('for every model, one version, and 404 for unknown ones', async () => {
    const all = (await get(url, '/v2/models/stats')).json() as { model_stats: ModelStatJson[] };
    expect(all.model_stats.map((m) => [m.name, m.version])).toEqual([[MODEL, '1']]);
    const one = (await get(url, `/v2/models/${MODEL}/versions/1/stats`)).json() as { model_stats: ModelStatJson[] };
    expect(one.model_stats[0]!.inference_count).toBe(SINGLE + 2);
    expect((await get(url, `/v2/models/${MODEL}/versions/4/stats`)).status).toBe(404);
    const unknown = await get(url, '/v2/models/nope/stats');
    expect([unknown.status, (unknown.json() as { error: string }).error]).toEqual([404, expect.stringMatching(/unknown model "nope"/)]);
    expect((await get(url, `/v2/models/${MODEL}/stats`, 'POST')).status).toBe(405);
  });
});

describe('GET /metrics', () => {
  let text: string;
  beforeAll(async () => {
    text = (await get(url, '/metrics')).text;
  });
  const value = (re: RegExp): number => {
    const m = re.exec(text);
    if (!m) throw new Error(`no sample matches ${re}`);
    return Number(m[1]);
  };

  it("has Triton's per-version counters, equal to the statistics", async () => {
    const s = ((await get(url, `/v2/models/${MODEL}/stats`)).json() as { model_stats: ModelStatJson[] }).model_stats[0]!;
    const lbl = `\\{model="${MODEL}",version="1"\\}`;
    expect(value(new RegExp(`^nv_inference_request_success${lbl} (\\d+)$`, 'm'))).toBe(SINGLE + 1);
    expect(value(new RegExp(`^nv_inference_request_failure\\{model="${MODEL}",reason="OTHER",version="1"\\} (\\d+)$`, 'm'))).toBe(1);
    expect(value(new RegExp(`^nv_inference_count${lbl} (\\d+)$`, 'm'))).toBe(SINGLE + 2);
    expect(value(new RegExp(`^nv_inference_exec_count${lbl} (\\d+)$`, 'm'))).toBe(s.execution_count);
    for (const d of ['request', 'queue', 'compute_input', 'compute_infer', 'compute_output']) {
      expect(value(new RegExp(`^nv_inference_${d}_duration_us${lbl} (\\d+)$`, 'm'))).toBeGreaterThanOrEqual(0);
    }
    expect(value(new RegExp(`^nv_inference_request_duration_us${lbl} (\\d+)$`, 'm'))).toBe(Math.round(s.inference_stats.success.ns / 1000));
    expect(text).toMatch(/^# TYPE nv_inference_request_success counter$/m);
    // Nothing waits in the batcher between requests.
    expect(value(new RegExp(`^nv_inference_pending_request_count${lbl} (\\d+)$`, 'm'))).toBe(0);
  });

  it('has process metrics', () => {
    expect(value(/^process_cpu_seconds_total ([\d.e+-]+)$/m)).toBeGreaterThan(0);
    expect(value(/^process_resident_memory_bytes (\d+)$/m)).toBeGreaterThan(1e6);
    expect(Math.abs(value(/^process_start_time_seconds ([\d.]+)$/m) - (Date.now() / 1000 - process.uptime()))).toBeLessThan(5);
    if (process.platform === 'linux') {
      expect(value(/^process_open_fds (\d+)$/m)).toBeGreaterThan(2);
      expect(value(/^process_virtual_memory_bytes (\d+)$/m)).toBeGreaterThan(1e6);
    }
  });

  it('has the embedding age of the served version', () => {
    const age = value(new RegExp(`^gnnctl_embedding_age_seconds\\{model="${MODEL}",version="1",table="customers"\\} ([\\d.e+-]+)$`, 'm'));
    expect(Math.abs(age - (Date.now() - Date.parse(anchor)) / 1000)).toBeLessThan(60);
    expect(value(/^gnnctl_embedding_anchor_timestamp_seconds\{[^}]*\} ([\d.e+]+)$/m)).toBe(Date.parse(anchor) / 1000);
  });

  it('uses no reserved label on gauges (quantile belongs to summaries), and every sample has a TYPE', () => {
    expect(text).not.toMatch(/quantile=/);
    expect(text).toMatch(/^gnnctl_event_loop_delay_p99_seconds [\d.e+-]+$/m);
    const typed = new Set([...text.matchAll(/^# TYPE (\S+) (\w+)$/gm)].map((m) => m[1]));
    for (const line of text.split('\n')) {
      if (line === '' || line.startsWith('#')) continue;
      const name = /^[a-zA-Z_:][a-zA-Z0-9_:]*/.exec(line)![0];
      expect(typed.has(name) || typed.has(name.replace(/_(bucket|sum|count)$/, ''))).toBe(true);
    }
  });
});
