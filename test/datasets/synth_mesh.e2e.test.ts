/**
 * `gnnctl datasets synth-mesh`: determinism, the tables as DuckDB reads them, incidents only after the
 * normal period, planned changes announced in events, and the command through the real binary.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DuckDBInstance, type DuckDBConnection } from '@duckdb/node-api';
import { generateMesh, INCIDENT_KINDS, type MeshResult } from '../../src/datasets/mesh/generate.js';
import { setQuiet } from '../../src/core/log.js';

const BIN = join(import.meta.dirname, '..', '..', 'bin', 'gnnctl.js');
const root = mkdtempSync(join(tmpdir(), 'gnnctl-mesh-'));
let mesh: MeshResult;
let db: DuckDBInstance;
let conn: DuckDBConnection;
const rows = async (sql: string): Promise<Record<string, unknown>[]> => (await conn.runAndReadAll(sql)).getRowObjectsJS() as Record<string, unknown>[];

beforeAll(async () => {
  setQuiet(true);
  mesh = generateMesh({ out: join(root, 'a'), services: 40, hours: 30, step: 600, seed: 3 });
  db = await DuckDBInstance.create(':memory:');
  conn = await db.connect();
  await conn.run("SET TimeZone = 'UTC'");
  for (const t of ['metrics', 'calls', 'events', 'incidents'] as const) await conn.run(`CREATE VIEW ${t} AS SELECT * FROM read_csv('${mesh.files[t]}')`);
});

afterAll(() => {
  conn?.closeSync();
  db?.closeSync();
  rmSync(root, { recursive: true, force: true });
});

describe('synth-mesh', () => {
  it('is deterministic in its seed', () => {
    const again = generateMesh({ out: join(root, 'b'), services: 40, hours: 30, step: 600, seed: 3 });
    const other = generateMesh({ out: join(root, 'c'), services: 40, hours: 30, step: 600, seed: 4 });
    for (const f of ['metrics', 'calls', 'events', 'incidents'] as const) {
      expect(readFileSync(again.files[f]).equals(readFileSync(mesh.files[f]))).toBe(true);
    }
    expect(readFileSync(other.files.calls).equals(readFileSync(mesh.files.calls))).toBe(false);
  });

  it('writes one metrics row per live service and snapshot, calls only between live services', async () => {
    const [m] = await rows('SELECT count(DISTINCT ts) AS snaps, count(*) AS n, count(DISTINCT (ts, service)) AS uniq FROM metrics');
    expect(Number(m!.snaps)).toBe(mesh.snapshots);
    expect(Number(m!.uniq)).toBe(Number(m!.n));
    const [orphans] = await rows(
      'SELECT count(*) AS n FROM calls c WHERE NOT EXISTS (SELECT 1 FROM metrics m WHERE m.ts = c.ts AND m.service = c.source) OR NOT EXISTS (SELECT 1 FROM metrics m WHERE m.ts = c.ts AND m.service = c.destination)',
    );
    expect(Number(orphans!.n)).toBe(0);
    const [base] = await rows("SELECT count(DISTINCT service) AS n FROM metrics WHERE service NOT LIKE '%-v%'");
    expect(Number(base!.n)).toBe(40);
  });

  it('has a diurnal load: gateway traffic peaks in the day and dips at night', async () => {
    const byHour = await rows("SELECT hour(ts) AS h, avg(request_rate) AS r FROM metrics WHERE service LIKE 'gw-%' GROUP BY 1 ORDER BY 1");
    const r = new Map(byHour.map((x) => [Number(x.h), Number(x.r)]));
    expect(r.get(15)!).toBeGreaterThan(2 * r.get(3)!);
  });

  it('labels incidents of every kind, only after the normal period, non-overlapping', async () => {
    const inc = await rows('SELECT kind, start, "end" FROM incidents ORDER BY start');
    expect(new Set(inc.map((i) => i.kind))).toEqual(new Set(INCIDENT_KINDS));
    const normal = Date.parse(mesh.normal_until);
    let lastEnd = 0;
    for (const i of inc) {
      const s = Date.parse(String(i.start));
      expect(s).toBeGreaterThanOrEqual(normal);
      expect(s).toBeGreaterThanOrEqual(lastEnd);
      lastEnd = Date.parse(String(i.end));
    }
  });

  it('announces autoscaling churn and the planned scale-out in events, and the new service appears then', async () => {
    const kinds = await rows('SELECT kind, count(*) AS n FROM events GROUP BY 1');
    const k = new Map(kinds.map((x) => [String(x.kind), Number(x.n)]));
    expect(k.get('pod_added')).toBeGreaterThan(0);
    expect(k.get('pod_terminating')).toBeGreaterThan(0);
    expect(k.get('service_added')).toBe(mesh.planned_scale_outs);
    const added = await rows("SELECT e.service, e.ts, (SELECT min(ts) FROM metrics m WHERE m.service = e.service) AS first FROM events e WHERE kind = 'service_added'");
    for (const a of added) expect(String(a.first)).toBe(String(a.ts));
  });

  it('a retry storm raises its root\'s errors and multiplies the calls into it', async () => {
    const during = "EXISTS (SELECT 1 FROM incidents i WHERE i.kind = 'retry_storm' AND i.root_service = x.svc AND x.ts >= i.start AND x.ts < i.\"end\")";
    const [e] = await rows(
      `WITH x AS (SELECT service AS svc, ts, error_rate FROM metrics WHERE service IN (SELECT root_service FROM incidents WHERE kind = 'retry_storm'))
       SELECT avg(error_rate) FILTER (WHERE ${during}) AS inside, avg(error_rate) FILTER (WHERE NOT ${during}) AS outside FROM x`,
    );
    expect(Number(e!.inside)).toBeGreaterThan(10 * Number(e!.outside));
    const [c] = await rows(
      `WITH x AS (SELECT destination AS svc, ts, sum(requests_per_second) AS r FROM calls GROUP BY 1, 2), y AS (SELECT svc, ts, r / avg(r) OVER (PARTITION BY svc, hour(ts)) AS rel FROM x WHERE svc IN (SELECT root_service FROM incidents WHERE kind = 'retry_storm'))
       SELECT avg(rel) FILTER (WHERE ${during.replaceAll('x.', 'y.')}) AS inside FROM y`,
    );
    expect(Number(c!.inside)).toBeGreaterThan(1.3);
  });
});

describe('gnnctl datasets synth-mesh (binary)', () => {
  it('writes the tables and prints a JSON result', () => {
    const out = join(root, 'cli');
    const stdout = execFileSync('node', [BIN, 'datasets', 'synth-mesh', '--out', out, '--services', '20', '--hours', '6', '--step', '600', '--seed', '1', '--json'], { encoding: 'utf8' });
    const r = JSON.parse(stdout) as MeshResult;
    expect(r.services).toBe(20);
    expect(r.snapshots).toBe(36);
    expect(readFileSync(join(out, 'config.yaml'), 'utf8')).toContain('anomaly:');
  });

  it.each([
    ['--services', 'many'],
    ['--hours', '-1'],
    ['--seed', '1.5'],
  ])('rejects %s %s with exit code 2 and names the flag', (flag, value) => {
    const r = spawnSync('node', [BIN, 'datasets', 'synth-mesh', '--out', join(root, 'bad'), flag, value, '--json'], { encoding: 'utf8' });
    expect(r.status).toBe(2);
    expect(JSON.parse(r.stdout).message).toContain(flag);
  });
});
