/**
 * Hot reload under load: new versions are picked up and switched to without a failed request; broken,
 * half-written and temporary version folders never serve; a broken config leaves the old one serving.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { writeModelConfig } from '../../src/artifacts/triton/pbtxt.js';
import { buildSyntheticModel, syntheticConfig, writeVersionFolder } from '../../src/loadgen/synthetic_model.js';
import { batchOneAnswers, get, infer, inferBody, MODEL, startTestServer, tempRepo, txRequest, waitFor, type TempRepo, type TestServer } from './helpers.js';

const open: { server?: TestServer; repo: TempRepo }[] = [];
afterAll(async () => {
  for (const o of open) {
    await o.server?.stop();
    o.repo.cleanup();
  }
});

/** Clients sending requests back to back until stopped; every response is recorded. */
function loadLoop(url: string, clients: number) {
  const results: { status: number; version?: string; error?: string }[] = [];
  let running = true;
  const loops = Array.from({ length: clients }, async (_, c) => {
    for (let i = 0; running; i++) {
      const r = await infer(url, inferBody(txRequest(c * 100_000 + i, (i * 5 + c) % 33)));
      results.push({ status: r.status, version: r.body.model_version, error: r.body.error });
    }
  });
  return {
    results,
    versions: () => new Set(results.map((r) => r.version)),
    stop: async () => {
      running = false;
      await Promise.all(loops);
    },
  };
}

describe.each(['main', 'worker'] as const)('hot reload (onnxruntime on the %s thread)', (ortThread) => {
  it('switches to new versions under load without a failed request; refuses broken and ignores incomplete ones', async () => {
    const repo = tempRepo({ seed: 1, maxBatchSize: 16, maxQueueDelayUs: 500 });
    const entry: { server?: TestServer; repo: TempRepo } = { repo };
    open.push(entry);
    const modelDir = join(repo.root, MODEL);
    const server = await startTestServer(repo.root, { ortThread, pollIntervalMs: 100 });
    entry.server = server;
    const load = loadLoop(server.url, 6);
    try {
      await waitFor(() => load.results.length > 50, 20_000, 'first responses');

      // A new version, written the way the exporter writes it (temp folder, then rename).
      writeVersionFolder(modelDir, 2, buildSyntheticModel({ seed: 2 }));
      await waitFor(() => load.results.slice(-20).every((r) => r.version === '2') && load.results.length > 0, 20_000, 'the switch to version 2');
      // Version 1 is released once its in-flight requests are done.
      await waitFor(async () => !(await get(server.url, '/metrics')).text.includes('version="1",platform'), 20_000, 'version 1 to be released');

      // A broken version: refused with a log line, version 2 keeps serving.
      mkdirSync(join(modelDir, '.tmp-3-build'));
      writeFileSync(join(modelDir, '.tmp-3-build', 'model.onnx'), 'not an onnx model');
      writeVersionFolder(modelDir, 3, new TextEncoder().encode('not an onnx model either'));
      await waitFor(() => server.logs.some((l) => /version 3: refused/.test(l)), 20_000, 'version 3 to be refused');
      // Half-written: a folder without model.onnx yet, and a temporary folder, are ignored.
      mkdirSync(join(modelDir, '5'));
      mkdirSync(join(modelDir, '.tmp-6'));
      writeFileSync(join(modelDir, '.tmp-6', 'model.onnx'), buildSyntheticModel({ seed: 6 }));
      await waitFor(() => server.logs.some((l) => /5: no model\.onnx yet/.test(l)), 20_000, 'version 5 to be skipped');
      const before = load.results.length;
      await waitFor(() => load.results.length > before + 50, 20_000, 'more responses');
      expect(load.results.slice(before).every((r) => r.version === '2')).toBe(true);

      const index = (await get(server.url, '/v2/repository/index', 'POST')).json() as { version?: string; state: string; reason?: string }[];
      expect(index).toContainEqual({ name: MODEL, version: '2', state: 'READY' });
      expect(index).toContainEqual(expect.objectContaining({ name: MODEL, version: '3', state: 'UNAVAILABLE', reason: expect.stringMatching(/onnxruntime cannot load the model/) }));

      // The half-written folder completes: version 5 loads (the broken 3 stays refused).
      writeFileSync(join(modelDir, '5', 'model.onnx'), buildSyntheticModel({ seed: 5 }));
      await waitFor(() => load.results.slice(-10).every((r) => r.version === '5'), 20_000, 'the switch to version 5');

      // A broken config is refused; the loaded version keeps serving under the old one.
      writeFileSync(join(modelDir, 'config.pbtxt'), 'max_batch_size: "many"\n');
      await waitFor(() => server.logs.some((l) => /refusing config\.pbtxt/.test(l)), 20_000, 'the config to be refused');
      const mark = load.results.length;
      await waitFor(() => load.results.length > mark + 30, 20_000, 'more responses');
      expect(load.results.slice(mark).every((r) => r.version === '5')).toBe(true);
    } finally {
      await load.stop();
    }
    const failed = load.results.filter((r) => r.status !== 200);
    expect(failed).toEqual([]);
    expect(load.versions()).toEqual(new Set(['1', '2', '5']));
    expect(server.logs.some((l) => /version 6/.test(l))).toBe(false);

    // After the switch, answers are version 5's.
    const req = txRequest(7, 9);
    const [v5] = await batchOneAnswers(join(modelDir, '5', 'model.onnx'), [req]);
    expect((await infer(server.url, inferBody(req))).body.outputs![0]!.data[0]).toBeCloseTo(v5!, 6);
  });
});

describe('version policy', () => {
  it('latest { num_versions: 2 } serves the two newest versions; requests without a version get the newest', async () => {
    const repo = tempRepo({ seed: 1, config: { version_policy: { latest: { num_versions: 2 } } } });
    const entry: { server?: TestServer; repo: TempRepo } = { repo };
    open.push(entry);
    const modelDir = join(repo.root, MODEL);
    writeVersionFolder(modelDir, 2, buildSyntheticModel({ seed: 2 }));
    writeVersionFolder(modelDir, 3, buildSyntheticModel({ seed: 3 }));
    const server = await startTestServer(repo.root);
    entry.server = server;
    expect(((await get(server.url, `/v2/models/${MODEL}`)).json() as { versions: string[] }).versions).toEqual(['2', '3']);
    const body = inferBody(txRequest(1, 3));
    expect((await infer(server.url, body)).body.model_version).toBe('3');
    expect((await infer(server.url, body, '2')).body.model_version).toBe('2');
    expect((await infer(server.url, body, '1')).status).toBe(404);
  });

  it('a config change reloads every version with the new config', async () => {
    const repo = tempRepo({ seed: 1, maxBatchSize: 4 });
    const entry: { server?: TestServer; repo: TempRepo } = { repo };
    open.push(entry);
    const server = await startTestServer(repo.root, { pollIntervalMs: 50 });
    entry.server = server;
    const config = () => (get(server.url, `/v2/models/${MODEL}/config`).then((r) => r.json())) as Promise<{ max_batch_size: number }>;
    expect((await config()).max_batch_size).toBe(4);
    writeFileSync(join(repo.root, MODEL, 'config.pbtxt'), writeModelConfig(syntheticConfig({ maxBatchSize: 32 })));
    await waitFor(async () => (await config()).max_batch_size === 32, 20_000, 'the new config');
    expect((await infer(server.url, inferBody(txRequest(1, 3)))).status).toBe(200);

    // A config the model does not match (a renamed input) is refused as a whole; the old one keeps serving.
    const mismatched = syntheticConfig({ maxBatchSize: 16 });
    mismatched.input![2] = { ...mismatched.input![2]!, name: 'transactions.amount' };
    writeFileSync(join(repo.root, MODEL, 'config.pbtxt'), writeModelConfig(mismatched));
    await waitFor(() => server.logs.some((l) => /refusing the new config\.pbtxt/.test(l)), 20_000, 'the mismatched config to be refused');
    expect(server.logs.some((l) => /config input "transactions.amount" is not an input of the ONNX model/.test(l))).toBe(true);
    expect((await config()).max_batch_size).toBe(32);
    expect((await infer(server.url, inferBody(txRequest(1, 3)))).status).toBe(200);
  });
});
