/**
 * A redeploy replaces a service's pod (a new name suffix): `loadEvents` records it as `pod_replaced` at the
 * new pod's first scrape, so suppression covers the shift its levels bring; the first pods are not events.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load.js';
import { withDuck } from '../../src/data/duck.js';
import { loadEvents, loadSnapshots } from '../../src/anomaly/source.js';

describe('pod replacement', () => {
  it('a new pod name of a known service is an event; the replica is averaged into one service row', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'gnnctl-pods-'));
    const rows = [
      ['2026-01-05 00:00:10', 'cart-7b598fc7d-bbbbb', 1],
      ['2026-01-05 00:00:12', 'front-579b9bff58-t2dbm', 5],
      ['2026-01-05 00:01:10', 'cart-7b598fc7d-bbbbb', 3],
      ['2026-01-05 00:01:11', 'front-579b9bff58-t2dbm', 5],
      ['2026-01-05 00:02:09', 'cart-7b598fc7d-ccccc', 9],
      ['2026-01-05 00:02:11', 'front-579b9bff58-t2dbm', 5],
    ];
    writeFileSync(join(dir, 'metrics.csv'), `ts,pod,cpu\n${rows.map((r) => r.join(',')).join('\n')}\n`);
    writeFileSync(join(dir, 'calls.csv'), 'ts,source,destination,requests_per_second\n2026-01-05 00:00:00,front,cart,1\n');
    writeFileSync(join(dir, 'config.yaml'), 'name: pods\nanomaly:\n  metrics: { path: metrics.csv, service_column: pod, service_from: strip_replica }\n  calls: { path: calls.csv }\n  snapshot_seconds: 60\n');
    const cfg = loadConfig(join(dir, 'config.yaml'), {});
    const t0 = Date.parse('2026-01-05T00:00:00Z') / 1000;
    const { events, loaded, later } = await withDuck(async ({ conn }) => ({
      events: await loadEvents(conn, cfg, {}),
      later: await loadEvents(conn, cfg, { from: t0 + 180 }),
      loaded: await loadSnapshots(conn, cfg, {}),
    }));
    expect(events).toEqual([{ ts: t0 + 120, service: 'cart', kind: 'pod_replaced' }]);
    expect(later).toEqual([]);
    expect(loaded.snapshots.map((s) => s.ts - t0)).toEqual([0, 60, 120]);
    expect(loaded.snapshots[2]!.services).toEqual(['cart', 'front']);
    expect(loaded.snapshots[2]!.features[0]).toBe(9);
    expect(loaded.snapshots[0]!.src.length).toBe(1); // the call at 00:00:00 lands in the first minute
  });
});
