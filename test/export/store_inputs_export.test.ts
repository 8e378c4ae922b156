/**
 * `export --embeddings-from-store`'s pieces: the input names per embedding key, the config.pbtxt binding
 * (with the base run it expects) read back by the server's own parser (the export ↔ serve contract), and the graph fragment in
 * onnxruntime: the fed row where the flag is 0, the learned fallback row where it is 1.
 */
import * as ort from 'onnxruntime-node';
import { describe, expect, it } from 'vitest';
import { OnnxGraphBuilder } from '../../src/artifacts/onnx/index.js';
import { parseModelConfig, writeModelConfig } from '../../src/artifacts/triton/pbtxt.js';
import { UsageError } from '../../src/core/errors.js';
import { storeEntityFeatures, storeEntityInputs, storeModelConfig } from '../../src/export/store_inputs_export.js';
import type { StudentSpec } from '../../src/model/student/spec.js';
import { modelSpecFromConfig } from '../../src/serve/model_spec.js';
import { storeBindings } from '../../src/serve/store_inputs.js';

const spec = (embeddings: { column: string; target: string }[], use = true) =>
  ({ task: 'fraud', fact_table: 'transactions', use_embeddings: use, embeddings: embeddings.map((e) => ({ ...e, type: 'VARCHAR', dim: 3 })) }) as unknown as StudentSpec;

describe('store-backed embedding inputs', () => {
  it('names two inputs per key, numbered when two keys embed one table', () => {
    const inputs = storeEntityInputs(spec([{ column: 'customer_id', target: 'customers' }, { column: 'seller_id', target: 'customers' }, { column: 'article_id', target: 'articles' }]), 'base-run');
    expect(inputs.map((t) => [t.input, t.missing, t.key, t.table])).toEqual([
      ['entity.customers_0.embedding', 'entity.customers_0.missing', 'transactions.customer_id', 'customers'],
      ['entity.customers_1.embedding', 'entity.customers_1.missing', 'transactions.seller_id', 'customers'],
      ['entity.articles.embedding', 'entity.articles.missing', 'transactions.article_id', 'articles'],
    ]);
  });

  it('refuses a student without embeddings', () => {
    expect(() => storeEntityInputs(spec([{ column: 'customer_id', target: 'customers' }], false), 'base-run')).toThrow(UsageError);
  });

  it('config.pbtxt binds each input as the server reads it', () => {
    const inputs = storeEntityInputs(spec([{ column: 'customer_id', target: 'customers' }, { column: 'article_id', target: 'articles' }]), 'base-run');
    const base = {
      name: 'm',
      platform: 'onnxruntime_onnx',
      max_batch_size: 8,
      input: [
        { name: 'transactions.customer_id', data_type: 'TYPE_STRING' as const, dims: [1] },
        { name: 'transactions.article_id', data_type: 'TYPE_STRING' as const, dims: [1] },
      ],
      output: [{ name: 'probability', data_type: 'TYPE_FP32' as const, dims: [1] }],
    };
    const served = modelSpecFromConfig(parseModelConfig(writeModelConfig(storeModelConfig(base, inputs))), 'm');
    const byInput = (a: { input: string }, b: { input: string }) => a.input.localeCompare(b.input);
    expect(storeBindings(served).sort(byInput)).toEqual(inputs.map((t) => ({ input: t.input, dim: 3, table: t.table, key: t.key, missing: t.missing, runId: 'base-run' })).sort(byInput));
    // A request leaves both out: the decoder starts every row on the fallback row.
    expect(served.inputByName.get(inputs[0]!.input)).toMatchObject({ optional: true });
    expect(served.config.parameters?.[`missing_value:${inputs[0]!.missing}`]).toEqual({ string_value: '1' });
  });

  it('computes the fed row where the flag is 0 and the fallback row where it is 1, projected', async () => {
    const [t] = storeEntityInputs(spec([{ column: 'customer_id', target: 'customers' }]), 'base-run');
    const g = new OnnxGraphBuilder();
    // Projection: the identity on 3 dims plus a bias, so the output shows which row was used.
    const kernel = Float32Array.of(1, 0, 0, 0, 1, 0, 0, 0, 1);
    const [proj, flag] = storeEntityFeatures(g, t!, Float32Array.of(-7, -8, -9), 3, { kernel, bias: Float32Array.of(0.5, 0.5, 0.5) });
    g.addOutput('proj', 'FLOAT', ['batch', 3], { from: proj! });
    g.addOutput('flag', 'FLOAT', ['batch', 1], { from: flag! });
    const session = await ort.InferenceSession.create(g.toBytes());
    try {
      const r = await session.run({
        [t!.input]: new ort.Tensor('float32', Float32Array.of(1, 2, 3, 4, 5, 6), [2, 3]),
        [t!.missing]: new ort.Tensor('float32', Float32Array.of(0, 1), [2, 1]),
      });
      expect(Array.from(r.proj!.data as Float32Array)).toEqual([1.5, 2.5, 3.5, -6.5, -7.5, -8.5]);
      expect(Array.from(r.flag!.data as Float32Array)).toEqual([0, 1]);
    } finally {
      await session.release();
    }
  });
});
