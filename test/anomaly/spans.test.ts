/**
 * Raw spans and per-pod metrics in: a slice of real Online Boutique telemetry (test/fixtures/
 * nezha-onlineboutique) read with Nezha's own column names, pods mapped to services, and each minute's
 * call graph checked against counts and medians computed here in plain JS from the same CSV.
 */
import { mkdtempSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load.js';
import { withDuck } from '../../src/data/duck.js';
import { serviceOf } from '../../src/anomaly/pod_service.js';
import { loadSnapshots, type LoadedSnapshots } from '../../src/anomaly/source.js';

const FIXTURE = resolve(__dirname, '../fixtures/nezha-onlineboutique');

function config(serviceMap: boolean): string {
  const dir = mkdtempSync(join(tmpdir(), 'gnnctl-spans-'));
  const path = join(dir, 'config.yaml');
  writeFileSync(
    path,
    `name: nezha-slice
anomaly:
  metrics:
    path: ${FIXTURE}/metrics/*.csv
    ts_column: Time
    service_column: PodName
    service_from: strip_replica
    feature_columns: ["CpuUsage(m)", "PodServerLatencyP99(s)", "PodWorkload(Ops)"]
  spans:
    path: ${FIXTURE}/spans/*.csv
    trace_id_column: TraceID
    span_id_column: SpanID
    parent_span_id_column: ParentID
    service_column: PodName
    start_column: StartTimeUnixNano
    end_column: EndTimeUnixNano
    status_column: null
    service_from: { pattern: '^([a-z]+)-' }
    service_map: ${serviceMap}
  snapshot_seconds: 60
`,
  );
  return path;
}

async function load(serviceMap: boolean): Promise<LoadedSnapshots> {
  const cfg = loadConfig(config(serviceMap), {});
  return withDuck(({ conn }) => loadSnapshots(conn, cfg, {}));
}

interface Span {
  trace: string;
  id: string;
  parent: string;
  service: string;
  start: bigint;
  end: bigint;
}

/** The slice's spans parsed by hand (no field holds a comma). */
function spans(): Span[] {
  const file = join(FIXTURE, 'spans', readdirSync(join(FIXTURE, 'spans'))[0]!);
  const [header, ...lines] = readFileSync(file, 'utf8').trim().split('\n');
  const cols = header!.split(',');
  const at = (name: string): number => cols.indexOf(name);
  return lines.map((line) => {
    const f = line.split(',');
    expect(f).toHaveLength(cols.length);
    return { trace: f[at('TraceID')]!, id: f[at('SpanID')]!, parent: f[at('ParentID')]!, service: f[at('PodName')]!.split('-')[0]!, start: BigInt(f[at('StartTimeUnixNano')]!), end: BigInt(f[at('EndTimeUnixNano')]!) };
  });
}

/** minute (epoch s) → "caller>callee" → child durations in ms */
function expectedCalls(): Map<number, Map<string, number[]>> {
  const all = spans();
  const byId = new Map(all.map((s) => [`${s.trace}/${s.id}`, s]));
  const out = new Map<number, Map<string, number[]>>();
  for (const s of all) {
    const p = byId.get(`${s.trace}/${s.parent}`);
    if (!p || p.service === s.service) continue;
    const minute = Number(s.start / 60_000_000_000n) * 60;
    const edges = out.get(minute) ?? new Map<string, number[]>();
    out.set(minute, edges);
    const key = `${p.service}>${s.service}`;
    edges.set(key, [...(edges.get(key) ?? []), Number(s.end - s.start) / 1e6]);
  }
  return out;
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

describe('call graphs from raw spans', () => {
  it('each minute: parent service → child service, calls per second and p50 latency as counted by hand', async () => {
    const loaded = await load(false);
    const want = expectedCalls();
    expect(want.size).toBe(3);
    expect(loaded.edgeFeatureColumns).toEqual(['latency_p50_ms', 'latency_p99_ms', 'gap_p50_ms']);
    let checked = 0;
    for (const s of loaded.snapshots) {
      const edges = want.get(s.ts) ?? new Map<string, number[]>();
      const got = new Map<string, [number, number]>();
      for (let e = 0; e < s.src.length; e++) got.set(`${s.services[s.src[e]!]}>${s.services[s.dst[e]!]}`, [s.rate[e]!, s.edgeFeatures[e * 3]!]);
      expect([...got.keys()].sort()).toEqual([...edges.keys()].sort());
      for (const [key, durations] of edges) {
        const [rate, p50] = got.get(key)!;
        expect(rate * 60).toBeCloseTo(durations.length, 3);
        expect(p50).toBeCloseTo(median(durations), 2);
        checked++;
      }
    }
    expect(checked).toBeGreaterThan(10);
    expect(loaded.spans!.spans).toBe(spans().length);
    // 03:52 and 03:56 have metrics but no kept traces
    expect(loaded.emptySnapshots).toBe(2);
  });

  it('per-pod metric files become one row per service and minute, values as scraped', async () => {
    const loaded = await load(false);
    expect(loaded.snapshots.map((s) => new Date(s.ts * 1000).toISOString().slice(11, 16))).toEqual(['03:52', '03:53', '03:54', '03:55', '03:56']);
    const first = loaded.snapshots[0]!;
    expect(first.services).toHaveLength(10);
    expect(first.services).toContain('productcatalogservice');
    const file = readdirSync(join(FIXTURE, 'metrics')).find((f) => f.startsWith('frontend-'))!;
    const [header, row] = readFileSync(join(FIXTURE, 'metrics', file), 'utf8').split('\n');
    const cpu = Number(row!.split(',')[header!.split(',').indexOf('CpuUsage(m)')]);
    expect(first.features[first.services.indexOf('frontend') * 3]).toBeCloseTo(cpu, 3);
  });

  it('a service map puts every edge seen into every snapshot, rate 0 where no trace was kept', async () => {
    const loaded = await load(true);
    const seen = new Set([...expectedCalls().values()].flatMap((m) => [...m.keys()]));
    expect(loaded.spans!.serviceMapEdges).toBe(seen.size);
    expect(loaded.emptySnapshots).toBe(0);
    const quiet = loaded.snapshots[0]!;
    expect(quiet.src.length).toBe(seen.size);
    expect(Math.max(...quiet.rate)).toBe(0);
    expect(Number.isNaN(quiet.edgeFeatures[0]!)).toBe(true);
  });

  it('strip_replica maps Kubernetes pod names to services and leaves plain names whole', () => {
    expect(serviceOf('frontend-579b9bff58-t2dbm', 'strip_replica')).toBe('frontend');
    expect(serviceOf('redis-0', 'strip_replica')).toBe('redis');
    expect(serviceOf('user-cache', 'strip_replica')).toBe('user-cache');
    expect(serviceOf('cartservice-579f59597d-wc2lz', { pattern: '^([a-z]+)-' })).toBe('cartservice');
  });
});
