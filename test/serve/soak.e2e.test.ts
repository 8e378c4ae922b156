/**
 * A 10-second soak through `gnnctl bench serve` itself: open-loop load at a moderate rate with RTI
 * sequences of 0..32 elements and a mix of known and unknown keys, zero errors expected. Latency is
 * reported, not asserted (benchmarks live in bench/; this machine is shared).
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { benchServeCommand } from '../../src/cli/commands/bench.js';
import { syntheticKey } from '../../src/loadgen/synthetic_model.js';
import type { BenchServeResult } from '../../src/loadgen/bench_serve.js';
import { MODEL, startTestServer, tempRepo, type TempRepo, type TestServer } from './helpers.js';

let repo: TempRepo;
let server: TestServer;
afterAll(async () => {
  await server?.stop();
  repo?.cleanup();
});

describe('soak', () => {
  it('10 s at 250 req/s: every request answered, none failed', async () => {
    repo = tempRepo({ rows: 1000, maxBatchSize: 32, maxQueueDelayUs: 1000 });
    server = await startTestServer(repo.root, { pollIntervalMs: 500 });
    const keys = join(repo.root, 'keys.txt');
    writeFileSync(keys, Array.from({ length: 1000 }, (_, i) => syntheticKey(i)).join('\n'));

    const out = await benchServeCommand({ url: server.url, model: MODEL, rate: '250', duration: '10', pool: '64', keys, knownKeyRate: '0.8', json: true });
    const r = out.result as BenchServeResult;
    expect(r.error_kinds).toEqual({});
    expect(r.errors).toBe(0);
    expect(r.sent).toBe(2500);
    expect(r.ok).toBe(2500);
    expect(r.pool.known_key_share).toBeGreaterThan(0.6);
    expect(r.pool.known_key_share).toBeLessThan(0.95);
    expect(r.server?.requests).toBe(2500);
    expect(Object.keys(r.server!.phase_ms_per_request).sort()).toEqual(['compute', 'decode', 'merge', 'parse', 'queue', 'read', 'respond', 'split']);
    expect(out.text).toMatch(/achieved +\d+(\.\d)? req\/s: 2500 ok, 0 errors/);
    console.log(out.text);
  }, 60_000);
});
