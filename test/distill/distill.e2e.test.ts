/**
 * `distill` end to end on tiny synthetic data with the bundled distillation block (fraud served from a
 * fraud base run; customer and article embeddings; 16 RTI elements): the run folder and metrics the
 * command reports, and embeddings read from files `embed` wrote (the same snapshots the in-memory path
 * computes, so both give the same vectors and the same coverage).
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { distillCommand } from '../../src/cli/commands/distill.js';
import { selectBackend } from '../../src/compute/backend.js';
import { loadConfig, type Config } from '../../src/config/load.js';
import { computedEmbeddings, denseValues, embeddingFiles, fileEmbeddings } from '../../src/distill/data.js';
import { defaultCadence, distill, type DistillManifest, type DistillMetrics } from '../../src/distill/distill.js';
import type { StudentSpec } from '../../src/model/student/spec.js';
import { embed } from '../../src/embed/embed.js';
import { buildGraph } from '../../src/graph/build.js';
import { Graph } from '../../src/graph/graph.js';
import { readManifest, readModelJson } from '../../src/artifacts/run_store.js';
import { DeepModel } from '../../src/model/deep_model.js';
import { train, type TrainResult } from '../../src/train/trainer.js';
import { setQuiet } from '../../src/core/log.js';
import { maxAbsDiff, pipelineConfig, RTI_PATH } from '../helpers/pipeline.js';
import { tinySynth, type SynthFixture } from '../helpers/synth.js';

const HOUR = 3600;
const DAY = 86400;
const ABLATIONS = ['features_only', 'embedding_only', 'rti_only'] as const;

let fx: SynthFixture;
let cfg: Config;
let base: TrainResult;
let cmd: { run_dir: string; run_id: string; metrics: DistillMetrics; counts: DistillMetrics['counts'] };

beforeAll(async () => {
  setQuiet(true);
  await selectBackend('wasm');
  fx = await tinySynth(pipelineConfig());
  cfg = loadConfig(fx.config, { cwd: fx.dir, artifacts: fx.artifacts });
  base = await train({ cfg, task: 'fraud', backend: 'wasm', skip_baseline: true });
  const out = await distillCommand({ config: fx.config, artifacts: fx.artifacts, cwd: fx.dir, backend: 'wasm' });
  cmd = JSON.parse(JSON.stringify(out.result)) as typeof cmd;
});
afterAll(() => {
  fx?.cleanup();
  setQuiet(false);
});

const auroc = (m: unknown): number => (m as { auroc: number }).auroc;
const isProbabilityMetric = (x: number): boolean => Number.isFinite(x) && x >= 0 && x <= 1;

describe('distillCommand --json', () => {
  it('reports run_dir, metrics.test.auroc, the teacher (same task) and metrics.ablations.<name>.test.auroc', () => {
    expect(existsSync(cmd.run_dir)).toBe(true);
    expect(cmd).toMatchObject({ task: 'fraud', base_run: base.runId });
    expect(isProbabilityMetric(auroc(cmd.metrics.test))).toBe(true);
    expect(isProbabilityMetric(auroc(cmd.metrics.teacher!.test))).toBe(true);
    for (const a of ABLATIONS) expect(isProbabilityMetric(auroc(cmd.metrics.ablations[a].test)), a).toBe(true);
    expect(cmd.metrics.embeddings.source).toBe('computed');
  });
});

describe('the distilled run folder', () => {
  it('metrics.json: test auroc, teacher, ablations, student parameters/bytes/latency, embedding coverage', () => {
    const m = JSON.parse(readFileSync(join(cmd.run_dir, 'metrics.json'), 'utf8')) as DistillMetrics;
    expect(m).toMatchObject({ task: 'fraud', kind: 'binary', base_run: base.runId, base_task: 'fraud' });
    expect(auroc(m.test)).toBe(auroc(cmd.metrics.test));
    expect(isProbabilityMetric(auroc(m.teacher!.test))).toBe(true);
    expect(m.teacher_ratio).toBeCloseTo(auroc(m.test) / auroc(m.teacher!.test), 3);
    const ap = (x: unknown): number => (x as { ap: number }).ap;
    expect(m.teacher_ap_ratio).toBeCloseTo(ap(m.test) / ap(m.teacher!.test), 3);
    for (const k of ['recall_at_fpr_1', 'precision_at_fpr_1', 'recall_at_fpr_5', 'precision_at_fpr_5']) expect(m.test, k).toHaveProperty(k);
    for (const a of ABLATIONS) expect(isProbabilityMetric(auroc(m.ablations[a].test)), a).toBe(true);
    expect(m.student.parameters).toBeGreaterThan(0);
    expect(m.student.bytes).toBeGreaterThan(4 * m.student.parameters); // the blob holds the categorical table too
    expect(m.student.latency_ms_p50).toBeGreaterThan(0);
    expect(m.student.latency_ms_p99).toBeGreaterThanOrEqual(m.student.latency_ms_p50);
    expect(m.counts.train).toBeGreaterThan(0);
    expect(m.counts.test).toBeGreaterThan(0);
    expect(m.embeddings.snapshots.length).toBeGreaterThan(1);
    for (const k of ['train', 'val', 'test'] as const) expect(m.embeddings.coverage[k]).toBeGreaterThan(0.9);
  });

  it('metrics.json: 95% intervals holding the student\'s and the teacher\'s test AUROC, and the paired lift over the teacher', () => {
    const m = JSON.parse(readFileSync(join(cmd.run_dir, 'metrics.json'), 'utf8')) as DistillMetrics;
    const holds = (iv: [number, number] | null | undefined, v: number): void => {
      expect(iv).not.toBeNull();
      expect(iv![0]).toBeLessThanOrEqual(v + 1e-9);
      expect(iv![1]).toBeGreaterThanOrEqual(v - 1e-9);
      expect(iv![1] - iv![0]).toBeGreaterThan(0);
    };
    holds(m.intervals.test.auroc, auroc(m.test));
    holds(m.intervals.teacher_test!.auroc, auroc(m.teacher!.test));
    const lift = m.intervals.lift_over_teacher!;
    expect(lift[0]).toBeLessThanOrEqual(lift[1]);
    expect(['better', 'worse', 'tie']).toContain(m.intervals.lift_over_teacher_judgement);
    expect(cmd.metrics).toHaveProperty('intervals');
  });

  it('manifest.json traces it to its base run; student.json is the spec the bundled block asks for', () => {
    const man = readManifest<DistillManifest>(cmd.run_dir);
    expect(man).toMatchObject({ kind: 'distill', status: 'complete', task: 'fraud', base_run: base.runId, base_task: 'fraud', embeddings_source: 'computed' });
    const spec = readModelJson<StudentSpec>(cmd.run_dir, 'student.json');
    expect(spec.embeddings.map((k) => `${k.column}->${k.target}`)).toEqual(['customer_id->customers', 'article_id->articles']);
    expect(spec.rti.map((r) => [r.path, r.max_length])).toEqual([[RTI_PATH, 16]]);
    // rti_minute_recency: each element also reads log(1 + minutes since it)
    expect(spec.rti.map((r) => r.minute_recency)).toEqual([true]);
    // exclude_columns: the sales channel is neither a fact nor an RTI input; the target never is
    const columns = [...spec.numeric, ...spec.categorical, ...spec.rti.flatMap((r) => [...r.numeric, ...r.categorical])].map((c) => c.column);
    expect(columns).not.toContain('sales_channel_id');
    expect(columns).not.toContain('fraud');
  });
});

describe('embeddings from files', () => {
  let offsets: { min: number; max: number; cadence: number };
  let snapshotDir: string;
  let anchors: string[];

  beforeAll(async () => {
    // the bundled block's offsets and cadence: the grid the computed run used
    offsets = { min: 12 * HOUR, max: 14 * DAY, cadence: cfg.distillation!.embedding_cadence ?? defaultCadence(12 * HOUR, 14 * DAY) };
    // embed both key tables at every snapshot the computed run used, into the default layout
    anchors = cmd.metrics.embeddings.snapshots;
    for (const anchorTime of anchors) for (const table of ['customers', 'articles']) await embed({ cfg, run: base.runId, table, anchorTime, backend: 'wasm' });
    snapshotDir = join(fx.artifacts, 'embeddings', base.runId);
    // two `embed` calls per daily snapshot (about 30): minutes when other jobs share the two cores
  }, 600_000);

  it('the snapshot folder holds one embeddings.parquet per anchor and table', () => {
    expect(embeddingFiles(snapshotDir)).toHaveLength(2 * anchors.length);
  });

  it('fileEmbeddings equals computedEmbeddings on the same grid (values within 1e-6, same missing flags)', async () => {
    // the graph the fraud base run was trained on (its statistics fitted up to fraud's validation data), as embed reads it
    const graph = Graph.load((await buildGraph(cfg, { fit: { task: 'fraud' } })).dir);
    const t = graph.table('transactions');
    const fk = graph.edges.find((e) => e.name === 'transactions.customer_id->customers')!.parent!;
    // the last 2,000 transactions, at their own times
    const nodes = Int32Array.from({ length: 2000 }, (_, i) => t.rows - 2000 + i);
    const model = DeepModel.load(base.runDir, graph);
    try {
      const computed = await computedEmbeddings(model, Int32Array.from(nodes, (v) => fk[v]!), Float64Array.from(nodes, (v) => t.time![v]!), 'customers', offsets, 1000);
      const files = embeddingFiles(snapshotDir).filter((f) => f.includes('/customers/'));
      const fromFiles = await fileEmbeddings(graph, files, 'transactions', 'customer_id', 'customer_id', nodes, offsets, model.spec.channels);
      expect(Array.from(fromFiles.missing)).toEqual(Array.from(computed.missing));
      expect(fromFiles.missing.reduce((a, b) => a + b, 0)).toBeLessThan(nodes.length);
      expect(maxAbsDiff(denseValues(fromFiles), denseValues(computed))).toBeLessThanOrEqual(1e-6);
    } finally {
      model.dispose();
    }
  });

  it('distill with the files uses them (source "files"): the same snapshots and coverage as the computed run', async () => {
    const r = await distill({ cfg, base: base.runId, embeddings: snapshotDir, backend: 'wasm' });
    expect(r.metrics.embeddings.source).toBe('files');
    expect(r.metrics.embeddings.snapshots).toEqual(anchors);
    expect(r.metrics.embeddings.coverage).toEqual(cmd.metrics.embeddings.coverage);
    expect(readManifest<DistillManifest>(r.runDir).embeddings_source).toBe(snapshotDir);
    expect(isProbabilityMetric(auroc(r.metrics.test))).toBe(true);
    expect(Math.abs(auroc(r.metrics.test) - auroc(cmd.metrics.test))).toBeLessThanOrEqual(1e-3);
  });
});

describe('trainStudent: KD temperature and positive weight', () => {
  it('T changes the student only through the KD term (kd_weight 0: identical); a positive weight changes it', async () => {
    const { prepareDistill } = await import('../../src/distill/distill.js');
    const { trainStudent } = await import('../../src/distill/student_training.js');
    const p = await prepareDistill({ cfg, base: base.runId, backend: 'wasm', cwd: fx.dir });
    try {
      const run = (kdWeight: number, extra: { kdTemperature?: number; positiveWeight?: number }) => {
        const s = trainStudent(p.spec, p.features, p.data, p.labels, p.ranges, p.objective, p.teacherPred, kdWeight, { epochs: 1, batchSize: 64, lr: 0.003, patience: 1, dropout: 0, seed: 0, ...extra });
        s.model.dispose();
        return Array.from(s.testPred);
      };
      expect(p.teacherPred).not.toBeNull();
      expect(run(0, { kdTemperature: 3 })).toEqual(run(0, { kdTemperature: 1 }));
      expect(maxAbsDiff(run(0.5, { kdTemperature: 3 }), run(0.5, { kdTemperature: 1 }))).toBeGreaterThan(1e-5);
      expect(maxAbsDiff(run(0, { positiveWeight: 5 }), run(0, {}))).toBeGreaterThan(1e-5);
    } finally {
      p.teacherModel.dispose();
    }
  });

  it('weight averaging: a vanishing decay keeps the raw weights, a real one keeps other weights; trainRows restricts the rows', async () => {
    const { prepareDistill } = await import('../../src/distill/distill.js');
    const { trainStudent } = await import('../../src/distill/student_training.js');
    const p = await prepareDistill({ cfg, base: base.runId, backend: 'wasm', cwd: fx.dir });
    try {
      const run = (extra: { emaDecay?: number; trainRows?: Int32Array }) => {
        const s = trainStudent(p.spec, p.features, p.data, p.labels, p.ranges, p.objective, p.teacherPred, 0, { epochs: 2, batchSize: 64, lr: 0.003, patience: 5, dropout: 0, seed: 0, ...extra });
        s.model.dispose();
        return Array.from(s.testPred);
      };
      const raw = run({});
      expect(maxAbsDiff(run({ emaDecay: 1e-9 }), raw)).toBeLessThan(1e-5);
      expect(maxAbsDiff(run({ emaDecay: 0.9 }), raw)).toBeGreaterThan(1e-5);
      const [lo, hi] = p.ranges.train;
      const all = Int32Array.from({ length: hi - lo }, (_, i) => lo + i);
      expect(run({ trainRows: all })).toEqual(raw);
      expect(maxAbsDiff(run({ trainRows: all.subarray(0, Math.ceil(all.length / 3)) }), raw)).toBeGreaterThan(1e-5);
    } finally {
      p.teacherModel.dispose();
    }
  });

  it('selectBy ap: the kept epoch is the one with the best validation AP, and a regression objective refuses it', async () => {
    const { prepareDistill } = await import('../../src/distill/distill.js');
    const { trainStudent } = await import('../../src/distill/student_training.js');
    const { objectiveFor } = await import('../../src/task/objective/objective.js');
    const p = await prepareDistill({ cfg, base: base.runId, backend: 'wasm', cwd: fx.dir });
    try {
      const o = { epochs: 4, batchSize: 64, lr: 0.003, patience: 10, dropout: 0, seed: 0 };
      const s = trainStudent(p.spec, p.features, p.data, p.labels, p.ranges, p.objective, p.teacherPred, 0, { ...o, selectBy: 'ap' });
      s.model.dispose();
      const aps = s.epochs.map((e) => (e.val as { ap: number }).ap);
      expect(s.bestEpoch).toBe(aps.indexOf(Math.max(...aps)) + 1);
      expect(() => trainStudent(p.spec, p.features, p.data, p.labels, p.ranges, objectiveFor('regression'), null, 0, { ...o, selectBy: 'ap' })).toThrow(/binary/);
    } finally {
      p.teacherModel.dispose();
    }
  });

  it('distillation.ablation_max_train_examples: the ablations see that many rows, the main student all of them', async () => {
    const small = { ...cfg, distillation: { ...cfg.distillation!, ablation_max_train_examples: 40, epochs: 1 } };
    const r = await distill({ cfg: small, base: base.runId, backend: 'wasm', cwd: fx.dir });
    expect(r.metrics.counts.train).toBeGreaterThan(40);
    expect(r.metrics.counts.ablation_train).toBe(40);
    // the bundled cap (30,000) is above the tiny data's rows: the command's ablations saw all of them
    expect(cmd.counts.ablation_train).toBe(cmd.counts.train);
  });
});

describe('trainStudents over worker threads', () => {
  it('two workers give the one-thread students bit for bit (weights, metrics, predictions) and relay their epochs', async () => {
    const { prepareDistill } = await import('../../src/distill/distill.js');
    const { trainStudents } = await import('../../src/distill/student_pool.js');
    const p = await prepareDistill({ cfg, base: base.runId, backend: 'wasm', cwd: fx.dir });
    try {
      const [lo, hi] = p.ranges.train;
      const half = Int32Array.from({ length: Math.ceil((hi - lo) / 2) }, (_, i) => lo + 2 * i).filter((r) => r < hi);
      const jobs = [
        { name: 'student', variant: {}, epochs: 2, kdWeight: 0.5 },
        { name: 'features_only', variant: { use_embeddings: false, use_rti: false }, epochs: 1, kdWeight: 0, trainRows: half },
        { name: 'rti_only', variant: { use_embeddings: false }, epochs: 2, kdWeight: 0, trainRows: half },
      ];
      const ctx = {
        graph: p.graph,
        spec: p.spec,
        data: p.data,
        labels: p.labels,
        ranges: p.ranges,
        objective: p.kind,
        teacher: p.teacherPred,
        options: { batchSize: 64, lr: 0.003, patience: 5, dropout: 0.1, seed: 3, emaEpochs: 1, kdTemperature: 2 },
        backend: 'wasm' as const,
      };
      const one = await trainStudents(ctx, jobs, 1);
      // Epoch summaries and the final line go through info() to stderr, the live line to the stream.
      const lines: string[] = [];
      const spy = vi.spyOn(process.stderr, 'write').mockImplementation((s: string | Uint8Array) => lines.push(String(s)) > 0);
      setQuiet(false);
      let two: Awaited<ReturnType<typeof trainStudents>>;
      try {
        two = await trainStudents(ctx, jobs, 2, { tty: false, intervalMs: 0 });
      } finally {
        setQuiet(true);
        spy.mockRestore();
      }
      expect(two.map((s) => s.epochs.length)).toEqual([2, 1, 2]);
      jobs.forEach((j, i) => {
        const a = one[i]!;
        const b = two[i]!;
        expect(Array.from(b.testPred), j.name).toEqual(Array.from(a.testPred));
        expect(b.epochs, j.name).toEqual(a.epochs);
        expect([b.val, b.test, b.bestEpoch]).toEqual([a.val, a.test, a.bestEpoch]);
        expect([...b.best.keys()]).toEqual([...a.best.keys()]);
        for (const [k, w] of a.best) expect(Array.from(b.best.get(k)!), k).toEqual(Array.from(w));
        // The model rebuilt on this thread from the worker's weights serializes as the trained one.
        expect(Array.from(b.model.params.serialize().blob)).toEqual(Array.from(a.model.params.serialize().blob));
      });
      // Each worker trained its own variant and rows: the students differ.
      expect(maxAbsDiff(Array.from(two[0]!.testPred), Array.from(two[1]!.testPred))).toBeGreaterThan(1e-5);
      expect(maxAbsDiff(Array.from(two[1]!.testPred), Array.from(two[2]!.testPred))).toBeGreaterThan(1e-5);
      const log = lines.join('');
      for (const j of jobs) expect(log).toMatch(new RegExp(`distill ${j.name} epoch 1/${j.epochs}: loss \\d\\.\\d{4}, val auroc`));
      expect(log).toContain('distill: 3 students trained (student, features_only, rti_only)');
      for (const s of [...one, ...two]) s.model.dispose();
    } finally {
      p.teacherModel.dispose();
    }
  });
});
