/**
 * `refresh --incremental` end to end on tiny synthetic data: the pipeline trains, distills and exports;
 * a full refresh records its time; an incremental refresh of unchanged data recomputes nothing and
 * rewrites the same vectors; after a day of new transactions by two known customers on one known
 * article, exactly those entities (the model's receptive field: the distilled model embeds customers and
 * articles one hop below its root) are recomputed at the new anchor, and every other row keeps its
 * vector and anchor_time byte for byte (read back with DuckDB). The merged snapshot exports as the next
 * version. A run with no snapshot at all refreshes in full and says so. A new key in a table without a
 * time column is a new node when it sorts last (recomputed alone) and a full refresh naming the table
 * when it sorts between old keys (node ids follow the key order there, so every later row moved).
 */
import { spawnSync } from 'node:child_process';
import { appendFileSync, copyFileSync, readFileSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { selectBackend } from '../../src/compute/backend.js';
import { refreshCommand } from '../../src/cli/commands/pipeline.js';
import { loadConfig, type Config } from '../../src/config/load.js';
import { runPipeline } from '../../src/pipeline/pipeline.js';
import type { RefreshResult } from '../../src/pipeline/refresh.js';
import { parquetKv, pipelineConfig, sqlPath, sqlRows } from '../helpers/pipeline.js';
import { tinySynth, type SynthFixture } from '../helpers/synth.js';

let fx: SynthFixture;
let cfg: Config;

const KEYS: Record<string, string> = { customers: 'customer_id', articles: 'article_id' };

interface Row {
  k: string;
  /** the vector's float32 bytes as hex */
  bytes: string;
  at: number;
}

/** A snapshot's rows: key → the embedding's float32 bytes (DuckDB's FLOAT[] → Float32Array) and anchor_time (epoch s). */
async function snapshotRows(path: string, table: string): Promise<Map<string, Row>> {
  const rows = await sqlRows(`SELECT CAST("${KEYS[table]}" AS VARCHAR) AS k, embedding AS e, epoch(anchor_time) AS at FROM read_parquet(${sqlPath(path)})`);
  return new Map(rows.map((r) => [r.k as string, { k: r.k as string, bytes: Buffer.from(Float32Array.from(r.e as number[]).buffer).toString('hex'), at: Number(r.at) }]));
}

async function refresh(incremental: boolean): Promise<RefreshResult> {
  return (await refreshCommand({ config: fx.config, artifacts: fx.artifacts, cwd: fx.dir, incremental })).result as RefreshResult;
}

/** A copy of each refreshed snapshot (the next refresh at the same anchor replaces the file). */
function keep(r: RefreshResult, tag: string): Record<string, string> {
  return Object.fromEntries(r.embeddings.map((e) => {
    const to = join(fx.artifacts, `${tag}-${e.table}.parquet`);
    copyFileSync(e.path, to);
    return [e.table, to];
  }));
}

beforeAll(async () => {
  await selectBackend('wasm');
  fx = await tinySynth(pipelineConfig());
  cfg = loadConfig(fx.config, { cwd: fx.dir, artifacts: fx.artifacts });
  await runPipeline({ cfg, distillEpochs: 1, cwd: fx.dir });
}, 300_000);

afterAll(() => fx?.cleanup());

describe('refresh --incremental', () => {
  let full: RefreshResult;
  let fullCopies: Record<string, string>;

  it('a full refresh records its time; an incremental one of unchanged data recomputes 0 and rewrites the same rows', async () => {
    full = await refresh(false);
    expect(full.incremental).toBeUndefined();
    fullCopies = keep(full, 'full');
    const r = await refresh(true);
    expect(r.version).toBe(full.version + 1);
    const inc = r.incremental!;
    expect(inc.tables.map((t) => t.table).sort()).toEqual(['articles', 'customers']);
    expect(inc.tables.every((t) => t.kind === 'incremental')).toBe(true);
    expect(inc.recomputed).toBe(0);
    expect(inc.kept).toBe(full.embeddings.reduce((a, e) => a + full.embedding_rows[e.table]!, 0));
    expect(inc.full_refresh_seconds).toBeGreaterThan(0);
    expect(inc.seconds_saved).toBeCloseTo(inc.full_refresh_seconds! - inc.seconds, 2);
    for (const e of r.embeddings) {
      const a = await snapshotRows(fullCopies[e.table]!, e.table);
      const b = await snapshotRows(e.path, e.table);
      expect(b.size).toBe(a.size);
      for (const [k, v] of a) expect(b.get(k), k).toEqual(v);
    }
  }, 300_000);

  it('after a day of new rows, recomputes exactly the entities that had one, keeps the rest byte for byte with their old anchor_time', async () => {
    const tx = readFileSync(join(fx.dir, 'transactions.csv'), 'utf8').trimEnd().split('\n');
    const last = tx.slice(1).map((l) => l.split(',')).sort((a, b) => (a[1]! < b[1]! ? -1 : 1)).pop()!;
    const lastT = Date.parse(`${last[1]!.replace(' ', 'T')}Z`) / 1000;
    const customers = readFileSync(join(fx.dir, 'customers.csv'), 'utf8').trimEnd().split('\n').slice(1, 3).map((l) => l.split(',')[0]!);
    const article = last[3]!;
    const maxId = Math.max(...tx.slice(1).map((l) => Number(l.split(',')[0])));
    const at = (h: number): string => new Date((lastT + h * 3600) * 1000).toISOString().slice(0, 19).replace('T', ' ');
    // Three rows in the next day: customer 0 twice, customer 1 once, all on one article.
    appendFileSync(join(fx.dir, 'transactions.csv'), [
      `${maxId + 1},${at(2)},${customers[0]},${article},0.05,2,0`,
      `${maxId + 2},${at(5)},${customers[1]},${article},0.03,1,0`,
      `${maxId + 3},${at(20)},${customers[0]},${article},0.04,2,0`,
    ].join('\n') + '\n');

    const r = await refresh(true);
    const inc = r.incremental!;
    const newAnchor = lastT + 20 * 3600;
    const expected: Record<string, string[]> = { customers: [...customers].sort(), articles: [article] };
    for (const t of inc.tables) {
      expect(t.kind, t.full_reason ?? '').toBe('incremental');
      expect(t.recomputed).toBe(expected[t.table]!.length);
      const before = await snapshotRows(fullCopies[t.table]!, t.table);
      const after = await snapshotRows(t.path, t.table);
      expect(after.size).toBe(before.size);
      const recomputed = [...after.values()].filter((v) => v.at === newAnchor).map((v) => v.k).sort();
      expect(recomputed).toEqual(expected[t.table]);
      for (const [k, v] of before) {
        if (expected[t.table]!.includes(k)) {
          expect(after.get(k)!.bytes, k).not.toBe(v.bytes);
          continue;
        }
        expect(after.get(k), k).toEqual(v);
      }
      const kv = await parquetKv(t.path);
      expect(Date.parse(kv.anchor_time!) / 1000).toBe(newAnchor);
      expect(kv.recomputed).toBe(String(expected[t.table]!.length));
    }
    expect(inc.recomputed).toBe(3);
    expect(r.embedding_anchor.customers).toBe(new Date(newAnchor * 1000).toISOString().replace('.000Z', 'Z'));
    // The text output says it too.
    const again = await refreshCommand({ config: fx.config, artifacts: fx.artifacts, cwd: fx.dir, incremental: true });
    expect(again.text).toMatch(/incremental customers: recomputed 0, kept \d+ since /);
    expect(again.text).toMatch(/incremental: recomputed 0, kept \d+ in [\d.]+s of embedding, -?[\d.]+s saved against the last full refresh/);
    // Where the refresh's time went, per step (the embedding is what --incremental shrinks).
    expect(again.text).toMatch(/refreshed \S+: version \d+ \(was \d+\) in [\d.]+s \(embedding [\d.]+s, export [\d.]+s, drift report [\d.]+s\)/);
    const phases = (again.result as RefreshResult).phases;
    expect(Object.keys(phases).sort()).toEqual(['drift', 'embed', 'export', 'predictions']);
    expect(phases.embed).toBeGreaterThan(0);
    expect(phases.export).toBeGreaterThan(0);
  }, 300_000);

  it('with no previous snapshot, refreshes in full and says why', async () => {
    const r = (await refresh(true)).incremental!;
    expect(r.tables.length).toBe(2);
    // Remove every snapshot of the base run: the next incremental refresh has nothing to start from.
    for (const t of r.tables) rmSync(dirname(dirname(dirname(t.path))), { recursive: true, force: true });
    const again = await refreshCommand({ config: fx.config, artifacts: fx.artifacts, cwd: fx.dir, incremental: true });
    const inc = (again.result as RefreshResult).incremental!;
    expect(inc.tables.every((t) => t.kind === 'full' && t.full_reason === 'no previous snapshot')).toBe(true);
    expect(inc.kept).toBe(0);
    expect(again.text).toMatch(/incremental customers: full refresh of \d+ \(no previous snapshot\)/);
  }, 300_000);

  it('recomputes a kept embedding older than max_embedding_offset (14 days here), whatever its inputs', async () => {
    const tx = readFileSync(join(fx.dir, 'transactions.csv'), 'utf8').trimEnd().split('\n');
    const last = tx.slice(1).map((l) => l.split(',')).sort((a, b) => (a[1]! < b[1]! ? -1 : 1)).pop()!;
    const later = new Date(Date.parse(`${last[1]!.replace(' ', 'T')}Z`) + 20 * 86400_000).toISOString().slice(0, 19).replace('T', ' ');
    const maxId = Math.max(...tx.slice(1).map((l) => Number(l.split(',')[0])));
    appendFileSync(join(fx.dir, 'transactions.csv'), `${maxId + 1},${later},${last[2]},${last[3]},0.05,2,0\n`);
    const inc = (await refresh(true)).incremental!;
    for (const t of inc.tables) {
      expect(t.kind).toBe('incremental');
      // One entity of each table had the new row; every other one was kept 20 days ago: all expired.
      expect(t.recomputed).toBe(t.rows);
      expect(t.expired).toBe(t.rows - 1);
      expect(t.kept).toBe(0);
      const rows = await snapshotRows(t.path, t.table);
      expect(new Set([...rows.values()].map((v) => v.at)).size).toBe(1);
    }
  }, 300_000);

  it('a new customer (no time column) whose key sorts last is a new node: recomputed alone, every other row kept', async () => {
    const path = join(fx.dir, 'customers.csv');
    const rows = readFileSync(path, 'utf8').trimEnd().split('\n');
    const fields = rows[1]!.split(',');
    appendFileSync(path, `${['f'.repeat(64), ...fields.slice(1)].join(',')}\n`);
    const inc = (await refresh(true)).incremental!;
    const byTable = Object.fromEntries(inc.tables.map((t) => [t.table, t]));
    expect(byTable.customers!.kind, byTable.customers!.full_reason ?? '').toBe('incremental');
    expect(byTable.customers!.recomputed).toBe(1);
    expect(byTable.customers!.kept).toBe(rows.length - 1);
    expect(byTable.articles!.recomputed).toBe(0);
    const after = await snapshotRows(byTable.customers!.path, 'customers');
    expect(after.get('f'.repeat(64))!.at).toBe(Date.parse(byTable.customers!.anchor_time) / 1000);
  }, 300_000);

  it('a new customer whose key sorts between old ones moves every later node id: a full refresh that names the table and the key', async () => {
    const path = join(fx.dir, 'customers.csv');
    const fields = readFileSync(path, 'utf8').trimEnd().split('\n')[1]!.split(',');
    appendFileSync(path, `${['0'.repeat(64), ...fields.slice(1)].join(',')}\n`);
    const inc = (await refresh(true)).incremental!;
    for (const t of inc.tables) {
      expect(t.kind).toBe('full');
      expect(t.full_reason).toMatch(/^rows moved: customers has no time column and a key that sorts between its old ones: node 0 held [0-9a-f]{64}, now 0{64}/);
      expect(t.kept).toBe(0);
    }
  }, 300_000);

  it('the binary: refresh --incremental --json on unchanged data prints the incremental record (0 recomputed); a value given to the flag exits 2', () => {
    const bin = join(import.meta.dirname, '..', '..', 'bin', 'gnnctl.js');
    const run = (args: string[]) => spawnSync(process.execPath, [bin, 'refresh', '--config', fx.config, '--artifacts', fx.artifacts, ...args], { cwd: fx.dir, encoding: 'utf8', timeout: 280_000 });
    const r = run(['--incremental', '--json']);
    expect(r.status, r.stderr).toBe(0);
    const out = JSON.parse(r.stdout) as { incremental: { recomputed: number; kept: number } };
    expect(out.incremental.recomputed).toBe(0);
    expect(out.incremental.kept).toBeGreaterThan(0);
    const bad = run(['--incremental=yes']);
    expect(bad.status).toBe(2);
    expect(bad.stderr).toMatch(/--incremental/);
  }, 300_000);
});
