/**
 * buildGraph's message-passing layout against its definition (every call forward at e and reversed at
 * E + e with [share, is_reverse, is_self, extras…], then one self-loop per service), and the reuse of the
 * previous snapshot's name index only when the services are the same and in the same order.
 */
import { describe, expect, it } from 'vitest';
import { buildGraph } from '../../src/anomaly/graph.js';
import type { FeatureStats } from '../../src/anomaly/features.js';
import type { Snapshot } from '../../src/anomaly/source.js';

const stats = {
  node: [{ name: 'f0', log: false, mean: 0, std: 1 }],
  edge: [
    { name: 'e0', log: false, mean: 0, std: 1 },
    { name: 'e1', log: false, mean: 1, std: 2 },
  ],
} as FeatureStats;

const snap = (services: string[]): Snapshot =>
  ({
    ts: 60,
    services,
    features: Float32Array.from(services, (_, i) => i),
    src: Int32Array.of(0, 0, 2),
    dst: Int32Array.of(1, 2, 1),
    rate: Float32Array.of(3, 1, 0),
    edgeFeatures: Float32Array.of(0.5, 3, -1, 1, 2, 5),
  }) as Snapshot;

describe('buildGraph', () => {
  it('writes each call forward and reversed, then the self-loops', () => {
    const g = buildGraph(snap(['a', 'b', 'c']), stats);
    expect(Array.from(g.share)).toEqual([0.75, 0.25, 1]); // c's only call has rate 0: its whole share
    expect(Array.from(g.mpSrc)).toEqual([0, 0, 2, 1, 2, 1, 0, 1, 2]);
    expect(Array.from(g.mpDst)).toEqual([1, 2, 1, 0, 0, 2, 0, 1, 2]);
    const rows = Array.from({ length: 9 }, (_, k) => Array.from(g.mpAttr.subarray(k * 5, k * 5 + 5)));
    const extras = [[0.5, 1], [-1, 0], [2, 2]];
    [0.75, 0.25, 1].forEach((share, e) => {
      expect(rows[e]).toEqual([share, 0, 0, ...extras[e]!]);
      expect(rows[3 + e]).toEqual([share, 1, 0, ...extras[e]!]);
    });
    for (let i = 0; i < 3; i++) expect(rows[6 + i]).toEqual([0, 0, 1, 0, 0]);
    expect(g.neighbours).toEqual([[1, 2], [0, 2], [0, 1]]);
  });

  it('reuses the previous index only for the same services in the same order', () => {
    const first = buildGraph(snap(['a', 'b', 'c']), stats);
    const same = buildGraph(snap(['a', 'b', 'c']), stats, first);
    expect(same.index).toBe(first.index);
    const reordered = buildGraph(snap(['c', 'a', 'b']), stats, first);
    expect(reordered.index).not.toBe(first.index);
    expect([...reordered.index]).toEqual([['c', 0], ['a', 1], ['b', 2]]);
    const other = buildGraph(snap(['a', 'b', 'd']), stats, first);
    expect(other.index.get('d')).toBe(2);
    expect(other.index.has('c')).toBe(false);
  });
});
