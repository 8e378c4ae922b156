/**
 * The call graph `score` records for the report: the strongest alert's top root-cause service with its
 * callers and callees (busiest first, capped) and only the calls among the services drawn.
 */
import { describe, expect, it } from 'vitest';
import { alertGraph } from '../../src/anomaly/score_record.js';
import type { Snapshot } from '../../src/anomaly/source.js';
import type { ScoreRow } from '../../src/anomaly/writer.js';

function snapshot(ts: number, services: string[], edges: [number, number, number][]): Snapshot {
  return {
    ts,
    services,
    features: new Float32Array(services.length),
    src: Int32Array.from(edges, (e) => e[0]),
    dst: Int32Array.from(edges, (e) => e[1]),
    rate: Float32Array.from(edges, (e) => e[2]),
    edgeFeatures: new Float32Array(0),
  };
}

const row = (ts: number, score: number, alert: boolean, root: string[]): ScoreRow => ({ ts, score, threshold: 2, alert, top_services: [], top_edges: [], root_causes: root });

describe('alertGraph', () => {
  it('centres on the first root cause of the highest-scoring alert, with the calls among its neighbours', () => {
    const names = ['fe', 'mid', 'db', 'cache', 'far'];
    // fe → mid → db, mid → cache, cache → db, db → far (far is two hops from mid)
    const edges: [number, number, number][] = [[0, 1, 10], [1, 2, 5], [1, 3, 2], [3, 2, 1], [2, 4, 7]];
    const snaps = [snapshot(0, names, edges), snapshot(60, names, edges), snapshot(120, names, edges)];
    // the highest score overall does not alert (no τ yet): the strongest *alert* is the one drawn
    const rows = [row(0, 99, false, ['fe']), row(60, 5, true, ['mid', 'db']), row(120, 3, true, ['db'])];
    const g = alertGraph(snaps, rows)!;
    expect(g.ts).toBe('1970-01-01T00:01:00Z');
    expect(g.service).toBe('mid');
    expect(g.nodes.map((n) => n.service)).toEqual(['mid', 'fe', 'db', 'cache']);
    expect(g.nodes.find((n) => n.service === 'db')!.rank).toBe(2);
    expect(g.nodes.find((n) => n.service === 'fe')!.rank).toBeNull();
    expect(g.edges.map((e) => `${e.source}->${e.destination}`).sort()).toEqual(['cache->db', 'fe->mid', 'mid->cache', 'mid->db']);
  });

  it('keeps the busiest neighbours of a hub and no alert gives no graph', () => {
    const names = ['hub', ...Array.from({ length: 20 }, (_, i) => `leaf-${i}`)];
    const edges: [number, number, number][] = names.slice(1).map((_, i) => [i + 1, 0, i + 1]);
    const s = snapshot(0, names, edges);
    const g = alertGraph([s], [row(0, 5, true, ['hub'])])!;
    expect(g.nodes).toHaveLength(13);
    expect(g.nodes.slice(1).map((n) => n.service)).toEqual(Array.from({ length: 12 }, (_, i) => `leaf-${19 - i}`));
    expect(alertGraph([s], [row(0, 5, false, ['hub'])])).toBeNull();
  });
});
