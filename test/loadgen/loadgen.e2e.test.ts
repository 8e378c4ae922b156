/**
 * The load generator's parts: the request pool (shapes from metadata, RTI lengths, keys, exact INT64),
 * both HTTP clients, error accounting by kind, and known keys read from an embeddings.parquet.
 */
import { createServer, type Server } from 'node:http';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { withDuck } from '../../src/data/duck.js';
import { benchServe } from '../../src/loadgen/bench_serve.js';
import { runOpenLoop } from '../../src/loadgen/open_loop.js';
import { buildRequestPool, type ModelMetadata } from '../../src/loadgen/request_pool.js';
import { parseJsonBody } from '../../src/serve/json_body.js';
import { KEY_INPUT, MODEL, RTI_PATH, startTestServer, tempRepo, type TempRepo, type TestServer } from '../serve/helpers.js';

const meta: ModelMetadata = {
  name: MODEL,
  inputs: [
    { name: 'anchor_time', datatype: 'INT64', shape: [-1, 1] },
    { name: KEY_INPUT, datatype: 'BYTES', shape: [-1, 1] },
    { name: 'transactions.price', datatype: 'FP32', shape: [-1, 1] },
    { name: `${RTI_PATH}:price`, datatype: 'FP32', shape: [-1, -1, 1] },
    { name: `${RTI_PATH}:t_dat`, datatype: 'INT64', shape: [-1, -1, 1] },
  ],
  outputs: [{ name: 'probability', datatype: 'FP32', shape: [-1, 1] }],
};

// Every input of this model is at least two-dimensional: batch, then one value or the RTI length.
type Body = { inputs: { name: string; shape: [number, number, ...number[]]; data: unknown[] }[] };

describe('buildRequestPool', () => {
  it('builds distinct requests with RTI lengths 0..32, known and unknown keys, exact INT64 times before the anchor', () => {
    const anchorNs = 1_710_000_000_000_000_123n;
    const pool = buildRequestPool(meta, { size: 300, knownKeys: ['k1', 'k2'], knownKeyRate: 0.5, timeInputs: new Set([`${RTI_PATH}:t_dat`]), anchorNs });
    expect(pool.bodies).toHaveLength(300);
    const parsed = pool.bodies.map((b) => parseJsonBody(b.toString()) as Body);
    const lengths = new Set(parsed.map((p) => p.inputs[3]!.shape[1]));
    expect(Math.min(...lengths)).toBe(0);
    expect(Math.max(...lengths)).toBe(32);
    for (let i = 1; i < parsed.length; i++) expect(pool.bodies[i]!.equals(pool.bodies[i - 1]!)).toBe(false);
    const keys = parsed.map((p) => p.inputs[1]!.data[0] as string);
    const known = keys.filter((k) => k === 'k1' || k === 'k2').length;
    expect(known / 300).toBeCloseTo(pool.knownKeyShare, 6);
    expect(pool.knownKeyShare).toBeGreaterThan(0.35);
    expect(pool.knownKeyShare).toBeLessThan(0.65);
    for (const p of parsed) {
      expect(p.inputs[0]!.data).toEqual([String(anchorNs)]);
      const t = p.inputs[4]!.data.map((v) => BigInt(v as string));
      expect(t.length).toBe(p.inputs[3]!.shape[1]);
      expect(t.every((v) => v < anchorNs)).toBe(true);
      expect(t.every((v, i) => i === 0 || v >= t[i - 1]!)).toBe(true);
    }
  });
});

describe('buildRequestPool with keys per input', () => {
  it('feeds each key input its own known keys (customer ids never land in article_id)', () => {
    const two: ModelMetadata = {
      ...meta,
      inputs: [...meta.inputs, { name: 'transactions.article_id', datatype: 'BYTES', shape: [-1, 1] }, { name: 'transactions.transaction_id', datatype: 'INT64', shape: [-1, 1] }],
    };
    const knownKeys = new Map([
      [KEY_INPUT, ['c1', 'c2']],
      ['transactions.article_id', ['a1']],
    ]);
    const pool = buildRequestPool(two, { size: 200, knownKeys, knownKeyRate: 1 });
    expect(pool.knownKeyShare).toBe(1);
    for (const b of pool.bodies) {
      const p = parseJsonBody(b.toString()) as Body;
      const value = (name: string): unknown => p.inputs.find((i) => i.name === name)!.data[0];
      expect(['c1', 'c2']).toContain(value(KEY_INPUT));
      expect(value('transactions.article_id')).toBe('a1');
      expect(Number(value('transactions.transaction_id'))).toBeGreaterThanOrEqual(10_000_000_000); // no keys given: unknown
    }
  });
});

describe('runOpenLoop', () => {
  let server: Server;
  let url: string;
  let closeEvery = 0;
  beforeAll(async () => {
    let n = 0;
    server = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        n++;
        const status = n % 10 === 0 ? 503 : 200;
        // Every few answers close the connection, as a server shutting down does.
        res.writeHead(status, { 'Content-Type': 'application/json', ...(closeEvery > 0 && n % closeEvery === 0 ? { Connection: 'close' } : {}) });
        res.end('{}');
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));

  it.each(['raw', 'node'] as const)('%s client: sends on schedule, counts errors by kind, survives Connection: close', async (client) => {
    closeEvery = 7;
    const r = await runOpenLoop({ url, path: '/x', bodies: [Buffer.from('{"a":1}'), Buffer.from('{"a":2}')], rate: 200, durationS: 1, connections: 4, client });
    expect(r.sent).toBe(200);
    expect(r.ok + r.errors).toBe(200);
    expect(r.error_kinds).toEqual({ http_503: 20 });
    expect(r.latency_ms.p50).toBeGreaterThan(0);
  });

  it('counts refused connections', async () => {
    const r = await runOpenLoop({ url: 'http://127.0.0.1:1', path: '/x', bodies: [Buffer.from('{}')], rate: 50, durationS: 0.2 });
    expect(r.ok).toBe(0);
    expect(r.error_kinds).toEqual({ ECONNREFUSED: 10 });
  });
});

describe('benchServe', () => {
  let repo: TempRepo;
  let server: TestServer;
  beforeAll(async () => {
    repo = tempRepo({ rows: 50 });
    server = await startTestServer(repo.root);
  });
  afterAll(async () => {
    await server?.stop();
    repo?.cleanup();
  });

  it('reads known keys from an embeddings.parquet', async () => {
    const file = join(repo.root, 'embeddings.parquet');
    await withDuck(async ({ conn }) => {
      await conn.run(`COPY (SELECT 'c' || lpad(i::VARCHAR, 7, '0') AS customer_id, [1.0, 2.0]::FLOAT[] AS embedding, TIMESTAMP '2024-01-01' AS anchor_time FROM range(50) t(i)) TO '${file}' (FORMAT parquet)`);
    });
    const r = await benchServe({ url: server.url, model: MODEL, rate: 100, durationS: 0.5, keysFile: file, knownKeyRate: 1, poolSize: 20 });
    expect(r.errors).toBe(0);
    expect(r.pool.known_key_share).toBe(1);
    expect(r.server?.requests).toBe(50);
  });

  it('refuses a keys file whose key column no input takes, naming the key inputs', async () => {
    const file = join(repo.root, 'articles.parquet');
    await withDuck(async ({ conn }) => {
      await conn.run(`COPY (SELECT 'a' || i::VARCHAR AS article_id, [1.0]::FLOAT[] AS embedding FROM range(5) t(i)) TO '${file}' (FORMAT parquet)`);
    });
    await expect(benchServe({ url: server.url, model: MODEL, rate: 10, durationS: 0.1, keysFile: [file] })).rejects.toThrow(/no input of model .* takes the keys of .*articles\.parquet \(column article_id\)/);
  });

  it('names an unknown model', async () => {
    await expect(benchServe({ url: server.url, model: 'nope', rate: 10, durationS: 0.1 })).rejects.toThrow(/cannot get the metadata of model "nope".*HTTP 404/);
  });
});
