/**
 * Spans that carry a status (OpenTelemetry's `status_code`): each edge's `error_rate` is the share of the
 * callee's spans with an error status, counted here by hand from the rows written.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load.js';
import { withDuck } from '../../src/data/duck.js';
import { loadSnapshots } from '../../src/anomaly/source.js';

const T0 = 1_767_571_200; // 2026-01-05T00:00:00Z, a multiple of 60

function fixture(): string {
  const dir = mkdtempSync(join(tmpdir(), 'gnnctl-spans-status-'));
  const spans = ['trace_id,span_id,parent_span_id,service_name,start_time_unix_nano,end_time_unix_nano,status_code'];
  // Minute 0: 4 calls front → cart, one failed; 2 calls front → db, none failed. Minute 1: 2 calls front → cart, both failed.
  const calls: [number, string, boolean][] = [
    [0, 'cart', false],
    [0, 'cart', true],
    [0, 'cart', false],
    [0, 'cart', false],
    [0, 'db', false],
    [0, 'db', false],
    [1, 'cart', true],
    [1, 'cart', true],
  ];
  calls.forEach(([minute, callee, failed], i) => {
    const start = BigInt(T0 + minute * 60 + i) * 1_000_000_000n;
    spans.push(`t${i},p${i},,front,${start},${start + 5_000_000n},STATUS_CODE_OK`);
    spans.push(`t${i},c${i},p${i},${callee},${start + 1_000_000n},${start + 4_000_000n},${failed ? 'STATUS_CODE_ERROR' : 'STATUS_CODE_OK'}`);
  });
  writeFileSync(join(dir, 'spans.csv'), `${spans.join('\n')}\n`);
  const metrics = ['ts,service,cpu'];
  for (const minute of [0, 1]) for (const s of ['front', 'cart', 'db']) metrics.push(`${T0 + minute * 60},${s},${minute + 1}`);
  writeFileSync(join(dir, 'metrics.csv'), `${metrics.join('\n')}\n`);
  const path = join(dir, 'config.yaml');
  writeFileSync(path, `name: spans-status\nanomaly:\n  metrics: { path: ${dir}/metrics.csv }\n  spans: { path: ${dir}/spans.csv, service_map: false }\n  snapshot_seconds: 60\n`);
  return path;
}

describe('call graphs from spans with a status', () => {
  it('error_rate is the share of the callee spans with an error status, per snapshot and edge', async () => {
    const cfg = loadConfig(fixture(), {});
    const loaded = await withDuck(({ conn }) => loadSnapshots(conn, cfg, {}));
    expect(loaded.edgeFeatureColumns).toEqual(['latency_p50_ms', 'latency_p99_ms', 'gap_p50_ms', 'error_rate']);
    const got = new Map<string, number>();
    for (const [k, s] of loaded.snapshots.entries()) {
      for (let e = 0; e < s.src.length; e++) got.set(`${k}:${s.services[s.src[e]!]}>${s.services[s.dst[e]!]}`, s.edgeFeatures[e * 4 + 3]!);
    }
    expect(Object.fromEntries(got)).toEqual({ '0:front>cart': 0.25, '0:front>db': 0, '1:front>cart': 1 });
  });
});
