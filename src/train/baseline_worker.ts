/**
 * The no-graph baseline's fit on its own worker thread (see baseline_job.ts): a TF.js instance of its
 * own, the entity's features rebuilt over the shared graph, progress posted at most twice a second.
 */
import { parentPort } from 'node:worker_threads';
import { selectBackend } from '../compute/backend.js';
import { Graph } from '../graph/graph.js';
import { setQuiet } from '../core/log.js';
import { bindFeatures } from '../model/features.js';
import { fitBaseline } from './baseline_model.js';
import type { BaselineJobInit } from './baseline_job.js';

setQuiet(true);

parentPort!.once('message', async (init: BaselineJobInit) => {
  try {
    await selectBackend(init.backend);
    const graph = Graph.fromShared(init.graph);
    const own = bindFeatures(graph, { ...init.featureSpec, tables: { [init.table]: init.featureSpec.tables[init.table]! } })[init.table]!;
    let last = 0;
    const r = fitBaseline(own, init.inputs, init.kind, init.seed, (seen, max, note) => {
      const now = performance.now();
      if (now - last < 500) return;
      last = now;
      parentPort!.postMessage({ type: 'progress', seen, max, note });
    });
    parentPort!.postMessage({ type: 'done', result: r }, [r.testPred.buffer as ArrayBuffer]);
  } catch (e) {
    parentPort!.postMessage({ type: 'error', error: e instanceof Error ? `${e.message}\n${e.stack ?? ''}` : String(e) });
  }
});
