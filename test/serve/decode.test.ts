import { describe, expect, it } from 'vitest';
import { decodeInferRequest } from '../../src/serve/decode.js';
import { HttpError } from '../../src/serve/http_error.js';
import { parseJsonBody } from '../../src/serve/json_body.js';
import { modelSpecFromConfig } from '../../src/serve/model_spec.js';
import { syntheticConfig } from '../../src/loadgen/synthetic_model.js';
import { ANCHOR, inferBody, KEY_INPUT, RTI_PATH, txRequest } from './helpers.js';

const spec = modelSpecFromConfig(syntheticConfig({ maxBatchSize: 8 }), 'online-model');
const sharedDims = [[{ input: `${RTI_PATH}:price`, axis: 1 }, { input: `${RTI_PATH}:t_dat`, axis: 1 }]];

function decode(body: unknown) {
  return decodeInferRequest(typeof body === 'string' ? parseJsonBody(body) : body, spec, { sharedDims });
}

function error400(body: unknown): string {
  try {
    decode(body);
  } catch (e) {
    expect(e).toBeInstanceOf(HttpError);
    expect((e as HttpError).status).toBe(400);
    return (e as HttpError).message;
  }
  throw new Error('expected an HTTP 400');
}

/** The request as a mutable object, for breaking one thing at a time. */
function requestObject(seq = 3): { id?: string; inputs: Record<string, unknown>[]; outputs?: unknown } {
  return JSON.parse(inferBody({ ...txRequest(1, seq), anchor: 1_000n, rti: txRequest(1, seq).rti.map((e, k) => ({ ...e, t: BigInt(k) })) })) as never;
}

describe('parseJsonBody', () => {
  it('keeps 64-bit integers exact (JSON.parse would round them)', () => {
    const v = parseJsonBody('{"a":[1710000000000000123, -9223372036854775808, 9007199254740993, 12, 1.5], "b":"12345678901234567890,x"}') as { a: unknown[]; b: string };
    expect(v.a).toEqual(['1710000000000000123', '-9223372036854775808', '9007199254740993', 12, 1.5]);
    expect(v.b).toBe('12345678901234567890,x');
  });

  it('never alters strings that contain long digit runs', () => {
    const body = '{"s":[",12345678901234567890]", "[1234567890123456789]"], "n": [1234567890123456789]}';
    expect(parseJsonBody(body)).toEqual({ s: [',12345678901234567890]', '[1234567890123456789]'], n: ['1234567890123456789'] });
  });

  it('leaves long fractional and exponent numbers as numbers', () => {
    expect(parseJsonBody('[2.5757740683977848, 1.25e300, 12345678901234567.5]')).toEqual([2.5757740683977848, 1.25e300, 12345678901234567.5]);
  });

  it('answers 400 for a body that is not JSON', () => {
    expect(() => parseJsonBody('{"inputs": [')).toThrow(/failed to parse the request body as JSON/);
  });
});

describe('decodeInferRequest', () => {
  it('decodes the Kumo-shaped request into typed tensors', () => {
    const r = decode(inferBody(txRequest(3, 4)));
    expect(r.id).toBe('req-3');
    expect(r.batch).toBe(1);
    expect([...r.inputs.keys()]).toEqual(spec.inputs.map((s) => s.name));
    const anchor = r.inputs.get('anchor_time')!;
    expect(anchor.data).toEqual(BigInt64Array.of(ANCHOR + 3n));
    expect(r.inputs.get(KEY_INPUT)!.data).toEqual(['c0000111']);
    expect(r.inputs.get(`${RTI_PATH}:t_dat`)!.shape).toEqual([1, 4, 1]);
    expect(r.inputs.get(`${RTI_PATH}:price`)!.data).toBeInstanceOf(Float32Array);
    expect(r.batchKey).toBe('');
  });

  it('accepts nested data (row-major) and INT64 as decimal strings', () => {
    const body = requestObject(2);
    body.inputs[3]!.data = [[[1.5], [2.5]]];
    body.inputs[4]!.data = [[['5'], [6]]];
    const r = decode(body);
    expect(r.inputs.get(`${RTI_PATH}:price`)!.data).toEqual(Float32Array.of(1.5, 2.5));
    expect(r.inputs.get(`${RTI_PATH}:t_dat`)!.data).toEqual(BigInt64Array.of(5n, 6n));
  });

  it('accepts an empty RTI sequence', () => {
    const r = decode(inferBody(txRequest(3, 0)));
    expect(r.inputs.get(`${RTI_PATH}:price`)!.shape).toEqual([1, 0, 1]);
  });

  it('answers with the requested outputs only', () => {
    expect(decode(inferBody(txRequest(1, 1), { outputs: [{ name: 'probability' }] })).outputs).toEqual(['probability']);
  });

  const cases: [string, (b: ReturnType<typeof requestObject>) => unknown, RegExp][] = [
    ['body not an object', () => [1, 2], /must be a JSON object \(got an array\)/],
    ['inputs missing', (b) => ({ id: b.id }), /"inputs" must be an array/],
    ['unknown input', (b) => ({ inputs: [...b.inputs, { name: 'transactions.colour', datatype: 'FP32', shape: [1, 1], data: [1] }] }), /unexpected inference input "transactions.colour" for model "online-model"/],
    ['missing input', (b) => ({ inputs: b.inputs.slice(1) }), /expects input "anchor_time", missing from the request/],
    ['duplicate input', (b) => ({ inputs: [...b.inputs, b.inputs[0]] }), /"anchor_time" is given more than once/],
    ['wrong datatype', (b) => ({ inputs: b.inputs.map((t, i) => (i === 2 ? { ...t, datatype: 'FP64' } : t)) }), /"transactions.price" has datatype "FP64", but model "online-model" expects FP32/],
    ['wrong rank', (b) => ({ inputs: b.inputs.map((t, i) => (i === 2 ? { ...t, shape: [1] } : t)) }), /has shape \[1\] but model "online-model" expects 2 dimensions: \[-1,1\]/],
    ['wrong fixed dim', (b) => ({ inputs: b.inputs.map((t, i) => (i === 2 ? { ...t, shape: [1, 2], data: [1, 2] } : t)) }), /has shape \[1,2\], but model "online-model" expects \[-1,1\]/],
    ['data length mismatch', (b) => ({ inputs: b.inputs.map((t, i) => (i === 3 ? { ...t, data: [1] } : t)) }), /has 1 data elements, but its shape \[1,3,1\] holds 3/],
    ['nested data of the wrong size', (b) => ({ inputs: b.inputs.map((t, i) => (i === 3 ? { ...t, data: [[[1], [2]]] } : t)) }), /data\[0\] has 2 elements, but shape \[1,3,1\] needs 3/],
    ['element of the wrong type', (b) => ({ inputs: b.inputs.map((t, i) => (i === 2 ? { ...t, data: ['x'] } : t)) }), /element 0 is "x", not a number \(datatype FP32\)/],
    ['string for BYTES expected', (b) => ({ inputs: b.inputs.map((t, i) => (i === 1 ? { ...t, data: [42] } : t)) }), /element 0 is 42, not a string/],
    ['INT64 out of range', (b) => ({ inputs: b.inputs.map((t, i) => (i === 0 ? { ...t, data: ['9223372036854775808'] } : t)) }), /not in range/],
    ['INT64 not an integer', (b) => ({ inputs: b.inputs.map((t, i) => (i === 0 ? { ...t, data: [1.5] } : t)) }), /not an integer/],
    ['batch over max_batch_size', (b) => ({ inputs: b.inputs.map((t) => ({ ...t, shape: [9, ...(t.shape as number[]).slice(1)] })) }), /batch size 9 for model "online-model" is larger than its max_batch_size 8/],
    ['batch sizes differ', (b) => ({ inputs: b.inputs.map((t, i) => (i === 0 ? { ...t, shape: [2, 1], data: [1, 2] } : t)) }), /different batch sizes/],
    ['RTI lengths differ', (b) => ({ inputs: b.inputs.map((t, i) => (i === 4 ? { ...t, shape: [1, 2, 1], data: [1, 2] } : t)) }), /share a dimension in the model but have sizes 3 and 2/],
    ['unknown output', (b) => ({ ...b, outputs: [{ name: 'score' }] }), /unexpected inference output "score"/],
    ['binary data without the header length', (b) => ({ inputs: b.inputs.map((t, i) => (i === 0 ? { name: t.name, datatype: t.datatype, shape: t.shape, parameters: { binary_data_size: 8 } } : t)) }), /no Inference-Header-Content-Length header/],
    ['id not a string', (b) => ({ ...b, id: 7 }), /"id" must be a string/],
  ];
  it.each(cases)('answers 400: %s', (_, mutate, message) => {
    expect(error400(mutate(requestObject()))).toMatch(message);
  });
});
