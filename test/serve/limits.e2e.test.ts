/**
 * Request limits and fallbacks: capped sequence lengths, deadlines (Triton's `timeout` parameter and the
 * server default) that end in a clear 504 rather than a hang, and inputs with a missing value that a
 * request may leave out or send as null.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseJsonBody } from '../../src/serve/json_body.js';
import { batchOneAnswers, waitFor, get, infer, inferBody, MODEL, post, RTI_PATH, startTestServer, tempRepo, txRequest, type TempRepo, type TestServer } from './helpers.js';

const withParameters = (body: string, parameters: Record<string, unknown>) => `${body.slice(0, -1)},"parameters":${JSON.stringify(parameters)}}`;

describe('sequence caps', () => {
  let repo: TempRepo;
  let server: TestServer;
  beforeAll(async () => {
    // The price sequence has its own cap of 3 in config.pbtxt; the time sequence falls under the server's 4.
    repo = tempRepo({ maxBatchSize: 8, config: { parameters: { [`pad_value:${RTI_PATH}:t_dat`]: { string_value: '-9223372036854775808' }, [`max_sequence_length:${RTI_PATH}:t_dat`]: { string_value: '3' } } } });
    server = await startTestServer(repo.root, { maxSequenceLength: 4 });
  });
  afterAll(async () => {
    await server?.stop();
    repo?.cleanup();
  });

  it('accepts sequences up to the cap', async () => {
    expect((await infer(server.url, inferBody(txRequest(1, 3)))).status).toBe(200);
  });

  it('refuses a longer sequence with 400 naming the input, the cap and where it comes from', async () => {
    const r = await infer(server.url, inferBody(txRequest(1, 4)));
    expect(r.status).toBe(400);
    expect(r.body.error).toBe(
      `inference input "${RTI_PATH}:t_dat" has 4 elements along dimension 1 (shape [1,4,1]), more than its cap of 3 (max_sequence_length:${RTI_PATH}:t_dat in config.pbtxt); send the 3 most recent`,
    );
  });

  it('the server-wide cap applies to inputs without their own', async () => {
    const body = inferBody(txRequest(1, 5));
    const r = await infer(server.url, body);
    expect(r.status).toBe(400);
    expect(r.body.error).toMatch(new RegExp(`"${RTI_PATH}:price" has 5 elements .* more than its cap of 4 \\(gnnctl serve --max-sequence-length\\)`));
  });
});

describe('deadlines', () => {
  let repo: TempRepo;
  let server: TestServer;
  beforeAll(async () => {
    // Requests wait 1.5 s in the batcher for company: longer than the deadlines below.
    repo = tempRepo({ maxBatchSize: 8, maxQueueDelayUs: 1_500_000 });
    server = await startTestServer(repo.root, { requestTimeoutMs: 300 });
  });
  afterAll(async () => {
    await server?.stop();
    repo?.cleanup();
  });

  it("Triton's timeout parameter (µs) ends the request with 504", async () => {
    const r = await infer(server.url, withParameters(inferBody(txRequest(1, 2)), { timeout: 50_000 }));
    expect(r.status).toBe(504);
    expect(r.body.error).toBe(`model "${MODEL}" version 1: no answer within the request's deadline of 50 ms (parameters.timeout 50000 µs)`);
  });

  it('without one, the server default applies', async () => {
    const r = await infer(server.url, inferBody(txRequest(1, 2)));
    expect(r.status).toBe(504);
    expect(r.body.error).toMatch(/deadline of 300 ms \(the server's --request-timeout\)/);
  });

  it('timeout 0 means none, as in Triton: the request waits out the queue delay and is answered', async () => {
    const waiting = infer(server.url, withParameters(inferBody(txRequest(1, 2)), { timeout: 0 }));
    // Meanwhile it is one pending request in Triton's gauge.
    await waitFor(async () => /^nv_inference_pending_request_count\{model="online-model",version="1"\} 1$/m.test((await get(server.url, '/metrics')).text), 1000, 'a pending request');
    expect((await waiting).status).toBe(200);
  });

  it('a malformed timeout is a 400', async () => {
    const r = await infer(server.url, withParameters(inferBody(txRequest(1, 2)), { timeout: '1s' }));
    expect([r.status, r.body.error]).toEqual([400, 'parameters.timeout must be a non-negative integer number of microseconds, as in Triton (got string "1s")']);
  });

  it('expired requests count as REJECTED failures', async () => {
    const text = (await get(server.url, '/metrics')).text;
    expect(text).toMatch(new RegExp(`^nv_inference_request_failure\\{model="${MODEL}",reason="REJECTED",version="1"\\} 2$`, 'm'));
  });
});

describe('missing values', () => {
  let repo: TempRepo;
  let server: TestServer;
  const FILL = 12.5;
  beforeAll(async () => {
    repo = tempRepo({
      maxBatchSize: 8,
      config: {
        parameters: {
          [`pad_value:${RTI_PATH}:t_dat`]: { string_value: '-9223372036854775808' },
          'missing_value:transactions.price': { string_value: String(FILL) },
          [`missing_value:${RTI_PATH}:price`]: { string_value: '1' },
        },
      },
    });
    server = await startTestServer(repo.root);
  });
  afterAll(async () => {
    await server?.stop();
    repo?.cleanup();
  });

  it('an input left out takes its missing value, as if the client had sent it', async () => {
    const req = { ...txRequest(2, 3), price: FILL };
    const [expected] = await batchOneAnswers(join(repo.root, MODEL, '1', 'model.onnx'), [req]);
    // parseJsonBody keeps the INT64 times exact (as decimal strings, which the server reads back).
    const b = parseJsonBody(inferBody(req)) as { inputs: { name: string }[] };
    const omitted = { ...b, inputs: b.inputs.filter((t) => t.name !== 'transactions.price') };
    const r = await infer(server.url, JSON.stringify(omitted));
    expect(r.status).toBe(200);
    expect(r.body.outputs![0]!.data[0]).toBeCloseTo(expected!, 6);
  });

  it('null elements take the missing value, in fact and sequence inputs', async () => {
    const req = { ...txRequest(3, 2), price: FILL };
    req.rti[1]!.price = 1;
    const [expected] = await batchOneAnswers(join(repo.root, MODEL, '1', 'model.onnx'), [req]);
    const body = inferBody(req).replace(`"transactions.price","datatype":"FP32","shape":[1,1],"data":[${FILL}]`, '"transactions.price","datatype":"FP32","shape":[1,1],"data":[null]').replace(`,1]},{"name":"${RTI_PATH}:t_dat"`, `,null]},{"name":"${RTI_PATH}:t_dat"`);
    expect(body).toContain('"data":[null]');
    expect(body).toContain(',null]}');
    const r = await infer(server.url, body);
    expect(r.status).toBe(200);
    expect(r.body.outputs![0]!.data[0]).toBeCloseTo(expected!, 6);
  });

  it('null is still refused for an input without a missing value, and a sequence input cannot be left out', async () => {
    const r = await infer(server.url, inferBody(txRequest(1, 1)).replace(/"data":\[(\d+)\]/, '"data":[null]'));
    expect(r.status).toBe(400);
    expect(r.body.error).toMatch(/inference input "anchor_time": element 0 is null, not an integer/);
    const b = JSON.parse(inferBody({ ...txRequest(1, 0), anchor: 1n })) as { inputs: { name: string }[] };
    const r2 = await post(server.url, `/v2/models/${MODEL}/infer`, JSON.stringify({ inputs: b.inputs.filter((t) => t.name !== `${RTI_PATH}:price`) }));
    expect(r2.status).toBe(400);
    expect(r2.body.error).toMatch(new RegExp(`expects input "${RTI_PATH}:price", missing from the request`));
  });
});
