/**
 * The session-aware distilled recommender end to end on tiny synthetic data: base runs for customers
 * (churn) and articles (item_sales), `recommender distill` (labels checked against DuckDB over the raw CSV at
 * the window boundaries, baselines and ablations reported), `recommender export` (a config.pbtxt that passes
 * Triton's schema checks and gnnctl serve's, a TF.js/onnxruntime self-check), and `gnnctl serve` answering
 * with the same top-k as the batch (TF.js) answer for the same users, unknown users falling back.
 * The binary is spawned with good flags, --json and bad values.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseModelConfig } from '../../src/artifacts/triton/pbtxt.js';
import { loadWeights, readModelJson } from '../../src/artifacts/run_store.js';
import { selectBackend } from '../../src/compute/backend.js';
import { loadConfig, type Config } from '../../src/config/load.js';
import { ConfigError } from '../../src/core/errors.js';
import { setQuiet } from '../../src/core/log.js';
import { distillSession } from '../../src/distill/distill.js';
import { SESSION_SPEC_FILE, type DistillSessionResult } from '../../src/distill/session/session_kind.js';
import { rankingAnchors, rankingExamples } from '../../src/distill/session/examples.js';
import { exportSessionRecommender, lastActiveUsers, sessionRequests, tableKeys, tfTopK, type SessionExportResult } from '../../src/export/session_export.js';
import { buildGraph } from '../../src/graph/build.js';
import { Graph } from '../../src/graph/graph.js';
import { sessionInferBody } from '../../src/loadgen/session_requests.js';
import type { SessionSpec } from '../../src/model/student/session_spec.js';
import { modelSpecFromConfig } from '../../src/serve/model_spec.js';
import { train } from '../../src/train/trainer.js';
import { tableDepth } from '../../src/embed/layerwise.js';
import { tableVectorsAt } from '../../src/distill/session/teacher.js';
import { DeepModel } from '../../src/model/deep_model.js';
import { CHURN, sqlRows } from '../helpers/pipeline.js';
import { synthConfig, tinySynth, type SynthFixture } from '../helpers/synth.js';
import { BIN, spawnServe } from '../serve/spawn_serve.js';

const QUERY = 'PREDICT LIST_DISTINCT(transactions.article_id, 0, 7, days) RANK TOP 12 FOR EACH customers.customer_id';
const config = (extra = ''): string =>
  synthConfig(`tasks:
  churn:
    query: ${CHURN}
    split: { train_anchors: 2 }
  item_sales:
    query: PREDICT SUM(transactions.price, 0, 7, days) FOR EACH articles.article_id
    split: { train_anchors: 2 }
  next_purchases:
    query: ${QUERY}
model: { channels: 8, categorical_dim: 4, num_neighbors: [6, 3], epochs: 1, batch_size: 64, max_steps_per_epoch: 3 }
session_recommender:
  task: next_purchases
  user_base: churn
  item_base: item_sales
  session_length: 6
  train_anchors: 3
  # 317 training examples at batch 128 are 3 steps an epoch: 2 epochs left the student at its initialisation
  # (validation MAP@12 0.01), and "beats half of popularity" measured the luck of that initialisation.
  epochs: 8
  dim: 8
  user_dim: 8
  element_dim: 8
  hidden: 16
  batch_size: 128
${extra}`);

let fx: SynthFixture;
let cfg: Config;
let run: DistillSessionResult;
let exported: SessionExportResult;

beforeAll(async () => {
  setQuiet(true);
  await selectBackend('wasm');
  fx = await tinySynth(config());
  cfg = loadConfig(fx.config, { cwd: fx.dir, artifacts: fx.artifacts });
  await train({ cfg, task: 'churn', backend: 'wasm', skip_baseline: true });
  await train({ cfg, task: 'item_sales', backend: 'wasm', skip_baseline: true });
  run = await distillSession({ cfg, backend: 'wasm', cwd: fx.dir });
  exported = await exportSessionRecommender({ cfg, run: run.runId, backend: 'wasm', cwd: fx.dir, out: join(fx.artifacts, 'repo') });
}, 600_000);
afterAll(() => {
  fx?.cleanup();
  setQuiet(false);
});

describe('recommender distill', () => {
  it('labels are the distinct items of (anchor, anchor + 7 days], as DuckDB computes them from the raw CSV', async () => {
    const graph = Graph.load((await buildGraph(cfg)).dir);
    const target = cfg.sessionTarget!;
    const ex = rankingExamples(graph, target, rankingAnchors(target, graph.manifest.time_range!, 3), { seed: 0 });
    const userKeys = await tableKeys(graph, 'customers', 'VARCHAR');
    const itemKeys = await tableKeys(graph, 'articles', 'VARCHAR');
    const mine = new Map<string, string[]>();
    for (let e = 0; e < ex.users.length; e++) {
      const items = Array.from(ex.items.subarray(ex.ptr[e]!, ex.ptr[e + 1]!), (i) => String(itemKeys[i])).sort();
      mine.set(`${ex.anchors[e]}|${userKeys[ex.users[e]!]}`, items);
    }
    const anchors = [...new Set(ex.anchors)];
    const rows = await sqlRows(
      `SELECT epoch(a.t)::BIGINT AS a, customer_id AS u, list_sort(list_distinct(list(article_id))) AS items FROM read_csv('${join(fx.dir, 'transactions.csv')}', types = {'article_id': 'VARCHAR', 'customer_id': 'VARCHAR'}) x ` +
        `JOIN (SELECT to_timestamp(unnest([${anchors.join(',')}])) AS t) a ON x.t_dat > a.t AND x.t_dat <= a.t + INTERVAL 7 DAY GROUP BY ALL`,
    );
    expect(rows.length).toBe(ex.users.length);
    for (const r of rows) expect(mine.get(`${Number(r.a)}|${r.u}`)).toEqual(r.items);
  });

  it('reports MAP/recall/NDCG@12 against popularity and repeat, the ablations and the session-departure split', () => {
    const m = run.metrics;
    expect(m).toMatchObject({ task: 'next_purchases', k: 12, negatives: 'full', distillation: { teacher: null } });
    for (const x of [m.test, m.val, m.baselines.popularity.test, m.baselines.repeat.test, m.ablations.no_session.test, m.ablations.session_only.test]) {
      expect(x.map).toBeGreaterThanOrEqual(0);
      expect(x.map).toBeLessThanOrEqual(x.recall + 1e-9);
      expect(x.examples).toBeGreaterThan(0);
    }
    expect(m.session_departure.departed.student.examples + m.session_departure.rest.student.examples + m.session_departure.no_history).toBe(m.counts.test);
    expect(m.test.map).toBeGreaterThan(m.baselines.popularity.test.map * 0.5);
  });

  it('reports 95% intervals around the test MAP@12 of the student and of each baseline, and of the paired lift', () => {
    const m = run.metrics;
    const holds = (iv: [number, number] | null | undefined, v: number): void => {
      expect(iv).not.toBeNull();
      expect(iv![0]).toBeLessThanOrEqual(v + 1e-3);
      expect(iv![1]).toBeGreaterThanOrEqual(v - 1e-3);
    };
    holds(m.intervals.test.map_at_k, m.test.map);
    holds(m.intervals.test.recall_at_k, m.test.recall);
    holds(m.intervals.test_map_by_list.student, m.test.map);
    holds(m.intervals.test_map_by_list.popularity, m.baselines.popularity.test.map);
    holds(m.intervals.test_map_by_list.repeat, m.baselines.repeat.test.map);
    expect(m.intervals.lift_over_teacher).toBeNull(); // no ranking base run, no teacher
    const best = Math.max(m.baselines.popularity.test.map, m.baselines.repeat.test.map);
    holds(m.intervals.lift_over_best_baseline, m.test.map - best);
  });

  it('a session_recommender.task that is not a ranking task (or no task) is a config error naming the field', () => {
    const problem = (line: string) => {
      try {
        loadConfig(writeVariant(line), { cwd: fx.dir });
      } catch (e) {
        expect(e).toBeInstanceOf(ConfigError);
        return (e as ConfigError).problems[0]!;
      }
      throw new Error('expected a ConfigError');
    };
    expect(problem('  task: churn')).toMatchObject({ path: 'session_recommender.task', message: expect.stringMatching(/binary task; the session recommender serves a ranking task/) });
    expect(problem('  task: next_purchase')).toMatchObject({ path: 'session_recommender.task', message: 'unknown task "next_purchase"', hint: expect.stringMatching(/next_purchases/) });
  });
});

function writeVariant(taskLine: string): string {
  const path = join(fx.dir, 'variant.yaml');
  writeFileSync(path, readFileSync(fx.config, 'utf8').replace(/^  task: next_purchases$/m, taskLine));
  return path;
}

describe('with the deep recommender of the task as base run', () => {
  it('distils from its catalogue scores (KD) and reports the teacher\'s MAP@12 and the student\'s share of it', async () => {
    const deep = await train({ cfg, task: 'next_purchases', backend: 'wasm', epochs: 1 });
    const r = await distillSession({ cfg, userBase: deep.runId, itemBase: deep.runId, epochs: 1, backend: 'wasm', cwd: fx.dir });
    expect(r.metrics.distillation).toMatchObject({ teacher: deep.runId, kd_weight: 0.5, reason: null });
    expect(r.metrics.teacher!.test.examples).toBe(r.metrics.test.examples);
    expect(r.metrics.teacher_ratio).toBeCloseTo(r.metrics.test.map / r.metrics.teacher!.test.map, 3);
    expect(r.metrics.intervals.lift_over_teacher).not.toBeNull();
    expect(r.metrics.intervals.test_map_by_list.teacher![0]).toBeLessThanOrEqual(r.metrics.teacher!.test.map + 1e-3);
    // Without a ranking base run there is no teacher, and the metrics say why.
    expect(run.metrics.distillation).toMatchObject({ teacher: null, reason: expect.stringMatching(/no teacher scores|not a ranking run|neither base run/) });
  }, 300_000);
});

describe('recommender export and serve', () => {
  it('writes a config.pbtxt that Triton\'s schema and gnnctl serve accept, with the top-k outputs', () => {
    const text = readFileSync(join(exported.repository, exported.model, 'config.pbtxt'), 'utf8');
    const parsed = parseModelConfig(text);
    const served = modelSpecFromConfig(parsed, exported.model);
    expect(served.outputs.map((o) => [o.name, o.datatype, o.dims])).toEqual([
      ['articles.article_id', 'BYTES', [12]],
      ['score', 'FP32', [12]],
    ]);
    expect(served.inputByName.get('candidates')).toMatchObject({ missing: '', variable: true, optional: true });
    expect(served.inputByName.get('customers.customer_id->transactions.customer_id:article_id')).toMatchObject({ optional: false, maxSequenceLength: 6 });
    expect(exported.parity.max_abs_diff).toBeLessThan(1e-4);
    expect(exported.parity.requests).toBeGreaterThan(0);
  });

  it('gnnctl serve answers each user with the batch (TF.js) top-k; an unknown user gets the fallback; candidates restrict', async () => {
    const graph = Graph.load((await buildGraph(cfg)).dir);
    const spec = readModelJson<SessionSpec>(run.runDir, SESSION_SPEC_FILE);
    const { index, blob } = loadWeights(run.runDir);
    const weights = new Map(index.map((e) => [e.name, blob.subarray(e.offset, e.offset + e.shape.reduce((a, b) => a * b, 1))]));
    const target = cfg.sessionTarget!;
    const anchor = graph.manifest.time_range![1];
    const reqs = await sessionRequests(graph, target, spec, lastActiveUsers(graph, target, 20), anchor, 0);
    reqs.push({ ...reqs[0]!, user: 'not-a-customer' });
    // The batch answer: every user at once through the TF.js model, with the export's embedding tables.
    const embedAll = (runId: string, table: string) => {
      const m = DeepModel.load(join(fx.artifacts, 'runs', runId), graph);
      const v = tableVectorsAt(m, table, tableDepth(m, table)!, Int32Array.from({ length: graph.table(table).rows }, (_, i) => i), anchor, 1000);
      m.dispose();
      return v;
    };
    const users = { keys: await tableKeys(graph, 'customers', 'VARCHAR'), vectors: embedAll(run.metrics.user_base_run, 'customers'), dim: spec.user.dim };
    const items = { keys: await tableKeys(graph, 'articles', 'VARCHAR'), vectors: embedAll(run.metrics.item_base_run, 'articles'), dim: spec.item.dim };
    const batch = tfTopK(spec, weights, users, items, reqs);
    const server = await spawnServe(['--model-repository', exported.repository]);
    try {
      for (const [i, r] of reqs.entries()) {
        const res = await fetch(`${server.url}/v2/models/${exported.model}/infer`, { method: 'POST', body: sessionInferBody(spec, r) });
        expect(res.status).toBe(200);
        const out = ((await res.json()) as { outputs: { name: string; data: (string | number)[] }[] }).outputs;
        expect(out.find((o) => o.name === 'articles.article_id')!.data).toEqual(batch.keys[i]!.map(String));
        out.find((o) => o.name === 'score')!.data.forEach((s, j) => expect(Math.abs(Number(s) - batch.scores[i]![j]!)).toBeLessThan(1e-4));
      }
      // All at once: dynamic batches of requests with different session lengths (padded), same answers.
      const together = await Promise.all(reqs.map(async (r) => ((await (await fetch(`${server.url}/v2/models/${exported.model}/infer`, { method: 'POST', body: sessionInferBody(spec, r) })).json()) as { outputs: { name: string; data: (string | number)[] }[] }).outputs));
      together.forEach((out, i) => {
        expect(out.find((o) => o.name === 'articles.article_id')!.data).toEqual(batch.keys[i]!.map(String));
        out.find((o) => o.name === 'score')!.data.forEach((s, j) => expect(Math.abs(Number(s) - batch.scores[i]![j]!)).toBeLessThan(1e-4));
      });
      const stats = (await (await fetch(`${server.url}/v2/models/${exported.model}/stats`)).json()) as { model_stats: { inference_count: number; execution_count: number }[] };
      expect(stats.model_stats[0]!.inference_count).toBe(2 * reqs.length);
      const cands = batch.keys[1]!.slice(3, 6).map(String);
      const res = await fetch(`${server.url}/v2/models/${exported.model}/infer`, { method: 'POST', body: sessionInferBody(spec, reqs[1]!, { candidates: [cands[2]!, cands[0]!, cands[1]!] }) });
      const out = ((await res.json()) as { outputs: { name: string; data: string[] }[] }).outputs;
      expect(out[0]!.data).toEqual([...cands, ...new Array(9).fill('')]);
    } finally {
      await server.stop();
    }
  });
});

describe('the binary', () => {
  const gnnctl = (...args: string[]) => spawnSync(process.execPath, [BIN, ...args, '--artifacts', fx.artifacts], { cwd: fx.dir, encoding: 'utf8' });

  it('recommender distill --json prints the run and its metrics; a bad --epochs exits 2 naming the flag', () => {
    const ok = gnnctl('recommender', 'distill', '--config', fx.config, '--epochs', '1', '--backend', 'wasm', '--json');
    expect(ok.status, ok.stderr).toBe(0);
    const r = JSON.parse(ok.stdout) as { run_id: string; metrics: { k: number; test: { map: number } } };
    expect(r.run_id).toMatch(/^next_purchases-session-/);
    expect(r.metrics.k).toBe(12);
    const bad = gnnctl('recommender', 'distill', '--config', fx.config, '--epochs', 'zero', '--json');
    expect(bad.status).toBe(2);
    expect(bad.stderr + bad.stdout).toMatch(/--epochs/);
  }, 300_000);

  it('recommender export --json writes a version; a bad --version exits 2; a non-recommender run is refused', () => {
    const ok = gnnctl('recommender', 'export', '--config', fx.config, '--run', run.runId, '--out', join(fx.artifacts, 'repo2'), '--backend', 'wasm', '--json');
    expect(ok.status, ok.stderr).toBe(0);
    expect(JSON.parse(ok.stdout)).toMatchObject({ model: 'session-recommender', version: 1, parity: { requests: expect.any(Number) } });
    const bad = gnnctl('recommender', 'export', '--config', fx.config, '--run', run.runId, '--version', '0', '--json');
    expect(bad.status).toBe(2);
    expect(bad.stderr + bad.stdout).toMatch(/--version/);
    const wrong = gnnctl('recommender', 'export', '--config', fx.config, '--run', 'latest:churn', '--json');
    expect(wrong.status).not.toBe(0);
    expect(wrong.stderr + wrong.stdout).toMatch(/not a session recommender run|no usable distill run/);
  }, 300_000);
});
