/**
 * Kumo-shaped load tests: request pools with RTI lengths N ∈ {4, 8, 16, 32}, written to and read from a
 * payload folder, and a sweep of offered rates, through the `gnnctl bench serve` binary.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildRequestPool, readPayloads, writePayloads, type ModelMetadata } from '../../src/loadgen/request_pool.js';
import { sweepChartSvg } from '../../src/loadgen/sweep_chart.js';
import { MODEL, RTI_PATH, startTestServer, tempRepo, type TempRepo, type TestServer } from '../serve/helpers.js';
import { BIN } from '../serve/spawn_serve.js';

const meta: ModelMetadata = {
  name: MODEL,
  inputs: [
    { name: 'anchor_time', datatype: 'INT64', shape: [-1, 1] },
    { name: 'transactions.customer_id', datatype: 'BYTES', shape: [-1, 1] },
    { name: `${RTI_PATH}:price`, datatype: 'FP32', shape: [-1, -1, 1] },
    { name: `${RTI_PATH}:t_dat`, datatype: 'INT64', shape: [-1, -1, 1] },
  ],
  outputs: [{ name: 'probability', datatype: 'FP32', shape: [-1, 1] }],
};

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'gnnctl-payloads-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('payload pools', () => {
  it('draws RTI lengths from the given list only, all of them', () => {
    const pool = buildRequestPool(meta, { size: 64, sequenceLengths: [4, 8, 16, 32] });
    const lengths = pool.bodies.map((b) => (JSON.parse(b.toString()) as { inputs: { shape: [number, number, ...number[]] }[] }).inputs[2]!.shape[1]);
    expect(new Set(lengths)).toEqual(new Set([4, 8, 16, 32]));
    expect(pool.meanSequence).toBe(lengths.reduce((a, b) => a + b, 0) / 64);
  });

  it('writes one request per file and reads them back byte for byte', () => {
    const pool = buildRequestPool(meta, { size: 8, sequenceLengths: [16] });
    const out = join(dir, 'roundtrip');
    expect(writePayloads(pool, out)).toHaveLength(8);
    const back = readPayloads(out);
    expect(back.bodies).toEqual(pool.bodies);
    expect(back.meanSequence).toBe(16);
    expect(back.minBytes).toBe(Math.min(...pool.bodies.map((b) => b.length)));
  });

  it('refuses a folder without requests, and files that are not inference requests, naming them', () => {
    const empty = join(dir, 'empty');
    writePayloads({ bodies: [], meanBytes: 0, knownKeyShare: 0, meanSequence: 0 }, empty);
    expect(() => readPayloads(empty)).toThrow(/--payloads holds no .json request files/);
    const bad = join(dir, 'bad');
    writePayloads({ bodies: [Buffer.from('{"inputs":[]}')], meanBytes: 0, knownKeyShare: 0, meanSequence: 0 }, bad);
    writeFileSync(join(bad, 'x.json'), '{"outputs":[]}');
    expect(() => readPayloads(bad)).toThrow(/no "inputs" array/);
    writeFileSync(join(bad, 'x.json'), '{');
    expect(() => readPayloads(bad)).toThrow(/the payload is not JSON/);
  });
});

describe('sweepChartSvg', () => {
  it('draws p50, p99 and p99.9 against the offered rate, one point per step, with the target line', () => {
    const step = (offered: number, p99: number) => ({ offered_qps: offered, achieved_qps: offered * 0.99, ok: 1, errors: 0, latency_ms: { p50: p99 / 4, p90: p99 / 2, p99, p999: p99 * 2, max: p99 * 3, mean: p99 / 3 }, within_target: p99 <= 10 });
    const svg = sweepChartSvg({
      url: 'u',
      model: 'm',
      pool: { size: 128, mean_bytes: 6000, min_bytes: 4500, max_bytes: 9000, known_key_share: 0.9, mean_sequence: 15, from: 'payloads' },
      p99_target_ms: 10,
      duration_s: 10,
      steps: [step(500, 3), step(1000, 4), step(2000, 30)],
      max_qps_within_target: 1000,
      saturation_qps: 1980,
    });
    for (const series of ['p50', 'p99', 'p99.9']) {
      const points = new RegExp(`<polyline data-series="${series.replace('.', '\\.')}"[^>]* points="([^"]+)"`).exec(svg)![1]!.split(' ');
      expect(points).toHaveLength(3);
    }
    expect(svg).toContain('p99 target 10 ms');
    expect(svg).toContain('>1980</text>');
    expect(svg.startsWith('<svg xmlns="http://www.w3.org/2000/svg"')).toBe(true);
  });
});

describe('gnnctl bench serve --write-payloads, --payloads, --sweep (the binary)', () => {
  let repo: TempRepo;
  let server: TestServer;
  beforeAll(async () => {
    repo = tempRepo({ maxBatchSize: 16, maxQueueDelayUs: 500 });
    server = await startTestServer(repo.root);
  });
  afterAll(async () => {
    await server?.stop();
    repo?.cleanup();
  });
  // Asynchronous: the server runs in this process, so a synchronous spawn would stop it from answering.
  const run = (args: string[]) =>
    new Promise<{ status: number; stdout: string; stderr: string }>((resolve) => {
      execFile(process.execPath, [BIN, 'bench', 'serve', '--url', server.url, '--model', MODEL, ...args], { encoding: 'utf8' }, (e, stdout, stderr) => {
        resolve({ status: e ? Number((e as { code?: number }).code ?? 1) : 0, stdout, stderr });
      });
    });

  it('writes Kumo-shaped payloads, then sweeps two rates with them', async () => {
    const payloads = join(dir, 'kumo');
    const w = await run(['--sequence-lengths', '4,8,16,32', '--pool', '16', '--write-payloads', payloads, '--duration', '1', '--json']);
    expect(w.status).toBe(0);
    expect(JSON.parse(w.stdout)).toMatchObject({ dir: payloads, files: 16 });
    expect(readdirSync(payloads)).toHaveLength(16);
    const first = JSON.parse(readFileSync(join(payloads, 'payload-00000.json'), 'utf8')) as { inputs: { shape: number[] }[] };
    expect([4, 8, 16, 32]).toContain(first.inputs[3]!.shape[1]);

    const s = await run(['--payloads', payloads, '--sweep', '40,80', '--duration', '1', '--json']);
    expect(s.status).toBe(0);
    const r = JSON.parse(s.stdout) as { pool: { from: string; size: number }; steps: { offered_qps: number; ok: number; errors: number }[]; max_qps_within_target: number };
    expect(r.pool).toMatchObject({ from: 'payloads', size: 16 });
    expect(r.steps.map((x) => x.offered_qps)).toEqual([40, 80]);
    for (const step of r.steps) expect([step.ok > 0, step.errors]).toEqual([true, 0]);

    const chart = join(dir, 'sweep.svg');
    const text = await run(['--payloads', payloads, '--sweep', '40', '--duration', '1', '--chart', chart]);
    expect(text.status).toBe(0);
    expect(readFileSync(chart, 'utf8')).toMatch(/^<svg [^]*<polyline data-series="p99"[^]*<\/svg>\n$/);
    expect(text.stdout).toMatch(/offered\/s\s+achieved\/s\s+errors/);
    expect(text.stdout).toMatch(/within target \(≥ 95% achieved, 0 errors, p99 ≤ 10 ms\)/);
  });

  it.each([
    [['--sweep', 'fast', '--duration', '1'], /--sweep must be "auto" or a list of rates/],
    [['--payloads', '/nonexistent', '--sequence-lengths', '4', '--rate', '1', '--duration', '1'], /--payloads sends the files as they are/],
    [['--sequence-lengths', '4,x', '--rate', '1', '--duration', '1'], /--sequence-lengths must be a list of lengths/],
    [['--sweep', '40', '--duration', '1', '--chart', 'sweep.png'], /--chart must name an .svg file/],
    [['--rate', '40', '--duration', '1', '--chart', 'sweep.svg'], /--chart draws a sweep: add --sweep/],
  ])('%j exits 2', async (args, message) => {
    const r = await run(args);
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(message);
  });
});
