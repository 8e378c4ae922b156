/**
 * The export contract's promise: inside a dynamic batch, with RTI sequences of different lengths padded
 * together, every request gets its batch-1 answer. The reference is onnxruntime run on each request
 * alone; the model masks padded elements by their INT64-min time, so padding must not move any answer.
 */
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { batchOneAnswers, infer, inferBody, MODEL, startTestServer, tempRepo, txRequest, type TempRepo, type TestServer } from './helpers.js';

const open: { server?: TestServer; repo: TempRepo }[] = [];
afterAll(async () => {
  for (const o of open) {
    await o.server?.stop();
    o.repo.cleanup();
  }
});

describe.each([
  ['main', 'string'],
  ['worker', 'string'],
  ['main', 'int64'],
] as const)('onnxruntime on the %s thread, %s keys', (ortThread, keyType) => {
  it('concurrent requests with RTI lengths 0..32 each get their batch-1 answer', async () => {
    const repo = tempRepo({ keyType, maxBatchSize: 16, maxQueueDelayUs: 2000 });
    const entry: { server?: TestServer; repo: TempRepo } = { repo };
    open.push(entry);
    const server = await startTestServer(repo.root, { ortThread });
    entry.server = server;
    const requests = Array.from({ length: 96 }, (_, i) => txRequest(i, (i * 7) % 33, { keyType, known: i % 4 !== 3 }));
    const expected = await batchOneAnswers(join(repo.root, MODEL, '1', 'model.onnx'), requests);

    const responses = await Promise.all(requests.map((r) => infer(server.url, inferBody(r))));
    responses.forEach((res, i) => {
      expect(res.status).toBe(200);
      expect(res.body.id).toBe(`req-${i}`);
      const got = res.body.outputs![0]!.data[0] as number;
      if (Math.abs(got - expected[i]!) > 1e-6) expect.fail(`request ${i} (RTI length ${requests[i]!.rti.length}): got ${got}, batch-1 answer ${expected[i]}`);
    });
    // The requests really were batched together (otherwise this test proves nothing): fewer batches
    // than requests. How many fewer depends on how the requests' arrival spreads out.
    const batches = server.metrics.batchSize.stats({ model: MODEL, version: '1' });
    expect(batches.sum).toBe(96);
    expect(batches.count).toBeLessThan(80);
  });
});
