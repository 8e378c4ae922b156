/**
 * `gnnctl anomaly fit | score | watch` end to end on a tiny generated mesh, through the real binary
 * (--json, bad values, exit codes) and in process (watch's /metrics, Alertmanager posts, restarts).
 */
import { appendFileSync, cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DuckDBInstance } from '@duckdb/node-api';
import { generateMesh, type MeshResult } from '../../src/datasets/mesh/generate.js';
import { loadConfig } from '../../src/config/load.js';
import { watchAnomaly } from '../../src/anomaly/watch.js';
import type { WindowState } from '../../src/anomaly/detector.js';
import { setQuiet } from '../../src/core/log.js';
import { gnnctlJson } from './gnnctl_json.js';

const root = mkdtempSync(join(tmpdir(), 'gnnctl-anomaly-'));
const artifacts = join(root, 'artifacts');
let mesh: MeshResult;
let config: string;
let runId: string;

const EXTRA = `  warmup_snapshots: 8
  window: 3
  epochs: 2
  threshold_window: 50
  hidden: 8
  embedding_dim: 8
`;

function gnnctl(args: string[]): { status: number | null; json: Record<string, unknown>; stderr: string } {
  return gnnctlJson(args, root);
}

async function query(sql: string): Promise<Record<string, unknown>[]> {
  const db = await DuckDBInstance.create(':memory:');
  const conn = await db.connect();
  try {
    await conn.run("SET TimeZone = 'UTC'");
    return (await conn.runAndReadAll(sql)).getRowObjectsJS() as Record<string, unknown>[];
  } finally {
    conn.closeSync();
    db.closeSync();
  }
}

beforeAll(() => {
  setQuiet(true);
  mesh = generateMesh({ out: join(root, 'mesh'), services: 12, hours: 12, step: 600, seed: 5 });
  config = mesh.files.config;
  appendFileSync(config, EXTRA);
  const fit = gnnctl(['anomaly', 'fit', '-c', config, '--artifacts', artifacts]);
  expect(fit.status, fit.stderr).toBe(0);
  runId = String(fit.json.run_id);
});

afterAll(() => rmSync(root, { recursive: true, force: true }));

describe('anomaly fit', () => {
  it('writes a complete run folder atomically, with the statistics of the normal period', () => {
    const dir = join(artifacts, 'runs', runId);
    for (const f of ['manifest.json', 'state.json', 'model/tagae.onnx', 'model/weights.bin', 'model/weights.json', 'model/flat_weights.bin', 'model/feature_stats.json', 'model/baselines.json']) expect(existsSync(join(dir, f)), f).toBe(true);
    expect(readdirSync(join(artifacts, 'runs')).filter((f) => f.startsWith('.tmp-'))).toEqual([]);
    const m = JSON.parse(readFileSync(join(dir, 'manifest.json'), 'utf8'));
    expect(m.kind).toBe('anomaly');
    expect(m.status).toBe('complete');
    expect(JSON.parse(readFileSync(join(dir, 'metrics.json'), 'utf8')).threshold).toBe(m.metrics.threshold);
    expect(m.fit.until).toBe(mesh.normal_until);
    expect(m.fit.train_snapshots + m.fit.warmup_snapshots).toBe(36); // 6 normal hours of 10-minute snapshots
    expect(m.feature_columns).toContain('p99_latency_ms');
    expect(m.inputs.metrics[0]).toMatchObject({ path: mesh.files.metrics, sha256: expect.stringMatching(/^[0-9a-f]{64}$/) });
    const b = JSON.parse(readFileSync(join(dir, 'model', 'baselines.json'), 'utf8'));
    expect(b.warmup_scores).toHaveLength(8);
    expect(b.static.columns).toEqual(['error_rate', 'p50_latency_ms', 'p99_latency_ms']);
    // The ONNX scorer was held to the trained model before the run was written.
    expect(m.metrics.onnx_parity).toMatchObject({ snapshots: 24, tolerance: 1e-4 });
    expect(m.metrics.onnx_parity.max_abs_diff).toBeLessThanOrEqual(1e-4);
  });

  it.each([
    [['--until', 'yesterday'], 2, '--until'],
    [['--epochs', '0'], 2, '--epochs'],
    [['--from', '2026-01-05T05:00:00Z'], 3, 'anomaly.metrics'],
  ])('%j exits %i naming %s', (extra, code, where) => {
    const r = gnnctl(['anomaly', 'fit', '-c', config, '--artifacts', artifacts, ...extra]);
    expect(r.status).toBe(code);
    expect(`${r.json.where ?? ''} ${r.json.message}`).toContain(where);
  });

  it('--init-from fine-tunes: the run\'s weights as the start, its feature statistics kept, never refitted', () => {
    const r = gnnctl(['anomaly', 'fit', '-c', config, '--artifacts', artifacts, '--init-from', runId, '--epochs', '1', '--from', '2026-01-05T01:00:00Z']);
    expect(r.status, r.stderr).toBe(0);
    expect(r.json.init_from).toBe(runId);
    const stats = (id: string): string => readFileSync(join(artifacts, 'runs', id, 'model', 'feature_stats.json'), 'utf8');
    expect(stats(String(r.json.run_id))).toBe(stats(runId));
    const m = JSON.parse(readFileSync(join(artifacts, 'runs', String(r.json.run_id), 'manifest.json'), 'utf8'));
    expect(m.inputs.init_from).toBe(runId);
    const other = join(root, 'mesh', 'wider.yaml');
    writeFileSync(other, readFileSync(config, 'utf8').replace('  window: 3\n', '  window: 4\n'));
    const bad = gnnctl(['anomaly', 'fit', '-c', other, '--artifacts', artifacts, '--init-from', runId]);
    expect(bad.status).toBe(5);
    expect(String(bad.json.message)).toContain('window 3 vs 4');
  });

  it('names a feature column that does not exist', () => {
    const bad = join(root, 'mesh', 'bad.yaml');
    writeFileSync(bad, readFileSync(config, 'utf8').replace('metrics: { path: metrics.csv }', 'metrics: { path: metrics.csv, feature_columns: [cpu, cpu_seconds] }'));
    const r = gnnctl(['anomaly', 'fit', '-c', bad, '--artifacts', artifacts]);
    expect(r.status).toBe(3);
    expect(r.json.where).toBe('anomaly.metrics.feature_columns');
    expect(String(r.json.hint)).toContain('cpu');
  });
});

describe('anomaly score', () => {
  it('writes the Parquet scores and evaluates TAGAE against both baselines', async () => {
    const out = join(root, 'scores.parquet');
    const r = gnnctl(['anomaly', 'score', '-c', config, '--artifacts', artifacts, '--run', runId, '--out', out]);
    expect(r.status, r.stderr).toBe(0);
    expect(r.json.snapshots).toBe(36);
    const rows = await query(`SELECT * FROM '${out}' ORDER BY ts`);
    expect(rows).toHaveLength(36);
    const schema = await query(`SELECT column_name, column_type FROM (DESCRIBE SELECT * FROM '${out}')`);
    expect(schema.map((c) => [c.column_name, c.column_type])).toEqual([
      ['ts', 'TIMESTAMP WITH TIME ZONE'],
      ['score', 'DOUBLE'],
      ['threshold', 'DOUBLE'],
      ['alert', 'BOOLEAN'],
      ['top_services', 'VARCHAR[]'],
      ['top_edges', 'VARCHAR[]'],
      ['root_causes', 'VARCHAR[]'],
    ]);
    // the mesh's labelled fault lets fit choose the detector the alert column follows (score ≥ its fixed threshold; TAGAE's sliding τ is score > τ)
    expect(r.json.detector).toMatchObject({ source: 'fit', threshold: expect.any(Number) });
    for (const row of rows) {
      expect(row.alert).toBe(Number(row.score) >= Number(row.threshold));
      // every snapshot's root-cause ranking lists services of the mesh, most likely first
      expect((row.root_causes as string[]).length).toBe(5);
      expect(new Set(row.root_causes as string[]).size).toBe(5);
      expect((row.top_services as string[]).length).toBeLessThanOrEqual(5);
      if ((row.top_edges as string[]).length) expect((row.top_edges as string[])[0]).toMatch(/^[a-z]+-\d{3}(-v\d)?->[a-z]+-\d{3}(-v\d)?$/);
    }
    expect(rows.filter((row) => (row.top_services as string[]).length === 5).length).toBeGreaterThan(18);
    const ev = r.json.evaluation as Record<string, Record<string, unknown>>;
    expect(Number(ev.incidents)).toBeGreaterThan(0);
    for (const d of ['tagae', 'static', 'flat']) expect(ev[d]!.recall).not.toBeNull();
  });

  it('gives the same scores when rows dated after the scored period are appended (nothing is refitted)', async () => {
    const copy = join(root, 'mesh-future');
    cpSync(join(root, 'mesh'), copy, { recursive: true });
    appendFileSync(join(copy, 'metrics.csv'), ['2026-01-06 00:00:00,mid-000,99999,0.9,5000,9000,100,9999,999,50', '2026-01-06 00:00:00,be-000,1,0.9,5000,9000,100,9999,999,50'].join('\n') + '\n');
    appendFileSync(join(copy, 'calls.csv'), '2026-01-06 00:00:00,mid-000,be-000,99999,5000,0.9\n');
    const to = '2026-01-05T11:00:00Z';
    const a = gnnctl(['anomaly', 'score', '-c', config, '--artifacts', artifacts, '--run', runId, '--to', to, '--out', join(root, 'a.parquet')]);
    const b = gnnctl(['anomaly', 'score', '-c', join(copy, 'config.yaml'), '--artifacts', artifacts, '--run', runId, '--to', to, '--out', join(root, 'b.parquet')]);
    expect(a.status).toBe(0);
    expect(b.status).toBe(0);
    const ra = await query(`SELECT ts, score, threshold, alert, top_services FROM '${join(root, 'a.parquet')}' ORDER BY ts`);
    const rb = await query(`SELECT ts, score, threshold, alert, top_services FROM '${join(root, 'b.parquet')}' ORDER BY ts`);
    expect(rb).toEqual(ra);
  });

  it('--runtime onnx (the default) and --runtime tfjs give the same scores and alerts', async () => {
    const to = '2026-01-05T11:00:00Z';
    const onnx = gnnctl(['anomaly', 'score', '-c', config, '--artifacts', artifacts, '--run', runId, '--to', to, '--out', join(root, 'onnx.parquet')]);
    const tfjs = gnnctl(['anomaly', 'score', '-c', config, '--artifacts', artifacts, '--run', runId, '--to', to, '--out', join(root, 'tfjs.parquet'), '--runtime', 'tfjs']);
    expect(onnx.status, onnx.stderr).toBe(0);
    expect(tfjs.status, tfjs.stderr).toBe(0);
    expect([onnx.json.runtime, tfjs.json.runtime]).toEqual(['onnx', 'tfjs']);
    const ra = await query(`SELECT score, threshold, alert, top_services FROM '${join(root, 'onnx.parquet')}' ORDER BY ts`);
    const rb = await query(`SELECT score, threshold, alert, top_services FROM '${join(root, 'tfjs.parquet')}' ORDER BY ts`);
    expect(ra.length).toBeGreaterThan(10);
    // Scores are errors relative to each service's warm-up error: compared relatively.
    ra.forEach((r, i) => {
      expect(Math.abs(Number(r.score) - Number(rb[i]!.score))).toBeLessThanOrEqual(1e-4 * Math.max(1, Number(r.score)));
      expect(r.alert).toBe(rb[i]!.alert);
    });
  });

  it.each([
    [['--run', 'latest', '--runtime', 'torch'], 2, '--runtime'],
    [['--run', 'anomaly-nope'], 5, undefined],
    [['--run', 'latest', '--out', 'scores.csv'], 2, '--out'],
    [['--run', 'latest', '--from', 'noon'], 2, '--from'],
  ])('%j exits %i', (extra, code, where) => {
    const r = gnnctl(['anomaly', 'score', '-c', config, '--artifacts', artifacts, ...extra]);
    expect(r.status).toBe(code);
    if (where) expect(`${r.json.where ?? ''} ${r.json.message}`).toContain(where);
  });
});

describe('anomaly watch', () => {
  /** The mesh's tables cut at a time (rows sorted by time, so a prefix of lines). */
  function cut(dir: string, until: string): void {
    for (const f of ['metrics.csv', 'calls.csv', 'events.csv']) {
      const lines = readFileSync(join(root, 'mesh', f), 'utf8').trimEnd().split('\n');
      writeFileSync(join(dir, f), `${[lines[0], ...lines.slice(1).filter((l) => l < until)].join('\n')}\n`);
    }
  }

  it('continues after a restart exactly where a single uninterrupted watch would be', () => {
    const dir = join(root, 'growing');
    cpSync(join(root, 'mesh'), dir, { recursive: true });
    const cfg = join(dir, 'config.yaml');
    const stateFile = join(root, 'restart_state.json');
    cut(dir, '2026-01-05 08:00:00');
    const first = gnnctl(['anomaly', 'watch', '-c', cfg, '--artifacts', artifacts, '--run', runId, '--max-ticks', '1', '--port', '0', '--state-file', stateFile]);
    expect(first.status, first.stderr).toBe(0);
    expect(first.json.restored).toBe(false);
    expect(first.json.last_ts).toBe('2026-01-05T07:40:00Z'); // the newest snapshot waits: it may be half-written
    cut(dir, '2026-01-05 10:00:00');
    const second = gnnctl(['anomaly', 'watch', '-c', cfg, '--artifacts', artifacts, '--run', runId, '--max-ticks', '1', '--port', '0', '--state-file', stateFile]);
    expect(second.status, second.stderr).toBe(0);
    expect(second.json.restored).toBe(true);
    expect(second.json.last_ts).toBe('2026-01-05T09:40:00Z');

    const once = join(root, 'once_state.json');
    const single = gnnctl(['anomaly', 'watch', '-c', cfg, '--artifacts', artifacts, '--run', runId, '--max-ticks', '1', '--port', '0', '--state-file', once]);
    expect(single.status).toBe(0);
    const a = JSON.parse(readFileSync(stateFile, 'utf8')) as WindowState;
    const b = JSON.parse(readFileSync(once, 'utf8')) as WindowState;
    expect(a.last_ts).toBe(b.last_ts);
    expect(a.snapshots_scored).toBe(b.snapshots_scored);
    // the state keeps embeddings to 6 decimals, so scores after a restart agree to about that
    expect(a.threshold_history).toHaveLength(b.threshold_history.length);
    a.threshold_history.forEach((v, i) => expect(v).toBeCloseTo(b.threshold_history[i]!, 5));
    expect(a.ring.map((r) => r.ts)).toEqual(b.ring.map((r) => r.ts));
    a.ring[0]!.z.forEach((v, i) => expect(v).toBeCloseTo(b.ring[0]!.z[i]!, 4));
  });

  it('refuses a state file of another run, and bad flag values', () => {
    const stateFile = join(root, 'other_state.json');
    writeFileSync(stateFile, JSON.stringify({ version: 1, run_id: 'anomaly-other' }));
    const r = gnnctl(['anomaly', 'watch', '-c', config, '--artifacts', artifacts, '--run', runId, '--max-ticks', '1', '--port', '0', '--state-file', stateFile]);
    expect(r.status).toBe(5);
    for (const [flag, value] of [['--interval', 'often'], ['--prometheus', 'localhost:9090'], ['--port', '99999'], ['--runtime', 'gpu']]) {
      const bad = gnnctl(['anomaly', 'watch', '-c', config, '--artifacts', artifacts, '--run', runId, '--max-ticks', '1', flag!, value!]);
      expect(bad.status, `${flag} ${value}`).toBe(2);
      expect(`${bad.json.where ?? ''} ${bad.json.message}`).toContain(flag);
    }
  });

  it('alerts on the configured detector at its fixed threshold (anomaly.detector), from past data only', async () => {
    const run = async (threshold: number, tag: string): Promise<Awaited<ReturnType<typeof watchAnomaly>>> => {
      const dir = join(root, `detector-${tag}`);
      cpSync(join(root, 'mesh'), dir, { recursive: true });
      writeFileSync(join(dir, 'config.yaml'), `${readFileSync(join(dir, 'config.yaml'), 'utf8')}  detector: {method: rolling_family, threshold: ${threshold}}\n`);
      const cfg = loadConfig(join(dir, 'config.yaml'), { artifacts });
      return watchAnomaly(cfg, { run: runId, intervalMs: 10, maxTicks: 1, port: 0, host: '127.0.0.1', stateFile: join(root, `detector-${tag}.json`) });
    };
    // rolling_family is a mean of |z|: ≥ 0 everywhere, never 1e9
    const all = await run(0, 'all');
    expect(all.detector).toEqual({ method: 'rolling_family', threshold: 0, source: 'config' });
    const before = (JSON.parse(readFileSync(join(artifacts, 'runs', runId, 'state.json'), 'utf8')) as WindowState).snapshots_scored;
    expect(all.snapshots_scored).toBeGreaterThan(before);
    expect(all.alerts).toBe(all.snapshots_scored - before);
    const none = await run(1e9, 'none');
    expect(none.alerts).toBe(0);
    expect(none.snapshots_scored).toBe(all.snapshots_scored);
  });

  it('serves /metrics and posts alerts to an Alertmanager webhook', async () => {
    const received: unknown[] = [];
    const am = createServer((req, res) => {
      let body = '';
      req.on('data', (c) => (body += c));
      req.on('end', () => {
        received.push({ url: req.url, body: JSON.parse(body) });
        res.writeHead(200).end('{}');
      });
    });
    await new Promise<void>((r) => am.listen(0, '127.0.0.1', () => r()));
    const dir = join(root, 'alerting');
    cpSync(join(root, 'mesh'), dir, { recursive: true });
    // A low quantile makes alerts certain on this small mesh, so the webhook path is exercised.
    writeFileSync(join(dir, 'config.yaml'), `${readFileSync(join(dir, 'config.yaml'), 'utf8')}  threshold_quantile: 0.5\n`);
    const cfg = loadConfig(join(dir, 'config.yaml'), { artifacts });
    const stop = new AbortController();
    let metrics = '';
    const result = await watchAnomaly(cfg, {
      run: runId,
      intervalMs: 60_000,
      port: 0,
      host: '127.0.0.1',
      stateFile: join(root, 'am_state.json'),
      alertmanager: `http://127.0.0.1:${(am.address() as AddressInfo).port}`,
      signal: stop.signal,
      onListening: (url) => {
        const poll = async (): Promise<void> => {
          if (!existsSync(join(root, 'am_state.json')) || !JSON.parse(readFileSync(join(root, 'am_state.json'), 'utf8')).last_ts) {
            setTimeout(() => void poll(), 100);
            return;
          }
          // Once the first tick is through (the loop sleeps), read /metrics and stop.
          setTimeout(async () => {
            metrics = await (await fetch(url)).text();
            stop.abort();
          }, 1500);
        };
        void poll();
      },
    });
    am.close();
    expect(result.alerts).toBeGreaterThan(0);
    expect(result.alerts_posted).toBeGreaterThanOrEqual(result.alerts);
    const first = received[0] as { url: string; body: { labels: Record<string, string>; startsAt: string }[] };
    expect(first.url).toBe('/api/v2/alerts');
    expect(first.body[0]!.labels.alertname).toBe('GnnctlMeshAnomaly');
    expect(Date.parse(first.body[0]!.startsAt)).toBeGreaterThan(0);
    expect(metrics).toMatch(/gnnctl_anomaly_score\{run_id="[^"]+"\} [0-9.]+/);
    expect(metrics).toMatch(/gnnctl_anomaly_threshold\{/);
    expect(metrics).toMatch(/gnnctl_anomaly_alert\{run_id="[^"]+"\} [01]/);
    expect(metrics).toContain(`gnnctl_anomaly_snapshots_scored_total{run_id="${runId}"}`);
    expect(metrics).toMatch(/gnnctl_anomaly_scoring_duration_seconds\{run_id="[^"]+"\} [0-9.e-]+\n/);
  });
});
