/**
 * A trained run owns its feature encoders. The daily job rebuilds the graph from today's tables (new
 * rows, refitted statistics, a moved `fit_until`), and every later stage must still encode with the run's
 * fitted transforms:
 *
 * - appending rows dated after an anchor t (to every table, with values far outside the fitted range)
 *   changes no byte of the embeddings at t, in exact and in sampled mode (fixed seed);
 * - refresh embeds the newest data with the training-time encoders, although the rebuilt graph fitted
 *   different statistics (a model bound to those would embed differently);
 * - `check --config` reports per-feature drift (PSI, OOV share) and fails on a deliberately shifted column;
 * - a new column in the data is ignored with a note, not refused.
 */
import { appendFileSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readManifest, readModelJson } from '../../src/artifacts/run_store.js';
import type { TrainManifest } from '../../src/train/trainer.js';
import { selectBackend } from '../../src/compute/backend.js';
import { loadConfig, type Config } from '../../src/config/load.js';
import { QualityGateError } from '../../src/core/errors.js';
import { embed } from '../../src/embed/embed.js';
import { buildGraph } from '../../src/graph/build.js';
import { runFit } from '../../src/graph/fit_until.js';
import { Graph } from '../../src/graph/graph.js';
import { DeepModel } from '../../src/model/deep_model.js';
import { featureSpecFromGraph, type FeatureSpec } from '../../src/model/features.js';
import { checkCommand } from '../../src/cli/commands/pipeline.js';
import { checkRepository } from '../../src/pipeline/check.js';
import { runPipeline, type PipelineResult } from '../../src/pipeline/pipeline.js';
import { refresh } from '../../src/pipeline/refresh.js';
import { embedExact, tableDepth } from '../../src/embed/layerwise.js';
import { computedEmbeddings, rtiElements } from '../../src/distill/data.js';
import { nodeKeys } from '../helpers/graph.js';
import { maxAbsDiff, parquetKv, pipelineConfig, readEmbeddings } from '../helpers/pipeline.js';
import { appendFutureRows, tinySynth, type SynthFixture } from '../helpers/synth.js';

const T = '2020-08-01T00:00:00Z';

const pick = (c: { mean: number; std: number }): { mean: number; std: number } => ({ mean: c.mean, std: c.std });

let fx: SynthFixture;
let cfg: Config;
let first: PipelineResult;
let baseRun: string;
const before: Record<string, Map<string, Float32Array>> = {};
let distillBefore: Map<string, { rti: string[]; embedding: number[] | null }>;

/**
 * What distillation feeds the student for the fact rows at or before T: each row's RTI elements (as
 * keys, most recent first) and its as-of customer embedding from the base run (daily snapshots).
 */
async function distillInputs(): Promise<Map<string, { rti: string[]; embedding: number[] | null }>> {
  // The graph distill reads: the base run's own (its recorded fit_until).
  const runDir = join(fx.artifacts, 'runs', baseRun);
  const graph = Graph.load((await buildGraph(cfg, { fit: runFit(runDir, readManifest(runDir)) })).dir);
  const keys = await nodeKeys(graph.dir, graph.manifest, 'transactions');
  const time = graph.table('transactions').time!;
  const cut = Date.parse(T) / 1000;
  // Every 7th row at or before T: a few hundred examples spread over the whole history.
  const nodes = Int32Array.from({ length: time.length }, (_, i) => i).filter((i) => time[i]! <= cut && i % 7 === 0);
  const rti = await rtiElements(graph, cfg.hopPaths[0]!, nodes, 3600);
  const N = cfg.hopPaths[0]!.max_length;
  const model = DeepModel.load(join(fx.artifacts, 'runs', baseRun), graph);
  const parents = graph.edges.find((e) => e.kind === 'fk' && e.src === 'transactions' && e.meta.column === 'customer_id')!.parent!;
  const emb = await computedEmbeddings(model, Int32Array.from(nodes, (v) => parents[v]!), Float64Array.from(nodes, (v) => time[v]!), 'customers', { min: 43200, max: 14 * 86400, cadence: 86400 }, 0);
  const C = model.spec.channels;
  model.dispose();
  const out = new Map<string, { rti: string[]; embedding: number[] | null }>();
  nodes.forEach((v, i) => {
    const els = Array.from(rti.subarray(i * N, (i + 1) * N)).filter((e) => e >= 0).map((e) => keys[e]!);
    out.set(keys[v]!, { rti: els, embedding: emb.missing[i] ? null : Array.from(emb.values.subarray(i * C, (i + 1) * C)) });
  });
  return out;
}

async function embedAt(tag: string, mode: 'exact' | 'sampled', table: string): Promise<Map<string, Float32Array>> {
  const out = join(fx.artifacts, 'cmp', `${tag}-${mode}-${table}.parquet`);
  await embed({ cfg, run: baseRun, table, anchorTime: T, mode, out, cwd: fx.dir });
  const key = table === 'customers' ? 'customer_id' : 'article_id';
  return readEmbeddings(out, key);
}

beforeAll(async () => {
  await selectBackend('wasm');
  fx = await tinySynth(pipelineConfig());
  cfg = loadConfig(fx.config, { cwd: fx.dir, artifacts: fx.artifacts });
  first = await runPipeline({ cfg, distillEpochs: 1, cwd: fx.dir });
  baseRun = first.runs.fraud!;
  for (const mode of ['exact', 'sampled'] as const) for (const table of ['customers', 'articles']) before[`${mode}/${table}`] = await embedAt('before', mode, table);
  distillBefore = await distillInputs();
}, 300_000);

afterAll(() => fx?.cleanup());

describe('a run owns its encoders', () => {
  it('the run records its fitted transforms: fit_until, standardisation, vocabularies and drift references', () => {
    const spec = readModelJson<FeatureSpec>(join(fx.artifacts, 'runs', baseRun), 'features.json');
    expect(typeof spec.fit_until).toBe('number');
    const price = spec.tables.transactions!.numeric.find((c) => c.name === 'price')!;
    expect(price.std).toBeGreaterThan(0);
    expect(price.reference!.edges.length).toBeGreaterThan(3);
    expect(price.reference!.shares.reduce((a, b) => a + b, 0)).toBeCloseTo(1, 6);
    const colour = spec.tables.articles!.categorical.find((c) => c.name === 'colour_group_name')!;
    expect(colour.reference!.shares.length).toBe(colour.vocab.length + 2);
  });

  it("the base run's statistics are fitted up to its own task's first validation anchor, months after churn's, and embed reads the run's own graph", async () => {
    const m = readManifest<TrainManifest>(join(fx.artifacts, 'runs', baseRun));
    const own = await buildGraph(cfg, { fit: { task: 'fraud' } });
    const churn = await buildGraph(cfg, { fit: { task: 'churn' } });
    expect(m.graph.fit_until).toBe(own.manifest.fit_until);
    expect(m.graph.dir).toBe(own.dir);
    // churn's twenty weekly test anchors beside it would have pulled a config-wide cut-off this far back
    expect(m.graph.fit_until! - churn.manifest.fit_until!).toBeGreaterThan(90 * 86400);
    const embedded = first.stages.find((s) => s.stage === 'embed customers')!.artifact;
    expect((await parquetKv(embedded)).data_fingerprint).toBe(m.graph.fingerprint);
  });

  it('check --config passes drift on the data the run was trained on', async () => {
    const r = await checkRepository(join(fx.artifacts, 'model_repository'), cfg);
    expect(r.checks.filter((c) => c.check === 'drift').every((c) => c.ok)).toBe(true);
    const d = Object.values(r.drift!)[0]!;
    expect(d.features.length).toBeGreaterThan(3);
    expect(d.features.find((f) => f.table === 'transactions' && f.column === 'price')!.psi).toBeLessThan(0.25);
  });

  describe('after appending rows dated after t (shifted values, new keys, new categories, a new column)', () => {
    let fittedBefore: FeatureSpec;
    beforeAll(async () => {
      fittedBefore = featureSpecFromGraph(Graph.load((await buildGraph(cfg)).dir), []);
      // 1,500 rows over the 80 days after T (past the data's end, so fit_until moves) at 20× the usual
      // prices: the refitted statistics must move.
      const future = appendFutureRows(fx.dir, T, { transactions: 1500, customers: 30, articles: 12, seed: 11, days: 80 });
      const path = join(fx.dir, 'transactions.csv');
      const lines = readFileSync(path, 'utf8').trimEnd().split('\n');
      const header = lines[0]!.split(',');
      const price = header.indexOf('price');
      const fresh = new Set(future.transactions);
      const shifted = lines.map((l, i) => {
        if (i === 0) return `${l},channel_note`;
        const f = l.split(',');
        if (fresh.has(f[0]!)) f[price] = (Number(f[price]) * 20).toFixed(6);
        return `${f.join(',')},${i % 2 ? 'web' : 'store'}`;
      });
      writeFileSync(path, `${shifted.join('\n')}\n`);
      appendFileSync(path, '');
    }, 120_000);

    it('the rebuilt graph really refitted: its price statistics and fit_until moved', async () => {
      const g = Graph.load((await buildGraph(cfg)).dir);
      const now = featureSpecFromGraph(g, []);
      expect(now.fit_until).toBeGreaterThan(fittedBefore.fit_until!);
      const p0 = fittedBefore.tables.transactions!.numeric.find((c) => c.name === 'price')!;
      const p1 = now.tables.transactions!.numeric.find((c) => c.name === 'price')!;
      expect(p1.mean).not.toBeCloseTo(p0.mean, 4);
      expect(g.manifest.schema.tables.transactions!.columns.map((c) => c.name)).toContain('channel_note');
    });

    for (const mode of ['exact', 'sampled'] as const) {
      for (const table of ['customers', 'articles']) {
        it(`${mode} embeddings of ${table} at t are byte-identical (max |Δ| = 0)`, async () => {
          const after = await embedAt('after', mode, table);
          const a = before[`${mode}/${table}`]!;
          expect(after.size).toBeGreaterThanOrEqual(a.size);
          let worst = 0;
          for (const [k, v] of a) worst = Math.max(worst, maxAbsDiff(v, after.get(k)!));
          expect(worst).toBe(0);
        });
      }
    }

    it('distillation inputs of fact rows at or before t are identical: RTI elements and as-of embeddings', async () => {
      const after = await distillInputs();
      expect(distillBefore.size).toBeGreaterThan(200);
      expect([...distillBefore.values()].filter((x) => x.embedding !== null).length).toBeGreaterThan(50);
      expect([...distillBefore.values()].filter((x) => x.rti.length > 0).length).toBeGreaterThan(50);
      for (const [k, v] of distillBefore) expect(after.get(k), k).toEqual(v);
    });

    it('refresh embeds the newest data with the training-time encoders, and reports the drift', async () => {
      const r = await refresh({ cfg, cwd: fx.dir });
      expect(r.drift.ok).toBe(false);
      expect(r.drift.features.find((f) => f.column === 'price')!.drifted).toBe(true);
      const file = join(r.dir, 'embeddings.customers.parquet');
      const served = await readEmbeddings(file, 'customer_id');
      const anchor = Date.parse(r.embedding_anchor.customers!) / 1000;

      const graph = Graph.load((await buildGraph(cfg)).dir);
      const runDir = join(fx.artifacts, 'runs', baseRun);
      const frozen = DeepModel.load(runDir, graph);
      // The same weights with the standardisation the new graph fitted: what a refit would have served.
      const runSpec = readModelJson<FeatureSpec>(runDir, 'features.json');
      const fitted = featureSpecFromGraph(graph, runSpec.excluded);
      const refitSpec: FeatureSpec = {
        ...runSpec,
        tables: Object.fromEntries(
          Object.entries(runSpec.tables).map(([t, s]) => [t, { ...s, numeric: s.numeric.map((c) => ({ ...c, ...pick(fitted.tables[t]!.numeric.find((x) => x.name === c.name)!) })) }]),
        ),
      };
      const refit = new DeepModel(graph, frozen.spec, refitSpec, 0);
      refit.params.assignBlob(frozen.params.serialize().blob);
      const ids = new Int32Array(graph.table('customers').rows).map((_, i) => i);
      const depth = tableDepth(frozen, 'customers')!;
      // The bundled fraud model samples `last`: exact mode reads every neighbour (no degree cap).
      const eFrozen = embedExact(frozen, 'customers', depth, ids, anchor, 0);
      const eRefit = embedExact(refit, 'customers', depth, ids, anchor, 0);
      const dim = frozen.spec.channels;
      let refitDiff = 0;
      for (let i = 0; i < eFrozen.length; i++) refitDiff = Math.max(refitDiff, Math.abs(eFrozen[i]! - eRefit[i]!));
      expect(refitDiff).toBeGreaterThan(1e-3);
      // What refresh wrote equals the frozen encoders' embeddings, row by row.
      const first = [...served.values()][0]!;
      expect(first.length).toBe(dim);
      expect(maxAbsDiff(served.get([...served.keys()][0]!)!, eFrozen.subarray(0, dim))).toBeLessThan(1e-6);
      frozen.dispose();
      refit.dispose();
    });

    it('check --config fails on the shifted column, naming it (exit 4)', async () => {
      const err = await checkCommand({ config: fx.config, artifacts: fx.artifacts, cwd: fx.dir, json: true }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(QualityGateError);
      const result = (err as QualityGateError).result as Awaited<ReturnType<typeof checkRepository>>;
      const drift = result.checks.find((c) => c.check === 'drift' && !c.ok)!;
      expect(drift.detail).toContain('transactions.price');
      // The new column is a note, not a schema failure.
      expect(result.checks.filter((c) => c.check === 'schema').every((c) => c.ok)).toBe(true);
      // A lenient threshold passes the same data.
      const lenient = await checkCommand({ config: fx.config, artifacts: fx.artifacts, cwd: fx.dir, json: true, driftThreshold: 1e6 });
      expect((lenient.result as { ok: boolean }).ok).toBe(true);
    });
  });
});
