/**
 * `embed` on tiny synthetic data: the file holds exactly the table's entities at the anchor, under the
 * table's own key, with finite vectors of the model's dimension; exact mode is deterministic and agrees
 * with sampled mode and with the model's in-memory forward pass; shards partition the file; the
 * key-value metadata traces it to its run; a drifted schema is refused; a failed or killed run leaves
 * nothing where the next stage would read. One churn run (customers) and one fraud run (transactions)
 * are trained once for the whole file (8 channels, 1 epoch of 3 steps).
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import * as arrow from 'apache-arrow';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { embedCommand } from '../../src/cli/commands/embed.js';
import { selectBackend } from '../../src/compute/backend.js';
import { loadConfig, type Config } from '../../src/config/load.js';
import { embed } from '../../src/embed/embed.js';
import { shardFlag } from '../../src/cli/flags.js';
import { embedExact, tableDepth } from '../../src/embed/layerwise.js';
import { writeEmbeddings, type EmbeddingChunk } from '../../src/embed/writer.js';
import { ArtifactError, UsageError } from '../../src/core/errors.js';
import { buildGraph } from '../../src/graph/build.js';
import { Graph } from '../../src/graph/graph.js';
import { readManifest } from '../../src/artifacts/run_store.js';
import { DeepModel } from '../../src/model/deep_model.js';
import { train, type TrainManifest, type TrainResult } from '../../src/train/trainer.js';
import { setQuiet, takeWarnings } from '../../src/core/log.js';
import { nodeKeys } from '../helpers/graph.js';
import { maxAbsDiff, parquetKv, parquetTypes, pipelineConfig, readEmbeddings, sqlPath, sqlRows } from '../helpers/pipeline.js';
import { tinySynth, type SynthFixture } from '../helpers/synth.js';

const ROOT = join(import.meta.dirname, '..', '..');
const ANCHOR = '2020-06-01T00:00:00Z';
const ANCHOR_S = Date.parse(ANCHOR) / 1000;
const DIM = 8;

let fx: SynthFixture;
let cfg: Config;
let graph: Graph;
const runs: Record<'churn' | 'fraud', TrainResult> = {} as never;
let out: string;

beforeAll(async () => {
  setQuiet(true);
  await selectBackend('wasm');
  fx = await tinySynth(pipelineConfig());
  cfg = loadConfig(fx.config, { cwd: fx.dir, artifacts: fx.artifacts });
  runs.churn = await train({ cfg, task: 'churn', backend: 'wasm', skip_baseline: true });
  runs.fraud = await train({ cfg, task: 'fraud', backend: 'wasm', skip_baseline: true });
  graph = Graph.load((await buildGraph(cfg)).dir);
  out = join(fx.dir, '..', 'out');
  mkdirSync(out);
});
afterAll(() => {
  fx?.cleanup();
  setQuiet(false);
});

/** Embeds into a fresh file under `out` (or the given path) with the wasm backend. */
function embedTo(name: string, opts: Partial<Parameters<typeof embed>[0]> & { run: string }) {
  return embed({ cfg, backend: 'wasm', anchorTime: ANCHOR, out: join(out, name), ...opts });
}

/** Primary keys of a source CSV as text (all_varchar keeps zero-padded codes), optionally rows with time ≤ anchor. */
async function sourceKeys(table: string, key: string, timeColumn?: string): Promise<string[]> {
  const where = timeColumn ? ` WHERE CAST("${timeColumn}" AS TIMESTAMP) <= TIMESTAMP '${ANCHOR.slice(0, 19).replace('T', ' ')}'` : '';
  const rows = await sqlRows(`SELECT "${key}" AS k FROM read_csv(${sqlPath(join(fx.dir, `${table}.csv`))}, all_varchar = true)${where}`);
  return rows.map((r) => r.k as string).sort();
}

describe('embeddings.parquet holds one row per entity that exists at the anchor', () => {
  const cases = [
    { table: 'customers', run: 'churn', key: 'customer_id', keyType: 'VARCHAR', time: undefined },
    { table: 'articles', run: 'fraud', key: 'article_id', keyType: 'VARCHAR', time: undefined },
    { table: 'transactions', run: 'fraud', key: 'transaction_id', keyType: 'BIGINT', time: 't_dat' },
  ] as const;
  it.each(cases)('$table by the $run run: keys equal the table\'s, $key stays $keyType, dim values each, all finite, anchor_time as requested', async ({ table, run, key, keyType, time }) => {
    const r = await embedTo(`${table}-${run}.parquet`, { run: runs[run].runId, table });
    const expected = await sourceKeys(table, key, time);
    const got = await sqlRows(`SELECT CAST("${key}" AS VARCHAR) AS k FROM read_parquet(${sqlPath(r.path)})`);
    expect(r.rows).toBe(expected.length);
    expect(got.map((x) => x.k as string).sort()).toEqual(expected);
    if (time) expect(expected.length).toBeLessThan((await sourceKeys(table, key)).length); // the anchor cut something off
    if (table === 'articles') expect(expected.every((k) => k.startsWith('0'))).toBe(true); // zero-padded codes survived

    const types = await parquetTypes(r.path);
    expect(types[key]).toBe(keyType);
    expect(Object.keys(types)).toEqual([key, 'embedding', 'anchor_time']);
    expect(types.anchor_time).toMatch(/^TIMESTAMP/);
    const [stats] = await sqlRows(
      `SELECT count(*)::INTEGER AS n, min(len(embedding))::INTEGER AS dmin, max(len(embedding))::INTEGER AS dmax, ` +
        `count(DISTINCT CAST(anchor_time AS VARCHAR))::INTEGER AS anchors, any_value(CAST(anchor_time AS VARCHAR)) AS anchor, ` +
        `sum(list_count(list_filter(embedding, v -> isnan(v) OR isinf(v))))::INTEGER AS bad FROM read_parquet(${sqlPath(r.path)})`,
    );
    expect(stats).toEqual({ n: expected.length, dmin: DIM, dmax: DIM, anchors: 1, anchor: '2020-06-01 00:00:00', bad: 0 });
    expect(r).toMatchObject({ dim: DIM, anchor_time: ANCHOR, table, run_id: runs[run].runId, mode: 'exact', shard: null });
  });
});

describe('no entity to embed', () => {
  it.each([
    { what: 'transactions at an anchor before the first row', table: 'transactions', key: 'transaction_id', keyType: 'BIGINT', anchorTime: '2020-01-01T00:00:00Z', shard: undefined },
    { what: 'customers, shard 0/1000 of 500', table: 'customers', key: 'customer_id', keyType: 'VARCHAR', anchorTime: ANCHOR, shard: { index: 0, count: 1000 } },
  ])('$what: a file with no rows, the same columns and its metadata', async ({ table, key, keyType, anchorTime, shard }) => {
    const r = await embedTo(`empty-${table}.parquet`, { run: runs.fraud.runId, table, anchorTime, shard });
    expect(r.rows).toBe(0);
    expect(await sqlRows(`SELECT count(*)::INTEGER AS n FROM read_parquet(${sqlPath(r.path)})`)).toEqual([{ n: 0 }]);
    expect(await parquetTypes(r.path)).toEqual({ [key]: keyType, embedding: 'FLOAT[]', anchor_time: expect.stringMatching(/^TIMESTAMP/) });
    expect(await parquetKv(r.path)).toMatchObject({ run_id: runs.fraud.runId, table, anchor_time: anchorTime });
  });
});

describe('exact mode', () => {
  it.skipIf(!existsSync(join(ROOT, 'dist', 'cli', 'main.js')))('two runs (gnnctl embed, one process each) give byte-identical files', async () => {
    const paths = [join(out, 'det-cli-a.parquet'), join(out, 'det-cli-b.parquet')];
    for (const p of paths) {
      const r = await runCli(['embed', '-c', fx.config, '-r', runs.fraud.runDir, '--out', p, '--artifacts', fx.artifacts, '--backend', 'wasm', '--quiet'], fx.dir);
      expect(r.code, r.stderr).toBe(0);
    }
    expect(readFileSync(paths[1]!).equals(readFileSync(paths[0]!))).toBe(true);
  });

  it('two runs in one process give the same rows in the same order and the same metadata', async () => {
    const a = await embedTo('det-a.parquet', { run: runs.fraud.runId });
    const b = await embedTo('det-b.parquet', { run: runs.fraud.runId });
    expect(a.rows).toBeGreaterThan(1000);
    const rows = (p: string) => sqlRows(`SELECT transaction_id::VARCHAR AS k, embedding::VARCHAR AS e, anchor_time::VARCHAR AS a FROM read_parquet(${sqlPath(p)}, file_row_number = true) ORDER BY file_row_number`);
    expect(await rows(b.path)).toEqual(await rows(a.path));
    expect(await parquetKv(b.path)).toEqual(await parquetKv(a.path));
  });

  // parquet-wasm (0.8) takes the key-value metadata as a Rust HashMap, whose iteration order changes with
  // every map the wasm instance creates; the writer puts the pairs in key order afterwards (parquet_footer.ts).
  it('two runs in one process give byte-identical files', async () => {
    const a = await embedTo('det-c.parquet', { run: runs.fraud.runId });
    const b = await embedTo('det-d.parquet', { run: runs.fraud.runId });
    expect(readFileSync(b.path).equals(readFileSync(a.path))).toBe(true);
  });

  // Two workers, chunks of 1,500 rows (the next one computed while this one is written): the file of one thread.
  it.each(['exact', 'sampled'] as const)('%s: two worker threads write the byte-identical file of one thread', async (mode) => {
    const one = await embedTo(`w1-${mode}.parquet`, { run: runs.fraud.runId, mode, chunkSize: 1500, workers: 1 });
    const two = await embedTo(`w2-${mode}.parquet`, { run: runs.fraud.runId, mode, chunkSize: 1500, workers: 2 });
    expect(two.rows).toBe(one.rows);
    expect(two.rows).toBeGreaterThan(3000);
    expect(readFileSync(two.path).equals(readFileSync(one.path))).toBe(true);
  });

  // With `last` sampling, sampled mode picks each hop's most recent neighbours: the neighbourhoods exact
  // mode aggregates. Customers and articles sit one hop below a fraud run's root.
  const cases = [
    { table: 'customers', run: 'churn', depth: 0 },
    { table: 'transactions', run: 'fraud', depth: 0 },
    { table: 'customers', run: 'fraud', depth: 1 },
    { table: 'articles', run: 'fraud', depth: 1 },
  ] as const;
  it.each(cases)('equals sampled mode for last sampling within 1e-5: $table of the $run run (depth $depth)', async ({ table, run, depth }) => {
    const model = DeepModel.load(runs[run].runDir, graph);
    try {
      expect(model.spec.sampling).toBe('last');
      expect(tableDepth(model, table)).toBe(depth);
    } finally {
      model.dispose();
    }
    const key = graph.manifest.schema.tables[table]!.primary_key!.column;
    const exact = await readEmbeddings((await embedTo(`x-${table}-${run}.parquet`, { run: runs[run].runId, table })).path, key);
    const sampled = await readEmbeddings((await embedTo(`s-${table}-${run}.parquet`, { run: runs[run].runId, table, mode: 'sampled' })).path, key);
    expect([...sampled.keys()]).toEqual([...exact.keys()]);
    let worst = 0;
    for (const [k, v] of exact) worst = Math.max(worst, maxAbsDiff(v, sampled.get(k)!));
    expect(worst).toBeLessThanOrEqual(1e-5);
  });

  it.each([
    { table: 'customers', run: 'churn' },
    { table: 'customers', run: 'fraud' },
    { table: 'transactions', run: 'fraud' },
  ] as const)('the file holds the model\'s in-memory embeddings within 1e-6: $table of the $run run', async ({ table, run }) => {
    const key = graph.manifest.schema.tables[table]!.primary_key!.column;
    const exact = await readEmbeddings((await embedTo(`m-x-${table}-${run}.parquet`, { run: runs[run].runId, table })).path, key);
    const sampled = await readEmbeddings((await embedTo(`m-s-${table}-${run}.parquet`, { run: runs[run].runId, table, mode: 'sampled' })).path, key);
    const keys = await nodeKeys(graph.dir, graph.manifest, table);
    const t = graph.table(table).time;
    const nodes = Int32Array.from({ length: keys.length }, (_, i) => i).filter((v) => !t || t[v]! <= ANCHOR_S);
    expect(nodes.length).toBe(exact.size);
    const model = DeepModel.load(runs[run].runDir, graph);
    try {
      const depth = tableDepth(model, table)!;
      // one chunk holds every node, so embed seeded the sampler with seed · 1000003 + 0
      const seed = (readManifest<TrainManifest>(runs[run].runDir).seed * 1000003) >>> 0;
      const inMemory = { sampled: model.embedSampled(table, depth, nodes, ANCHOR_S, seed), exact: embedExact(model, table, depth, nodes, ANCHOR_S, 0) };
      for (const [mode, file] of [['sampled', sampled], ['exact', exact]] as const) {
        let worst = 0;
        nodes.forEach((v, i) => (worst = Math.max(worst, maxAbsDiff(file.get(keys[v]!)!, inMemory[mode].subarray(i * DIM, (i + 1) * DIM)))));
        expect(worst, mode).toBeLessThanOrEqual(1e-6);
      }
    } finally {
      model.dispose();
    }
  });
});

describe('shards', () => {
  it('--shard i/3 writes disjoint part files whose union (part-*.parquet) is the unsharded file, row for row', async () => {
    const whole = await embed({ cfg, backend: 'wasm', run: runs.fraud.runId, anchorTime: ANCHOR });
    const dir = join(whole.path, '..');
    const parts = [];
    for (let i = 0; i < 3; i++) parts.push(await embed({ cfg, backend: 'wasm', run: runs.fraud.runId, anchorTime: ANCHOR, shard: { index: i, count: 3 } }));
    expect(parts.map((p) => p.path)).toEqual([0, 1, 2].map((i) => join(dir, `part-0000${i}-of-00003.parquet`)));
    expect(parts.map((p) => p.shard)).toEqual(['0/3', '1/3', '2/3']);
    expect(parts.reduce((a, p) => a + p.rows, 0)).toBe(whole.rows);
    for (const p of parts) expect(Math.abs(p.rows - whole.rows / 3)).toBeLessThanOrEqual(1);

    const glob = join(dir, 'part-*.parquet');
    const [counts] = await sqlRows(`SELECT count(*)::INTEGER AS n, count(DISTINCT transaction_id)::INTEGER AS keys FROM read_parquet(${sqlPath(glob)})`);
    expect(counts).toEqual({ n: whole.rows, keys: whole.rows });
    const cols = 'transaction_id::VARCHAR AS k, embedding::VARCHAR AS e, anchor_time::VARCHAR AS a';
    const union = await sqlRows(`SELECT ${cols} FROM read_parquet(${sqlPath(glob)}, filename = true, file_row_number = true) ORDER BY filename, file_row_number`);
    const single = await sqlRows(`SELECT ${cols} FROM read_parquet(${sqlPath(whole.path)}, file_row_number = true) ORDER BY file_row_number`);
    expect(union).toEqual(single);
  });
});

describe('file metadata', () => {
  it('key-value metadata: run_id, dim, graph_fingerprint, table, anchor_time, key (and the folder manifest agrees)', async () => {
    const r = await embed({ cfg, backend: 'wasm', run: runs.churn.runId, anchorTime: ANCHOR });
    const m = readManifest<TrainManifest>(runs.churn.runDir);
    const kv = await parquetKv(r.path);
    expect(kv).toMatchObject({
      run_id: runs.churn.runId,
      dim: String(DIM),
      graph_fingerprint: m.graph.schema_fingerprint,
      table: 'customers',
      anchor_time: ANCHOR,
      key: 'customer_id',
      mode: 'exact',
    });
    const folder = JSON.parse(readFileSync(join(r.path, '..', 'manifest.json'), 'utf8')) as Record<string, unknown>;
    expect(folder).toMatchObject({ kind: 'embeddings', run_id: runs.churn.runId, graph_fingerprint: m.graph.schema_fingerprint, table: 'customers', anchor_time: ANCHOR, files: 'embeddings.parquet' });
  });
});

describe('schema drift', () => {
  /** A config over the same data with customers' `age` ignored: a graph whose schema lacks that column. */
  function withoutAge(): Config {
    const path = join(fx.dir, 'config-no-age.yaml');
    writeFileSync(path, readFileSync(fx.config, 'utf8').replace('customers: { path: customers.csv, primary_key: customer_id }', 'customers: { path: customers.csv, primary_key: customer_id, columns: { age: ignore } }'));
    return loadConfig(path, { cwd: fx.dir, artifacts: fx.artifacts });
  }

  let noAgeRun: TrainResult | undefined;
  /** dropped: the run read age, the data no longer has it; added: the run never saw it, the data has it. */
  async function drift(change: 'dropped' | 'added'): Promise<{ run: TrainResult; dataCfg: Config }> {
    const noAge = withoutAge();
    if (change === 'dropped') return { run: runs.churn, dataCfg: noAge };
    noAgeRun ??= await train({ cfg: noAge, task: 'churn', backend: 'wasm', skip_baseline: true });
    return { run: noAgeRun, dataCfg: cfg };
  }

  // The override keeps the column in the schema with role `ignore`: for the run that reads `age` as a
  // number, the column is gone from its inputs; for the run trained without it, it is a new column.
  it('a run that reads a column the data no longer provides is refused, naming table, column and the pin', async () => {
    const { run, dataCfg } = await drift('dropped');
    const target = join(out, 'drift-dropped.parquet');
    const err = await embed({ cfg: dataCfg, backend: 'wasm', run: run.runId, out: target }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ArtifactError);
    expect((err as ArtifactError).describe()).toMatch(/customers\.age, which the run reads as numerical, is now inferred as ignore .*data\.tables\.customers\.columns\.age: numerical/);
    expect((err as ArtifactError).describe()).toContain(run.runId);
    expect((err as ArtifactError).describe()).toMatch(/hint: .*--allow-schema-drift/);
    expect(existsSync(target)).toBe(false);
  });

  it('a column the run never read is ignored with a note: the run embeds today\'s data as it was trained', async () => {
    const { run, dataCfg } = await drift('added');
    const r = await embed({ cfg: dataCfg, backend: 'wasm', run: run.runId, out: join(out, 'drift-added.parquet') });
    expect(r.rows).toBe(500);
    // the file says which encoders it was computed with: the run's schema, not today's
    const kv = await parquetKv(r.path);
    expect(kv.graph_fingerprint).toBe(readManifest<TrainManifest>(join(fx.artifacts, 'runs', run.runId)).graph.schema_fingerprint);
  });

  // With a feature column the run reads gone, --allow-schema-drift embeds with the column read as
  // missing in every row, and says so.
  it('allowSchemaDrift with a feature column the run reads gone embeds with a warning naming it', async () => {
    const { run, dataCfg } = await drift('dropped');
    takeWarnings();
    const r = await embed({ cfg: dataCfg, backend: 'wasm', run: run.runId, out: join(out, 'drift-dropped-allowed.parquet'), allowSchemaDrift: true });
    expect(r.rows).toBe(500);
    expect(takeWarnings().join('\n')).toMatch(/customers\.age, which the run reads as numerical.*--allow-schema-drift: embedding anyway/);
  });
});

describe('a failed or killed run leaves nothing at the output path', () => {
  afterEach(() => vi.restoreAllMocks());

  it('a non-finite embedding in the second of three chunks: ArtifactError, no file, no .tmp-*', async () => {
    const original = DeepModel.prototype.embedSampled;
    let calls = 0;
    vi.spyOn(DeepModel.prototype, 'embedSampled').mockImplementation(function (this: DeepModel, ...args) {
      const e = original.apply(this, args);
      if (++calls === 2) e[3] = Number.NaN;
      return e;
    });
    const dir = mkdtempSync(join(out, 'nan-'));
    const target = join(dir, 'embeddings.parquet');
    // One thread: the spy lives in this thread's DeepModel (workers have their own).
    const err = await embed({ cfg, backend: 'wasm', run: runs.fraud.runId, anchorTime: ANCHOR, mode: 'sampled', out: target, chunkSize: 1500, workers: 1 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ArtifactError);
    expect((err as Error).message).toMatch(/non-finite embedding value for transactions node 1500/);
    expect(calls).toBe(2);
    expect(readdirSync(dir)).toEqual([]);
  });

  it.each([0, 1, 3])('the chunk stream throws after %i chunks (writer): no file, no .tmp-*', async (failAfter) => {
    const dir = mkdtempSync(join(out, 'throw-'));
    const target = join(dir, 'embeddings.parquet');
    async function* chunks(): AsyncGenerator<EmbeddingChunk> {
      for (let c = 0; c < 5; c++) {
        if (c === failAfter) throw new Error('injected failure');
        yield { keys: arrow.vectorFromArray(Array.from({ length: 100 }, (_, i) => `k${c}-${i}`), new arrow.Utf8()), embeddings: new Float32Array(100 * DIM).fill(c) };
      }
    }
    await expect(writeEmbeddings(target, chunks(), { keyName: 'k', dim: DIM, anchorTime: ANCHOR_S, metadata: {}, rowGroupSize: 100 })).rejects.toThrow('injected failure');
    expect(readdirSync(dir)).toEqual([]);
  });

  // A real process killed while it writes: the part written so far sits under a .tmp- name that neither
  // the output path nor a *.parquet glob matches. Needs the compiled CLI (npm run build).
  it.skipIf(!existsSync(join(ROOT, 'dist', 'cli', 'main.js')))('gnnctl embed killed with SIGKILL mid-write: no file at the output path', async () => {
    // a bigger dataset (200k transactions) so the write spans several chunks of 65,536 rows
    const big = await synthOfSize('small');
    const bigCfg = loadConfig(big.config, { cwd: big.dir, artifacts: big.artifacts });
    const run = await train({ cfg: bigCfg, task: 'fraud', backend: 'wasm', skip_baseline: true }); // also leaves the graph build cached
    const dir = join(big.dir, 'emb');
    mkdirSync(dir);
    const target = join(dir, 'embeddings.parquet');
    const child = spawn(process.execPath, [join(ROOT, 'bin', 'gnnctl.js'), 'embed', '-c', big.config, '-r', run.runDir, '--out', target, '--artifacts', big.artifacts, '--backend', 'wasm', '--quiet'], {
      cwd: big.dir,
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
    let sawTemp = false;
    let done = false;
    void exited.then(() => (done = true));
    while (!done) {
      if (readdirSync(dir).some((f) => f.startsWith('.tmp-embeddings.parquet-') && !f.includes('.keys.'))) {
        sawTemp = true;
        child.kill('SIGKILL');
        break;
      }
      await new Promise((r) => setTimeout(r, 5));
    }
    const { code, signal } = await exited;
    expect({ sawTemp, signal, code }, stderr).toEqual({ sawTemp: true, signal: 'SIGKILL', code: null });
    expect(existsSync(target)).toBe(false);
    expect(readdirSync(dir).filter((f) => f.endsWith('.parquet'))).toEqual([]);
  });
});

/** Runs the compiled CLI to completion. */
function runCli(args: string[], cwd: string): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [join(ROOT, 'bin', 'gnnctl.js'), ...args], { cwd, stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('exit', (code) => resolve({ code, stderr }));
  });
}

/** The synthetic data at another size, with the same config as the file's fixture (under `out`, removed with it). */
async function synthOfSize(size: 'small'): Promise<SynthFixture> {
  const { generateSynthetic } = await import('../../src/datasets/synth.js');
  const root = mkdtempSync(join(out, `synth-${size}-`));
  const dir = join(root, 'data');
  await generateSynthetic({ out: dir, size, seed: 1, format: 'csv' });
  writeFileSync(join(dir, 'config.yaml'), readFileSync(fx.config, 'utf8'));
  const artifacts = join(root, 'artifacts');
  mkdirSync(artifacts);
  return { dir, config: join(dir, 'config.yaml'), artifacts, cleanup: () => {} };
}

describe('gnnctl embed --workers (the real binary)', () => {
  const cli = (args: string[]) =>
    spawnSync(process.execPath, [join(ROOT, 'bin', 'gnnctl.js'), 'embed', '-c', fx.config, '-r', runs.fraud.runDir, '--artifacts', fx.artifacts, '--backend', 'wasm', ...args], { cwd: fx.dir, encoding: 'utf8', timeout: 110_000 });

  it.skipIf(!existsSync(join(ROOT, 'dist', 'cli', 'main.js')))('--workers 2 --json: the result says 2 workers and the file equals --workers 1\'s', () => {
    const paths = [join(out, 'cli-w1.parquet'), join(out, 'cli-w2.parquet')];
    const results = ['1', '2'].map((w, i) => {
      const r = cli(['--mode', 'sampled', '--workers', w, '--out', paths[i]!, '--json']);
      expect(r.status, r.stderr).toBe(0);
      return JSON.parse(r.stdout) as Record<string, unknown>;
    });
    expect(results.map((r) => r.workers)).toEqual([1, 2]);
    expect(results[1]).toMatchObject({ path: paths[1], mode: 'sampled', table: 'transactions' });
    expect(readFileSync(paths[1]!).equals(readFileSync(paths[0]!))).toBe(true);
  });

  it.each(['0', '17', 'two', '1.5'])('--workers %s exits 2 naming --workers, before any work', (value) => {
    const target = join(out, `bad-workers-${value}.parquet`);
    const r = cli(['--workers', value, '--out', target, '--json']);
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(/--workers must be "auto" or an integer in 1\.\.16/);
    expect(existsSync(target)).toBe(false);
  });
});

describe('embedCommand', () => {
  it('--json result: path, rows, dim, anchor_time, seconds', async () => {
    const target = join(out, 'cmd.parquet');
    const r = await embedCommand({ config: fx.config, run: runs.churn.runId, artifacts: fx.artifacts, cwd: fx.dir, anchorTime: ANCHOR, out: target, backend: 'wasm' });
    const json = JSON.parse(JSON.stringify(r.result)) as Record<string, unknown>;
    expect(json).toMatchObject({ path: target, rows: 500, dim: DIM, anchor_time: ANCHOR, table: 'customers', mode: 'exact' });
    expect(typeof json.seconds).toBe('number');
    expect(existsSync(target)).toBe(true);
    expect(r.text).toContain(target);
  });

  it.each(['3/3', '4/3', '-1/3', '1/0', 'a/b', '1', '1/2/3', '', '0.5/2'])('--shard "%s" is a UsageError (before any work)', async (shard) => {
    const target = join(out, `bad-shard.parquet`);
    const err = await embedCommand({ config: fx.config, run: runs.churn.runId, artifacts: fx.artifacts, cwd: fx.dir, out: target, shard, backend: 'wasm' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UsageError);
    expect((err as UsageError).describe()).toMatch(/--shard must be i\/n/);
    expect(existsSync(target)).toBe(false);
  });

  it.each([
    ['0/1', { index: 0, count: 1 }],
    ['2/3', { index: 2, count: 3 }],
    [' 1/4 ', { index: 1, count: 4 }],
  ] as const)('--shard "%s" parses', (text, expected) => {
    expect(shardFlag('--shard')(text)).toEqual(expected);
  });
});
