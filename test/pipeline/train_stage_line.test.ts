import { describe, expect, it } from 'vitest';
import { trainStageLine } from '../../src/pipeline/pipeline.js';

describe("the pipeline's train stage line", () => {
  const base = { main_metric: 'auroc', test: { auroc: 0.8973 }, val: {}, baseline: { test: { auroc: 0.8615 } }, lift: 0.0358 };

  it("shows the GNN's test metric and the no-graph baseline", () => {
    expect(trainStageLine(base)).toBe('test auroc 0.8973 (no-graph 0.8615)');
  });

  it('names the model model.kind kept, with its test metric, when it is not the GNN', () => {
    const m = { ...base, chosen: 'gbdt', model_choice: { candidates: { gnn: { test: { auroc: 0.8973 } }, gbdt: { test: { auroc: 0.9226 } } } } };
    expect(trainStageLine(m)).toBe('test auroc 0.8973 (no-graph 0.8615); serves gbdt 0.9226');
    expect(trainStageLine({ ...m, chosen: 'gnn' })).toBe('test auroc 0.8973 (no-graph 0.8615)');
  });

  it('prints a dash for a run without a baseline', () => {
    expect(trainStageLine({ ...base, baseline: null })).toBe('test auroc 0.8973 (no-graph -)');
  });
});
