/**
 * `anomaly watch --prometheus`: against a real Prometheus server (Debian's `prometheus` package) that
 * scrapes a small exporter this test starts, publishing a fitted mesh's services and calls. Without the
 * `prometheus` binary it skips with a message, or fails under CI=true (`test/helpers/system_binary.ts`).
 * Everything listens on 127.0.0.1 only.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { appendFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateMesh } from '../../src/datasets/mesh/generate.js';
import { loadConfig } from '../../src/config/load.js';
import { fitAnomaly } from '../../src/anomaly/fit.js';
import { watchAnomaly } from '../../src/anomaly/watch.js';
import { setQuiet } from '../../src/core/log.js';
import { systemBinary } from '../helpers/system_binary.js';

const prometheus = systemBinary({ command: process.env.GNNCTL_PROMETHEUS_BIN ?? 'prometheus', aptPackage: 'prometheus', testFile: 'test/anomaly/prometheus.e2e.test.ts' });
const PROMETHEUS = prometheus.command;

const FEATURES = ['request_rate', 'error_rate', 'p50_latency_ms', 'p99_latency_ms', 'cpu', 'memory_mb', 'active_connections', 'pods'];
const EDGE = ['requests_per_second', 'latency_ms', 'error_rate'];

async function freePort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', () => r()));
  const port = (s.address() as AddressInfo).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

describe.skipIf(prometheus.skip)('anomaly watch against a real Prometheus', () => {
  const root = mkdtempSync(join(tmpdir(), 'gnnctl-prom-'));
  let exporter: Server;
  let prom: ChildProcess | undefined;
  let promUrl = '';
  let configPath = '';
  let runId = '';
  // While set, the exporter injects a fault into this service: CPU, memory and p99 latency far above its level.
  let faulty: string | null = null;
  let faultCandidate = '';

  beforeAll(async () => {
    prometheus.require();
    setQuiet(true);
    const mesh = generateMesh({ out: join(root, 'mesh'), services: 10, hours: 6, step: 600, seed: 9 });
    configPath = mesh.files.config;
    // The exporter publishes the mesh's last snapshot, with a little jitter per scrape.
    const lastTs = readFileSync(mesh.files.metrics, 'utf8').trimEnd().split('\n').pop()!.split(',')[0]!;
    const metrics = readFileSync(mesh.files.metrics, 'utf8').trimEnd().split('\n').slice(1).filter((l) => l.startsWith(lastTs)).map((l) => l.split(','));
    const calls = readFileSync(mesh.files.calls, 'utf8').trimEnd().split('\n').slice(1).filter((l) => l.startsWith(lastTs)).map((l) => l.split(','));
    faultCandidate = metrics[3]![1]!;
    const FAULT: Record<string, number> = { cpu: 20, memory_mb: 5, p99_latency_ms: 20 };
    exporter = createServer((_req, res) => {
      const j = (): number => 1 + 0.01 * (Math.random() - 0.5);
      let body = '';
      for (const [f, col] of FEATURES.entries()) for (const m of metrics) body += `mesh_${col}{service="${m[1]}"} ${Number(m[2 + f]) * j() * (m[1] === faulty ? (FAULT[col] ?? 1) : 1)}\n`;
      for (const [f, col] of EDGE.entries()) for (const c of calls) body += `mesh_calls_${col}{source="${c[1]}",destination="${c[2]}"} ${Number(c[3 + f]) * j()}\n`;
      res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4' }).end(body);
    });
    await new Promise<void>((r) => exporter.listen(0, '127.0.0.1', () => r()));
    const exporterPort = (exporter.address() as AddressInfo).port;
    const promPort = await freePort();
    promUrl = `http://127.0.0.1:${promPort}`;
    writeFileSync(join(root, 'prometheus.yml'), `global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: mesh\n    static_configs:\n      - targets: ['127.0.0.1:${exporterPort}']\n`);
    prom = spawn(PROMETHEUS, [`--config.file=${join(root, 'prometheus.yml')}`, `--storage.tsdb.path=${join(root, 'tsdb')}`, `--web.listen-address=127.0.0.1:${promPort}`], { stdio: 'ignore' });

    appendFileSync(
      configPath,
      `  warmup_snapshots: 5
  window: 2
  epochs: 1
  hidden: 8
  embedding_dim: 8
  prometheus:
    step: 1
    metrics: { ${FEATURES.map((c) => `${c}: mesh_${c}`).join(', ')} }
    calls: { ${EDGE.map((c) => `${c}: mesh_calls_${c}`).join(', ')} }
`,
    );
    const fit = await fitAnomaly(loadConfig(configPath, { artifacts: join(root, 'artifacts') }));
    runId = fit.run_id;

    // Ready, and a few scrapes in.
    for (let k = 0; k < 100; k++) {
      try {
        if ((await fetch(`${promUrl}/-/ready`)).ok) break;
      } catch {
        /* not up yet */
      }
      await new Promise((r) => setTimeout(r, 200));
    }
    // Scraped data, not just a ready server: the first scrapes come a few seconds after start.
    for (let k = 0; k < 150; k++) {
      try {
        const body = (await (await fetch(`${promUrl}/api/v1/query?query=mesh_calls_requests_per_second`)).json()) as { data?: { result: unknown[] } };
        if ((body.data?.result.length ?? 0) > 0) break;
      } catch {
        /* not up yet */
      }
      await new Promise((r) => setTimeout(r, 200));
    }
    await new Promise((r) => setTimeout(r, 2000));
  });

  afterAll(async () => {
    if (prom?.pid !== undefined && prom.exitCode === null) {
      const exited = new Promise((r) => prom!.once('exit', r));
      prom.kill('SIGTERM');
      await exited;
    }
    if (exporter) await new Promise<void>((r) => exporter.close(() => r()));
    rmSync(root, { recursive: true, force: true });
  });

  it('reads snapshots through query_range, scores them and keeps its window across a restart', async () => {
    const cfg = loadConfig(configPath, { artifacts: join(root, 'artifacts') });
    const stateFile = join(root, 'state.json');
    const first = await watchAnomaly(cfg, { run: runId, intervalMs: 1000, port: 0, host: '127.0.0.1', prometheus: promUrl, stateFile, maxTicks: 3 });
    expect(first.restored).toBe(false);
    expect(first.snapshots_scored).toBeGreaterThan(0);
    const lastTs = Date.parse(first.last_ts!);
    expect(Math.abs(Date.now() - lastTs)).toBeLessThan(60_000); // scored live data, not the fitted history
    const state = JSON.parse(readFileSync(stateFile, 'utf8'));
    expect(state.ring[0].services).toHaveLength(10);
    await new Promise((r) => setTimeout(r, 2500));
    const second = await watchAnomaly(cfg, { run: runId, intervalMs: 1000, port: 0, host: '127.0.0.1', prometheus: promUrl, stateFile, maxTicks: 1 });
    expect(second.restored).toBe(true);
    expect(second.snapshots_scored).toBeGreaterThan(first.snapshots_scored);
    expect(Date.parse(second.last_ts!)).toBeGreaterThan(lastTs);
  });

  it('names the faulty service first in the root causes of the alerts it pushes to Alertmanager', async () => {
    const cfg = loadConfig(configPath, { artifacts: join(root, 'artifacts') });
    const posted: { labels: Record<string, string>; annotations: Record<string, string>; endsAt?: string }[] = [];
    const alertmanager = createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        if (req.method === 'POST' && req.url === '/api/v2/alerts') posted.push(...(JSON.parse(body) as typeof posted));
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      });
    });
    await new Promise<void>((r) => alertmanager.listen(0, '127.0.0.1', () => r()));
    try {
      faulty = faultCandidate;
      await new Promise((r) => setTimeout(r, 3000)); // a few faulty scrapes in Prometheus
      const r = await watchAnomaly(cfg, { run: runId, intervalMs: 1000, port: 0, host: '127.0.0.1', prometheus: promUrl, stateFile: join(root, 'fault_state.json'), alertmanager: `http://127.0.0.1:${(alertmanager.address() as AddressInfo).port}`, maxTicks: 3 });
      expect(r.root_cause_method).toBe('signals'); // the mesh's labels name no root cause: no learned weights
      expect(r.alerts).toBeGreaterThan(0);
      expect(r.last_alert_root_causes![0]).toBe(faultCandidate);
      const firing = posted.filter((a) => a.endsAt === undefined);
      expect(firing.length).toBeGreaterThan(0);
      expect(firing[firing.length - 1]!.annotations.root_causes!.split(', ')[0]).toBe(faultCandidate);
      expect(firing[firing.length - 1]!.annotations.root_cause_method).toBe('signals');
    } finally {
      faulty = null;
      await new Promise<void>((r) => alertmanager.close(() => r()));
    }
  });

  it('names the column whose query the config lacks', async () => {
    const cfg = loadConfig(configPath, { artifacts: join(root, 'artifacts') });
    delete (cfg.anomaly!.prometheus!.metrics as Record<string, string>).cpu;
    await expect(watchAnomaly(cfg, { run: runId, intervalMs: 1000, port: 0, host: '127.0.0.1', prometheus: promUrl, maxTicks: 1 })).rejects.toMatchObject({ problems: [{ path: 'anomaly.prometheus.metrics.cpu' }] });
  });
});
