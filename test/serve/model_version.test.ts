/**
 * One loaded version: the checks against config.pbtxt at load, the warm-up, and retirement, which
 * waits for the requests still holding the version before releasing its session.
 */
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ArtifactError } from '../../src/core/errors.js';
import { decodeInferRequest } from '../../src/serve/decode.js';
import { parseJsonBody } from '../../src/serve/json_body.js';
import { modelSpecFromConfig } from '../../src/serve/model_spec.js';
import { loadModelVersion, zeroRequest } from '../../src/serve/model_version.js';
import { InlineSessionHost, type HostedSession, type SessionHost } from '../../src/serve/session_host.js';
import { syntheticConfig } from '../../src/loadgen/synthetic_model.js';
import { INT64_MIN, inferBody, MODEL, RTI_PATH, tempRepo, txRequest } from './helpers.js';

const repo = tempRepo({});
afterAll(() => repo.cleanup());
const folder = { version: 1, dir: join(repo.root, MODEL, '1'), modelPath: join(repo.root, MODEL, '1', 'model.onnx'), fingerprint: 'x' };

/** A host whose sessions count their releases. */
function countingHost(): SessionHost & { released: number } {
  const inner = new InlineSessionHost();
  const host = {
    kind: 'main' as const,
    released: 0,
    async load(path: string): Promise<HostedSession> {
      const s = await inner.load(path);
      return { info: s.info, run: (f, o) => s.run(f, o), release: async () => { host.released++; await s.release(); } };
    },
    close: () => inner.close(),
  };
  return host;
}

describe('loadModelVersion', () => {
  it('lists every mismatch between the config and the ONNX model, and releases the session', async () => {
    const cfg = syntheticConfig();
    cfg.input![0] = { name: 'anchor_time', data_type: 'TYPE_FP32', dims: [1] };
    cfg.input![2] = { name: 'transactions.amount', data_type: 'TYPE_FP32', dims: [1] };
    cfg.output![0] = { name: 'probability', data_type: 'TYPE_FP32', dims: [2] };
    const host = countingHost();
    const err = await loadModelVersion(host, modelSpecFromConfig(cfg, MODEL), folder).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ArtifactError);
    const text = (err as ArtifactError).message;
    expect(text).toMatch(/input "anchor_time": config.pbtxt says FP32, the ONNX model has int64/);
    expect(text).toMatch(/config input "transactions.amount" is not an input of the ONNX model/);
    expect(text).toMatch(/the ONNX model has input "transactions.price", which config.pbtxt does not declare/);
    expect(host.released).toBe(1);
  });

  it('finds the axes that share a symbolic dimension (the RTI sequence length)', async () => {
    const v = await loadModelVersion(new InlineSessionHost(), modelSpecFromConfig(syntheticConfig(), MODEL), folder);
    expect(v.sharedDims).toEqual([
      [
        { input: `${RTI_PATH}:price`, axis: 1 },
        { input: `${RTI_PATH}:t_dat`, axis: 1 },
      ],
    ]);
    await v.retire();
  });

  it('warms up with a zero request whose variable dims hold the pad value', () => {
    const feeds = zeroRequest(modelSpecFromConfig(syntheticConfig(), MODEL));
    expect(feeds.get(`${RTI_PATH}:t_dat`)).toEqual({ datatype: 'INT64', shape: [1, 1, 1], data: BigInt64Array.of(INT64_MIN) });
    expect(feeds.get('transactions.customer_id')).toEqual({ datatype: 'BYTES', shape: [1, 1], data: [''] });
  });
});

describe('ModelVersion.retire', () => {
  it('waits for in-flight requests, then releases the session; refuses new ones meanwhile', async () => {
    const host = countingHost();
    const spec = modelSpecFromConfig(syntheticConfig({ maxQueueDelayUs: 300_000 }), MODEL);
    const v = await loadModelVersion(host, spec, folder);
    expect(v.acquire()).toBe(true);
    const req = decodeInferRequest(parseJsonBody(inferBody(txRequest(1, 3))), spec);
    const answer = v.infer(req);
    let retired = false;
    const retiring = v.retire().then(() => (retired = true));
    expect(v.state).toBe('retiring');
    expect(v.acquire()).toBe(false);
    await new Promise((r) => setTimeout(r, 50));
    expect(retired).toBe(false);
    expect((await answer).get('probability')!.shape).toEqual([1, 1]);
    expect(host.released).toBe(0);
    v.release();
    await retiring;
    expect(v.state).toBe('released');
    expect(host.released).toBe(1);
  });
});
