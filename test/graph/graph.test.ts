import { describe, expect, it } from 'vitest';
import { Worker } from 'node:worker_threads';
import { Graph } from '../../src/graph/graph.js';
import { FK_EDGE, handGraph, REV_EDGE } from '../helpers/hand_graph.js';

describe('Graph.prefixSum', () => {
  // users 0: events 0, 2, 3; user 1: event 1; user 2: none. Event amounts 1, 10, NaN, 100.
  const g = handGraph(Int32Array.of(0, 1, 0, 0), Float64Array.of(1, 2, 3, 4), 3);
  g.graph.tables.events!.numeric = [{ meta: { name: 'amount' }, values: Float32Array.of(1, 10, Number.NaN, 100) }] as never;

  it('sums a child column in CSR order (NaN as 0), once per graph, in shared memory', () => {
    const p = g.graph.prefixSum(g.rev, 'amount');
    // CSR order: user 0's events 0, 2, 3, then user 1's event 1.
    expect(Array.from(p)).toEqual([0, 1, 1, 101, 111]);
    expect(p.buffer).toBeInstanceOf(SharedArrayBuffer);
    expect(g.graph.prefixSum(g.rev, 'amount')).toBe(p);
  });

  it('travels with the graph to a worker thread, which reads the same memory instead of computing its own', async () => {
    const p = g.graph.prefixSum(g.rev, 'amount');
    const shared = g.graph.shareable();
    expect(Graph.fromShared(shared).prefixSum(g.rev, 'amount')).toBe(p);
    // A worker writes into what it received; this thread sees the write.
    const worker = new Worker(`const { parentPort } = require('node:worker_threads'); parentPort.once('message', (s) => { s.prefixSums[0][1][4] = -1; parentPort.postMessage('ok'); });`, { eval: true });
    try {
      const reply = new Promise((resolve) => worker.once('message', resolve));
      worker.postMessage(shared);
      expect(await reply).toBe('ok');
      expect(p[4]).toBe(-1);
    } finally {
      await worker.terminate();
    }
  });

  it('refuses an edge that is not a reverse edge, or a column the child table lacks', () => {
    expect(() => g.graph.prefixSum(g.fk, 'amount')).toThrow(FK_EDGE);
    expect(() => g.graph.prefixSum(g.rev, 'nope')).toThrow(`${REV_EDGE} is not a reverse edge to a table with the numeric column nope`);
  });
});
