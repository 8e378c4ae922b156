/**
 * Fake but realistic run folders for the report tests, shaped like what `train` and `distill` write
 * (see the real runs they were modelled on: a fraud train run, its distilled run and a churn run), plus a
 * model-repository export of the distilled run and the graph manifest its freshness section reads.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { BinaryMetrics } from '../../src/task/metrics.js';

export interface RunsFixture {
  root: string;
  artifacts: string;
  cleanup: () => void;
}

export function runsFixture(): RunsFixture {
  const root = mkdtempSync(join(tmpdir(), 'gnnctl-report-'));
  const artifacts = join(root, 'artifacts');
  mkdirSync(join(artifacts, 'runs'), { recursive: true });
  return { root, artifacts, cleanup: () => rmSync(root, { recursive: true, force: true }) };
}

const r4 = (x: number): number => Math.round(x * 1e4) / 1e4;

/** A concave ROC curve with `n` points from (0,0) to (1,1); larger `k` = better ranking. */
export function rocPoints(n: number, k: number): [number, number][] {
  return Array.from({ length: n }, (_, i) => {
    const f = i / (n - 1);
    return [r4(f), r4(f ** (1 / k))];
  });
}

/** A falling precision-recall curve with `n` points ending at the positive rate. */
export function prPoints(n: number, start: number, end: number): [number, number][] {
  return Array.from({ length: n }, (_, i) => {
    const r = i / (n - 1);
    return [r4(r), r4(start - (start - end) * r ** 0.7)];
  });
}

export function calibrationBins(): { bin: number; predicted: number; observed: number; count: number }[] {
  const counts = [7157, 197, 59, 49, 35, 28, 32, 39, 43, 28];
  return counts.map((count, bin) => ({ bin, predicted: r4(bin / 10 + 0.045), observed: r4(Math.min(1, bin / 10 + 0.03 + (bin % 3) * 0.02)), count }));
}

const GRAPH = (artifacts: string): { dir: string; fingerprint: string; schema_fingerprint: string } => ({ dir: join(artifacts, 'graphs', 'retail-7d337c6ca368'), fingerprint: '7d337c6ca368', schema_fingerprint: 'b14bf2d563f655b8' });

function writeRun(artifacts: string, id: string, manifest: Record<string, unknown>, metrics: unknown | null): string {
  const dir = join(artifacts, 'runs', id);
  mkdirSync(join(dir, 'model'), { recursive: true });
  writeFileSync(join(dir, 'manifest.json'), JSON.stringify({ id, ...manifest }, null, 2));
  if (metrics !== null) writeFileSync(join(dir, 'metrics.json'), JSON.stringify(metrics, null, 2));
  return dir;
}

export function binaryMetrics(auroc: number, ap: number, n: number, positiveRate: number): BinaryMetrics {
  return { auroc, ap, accuracy: 0.9675, f1: 0.5184, positive_rate: positiveRate, recall_at_fpr_1: 0.21, precision_at_fpr_1: 0.41, recall_at_fpr_5: 0.52, precision_at_fpr_5: 0.25, n };
}

export const TRAIN_BINARY_ID = 'fraud-20261122-031132-f274';
export const TRAIN_REGRESSION_ID = 'spend-20261122-040000-beef';
export const DISTILL_ID = 'fraud-distilled-20261122-032253-027a';
export const RUNNING_ID = 'fraud-20261122-050000-aaaa';

export function trainBinaryMetrics() {
  const epochs = [
    [1, 0.10725, 0.887, 0.4528, 52.1, 3565, 0.65, 4.87, 46.53],
    [2, 0.0786, 0.8892, 0.4948, 52.8, 3518, 0.64, 4.7, 47.36],
    [3, 0.0731, 0.895, 0.5364, 50.5, 3682, 0.59, 4.58, 45.24],
    [4, 0.0708, 0.9018, 0.549, 52.6, 3535, 0.61, 4.97, 46.92],
    [5, 0.0693, 0.8902, 0.5332, 46.0, 4043, 0.63, 4.15, 41.12],
    [6, 0.0689, 0.8899, 0.5301, 46.3, 4015, 0.62, 4.2, 41.4],
  ].map(([epoch, loss, auroc, ap, seconds, sps, sample, gather, step]) => ({
    epoch,
    loss,
    val: binaryMetrics(auroc!, ap!, 8259, 0.0226),
    seconds,
    seeds_per_s: sps,
    timing: { sample, gather, step },
  }));
  return {
    task: 'fraud',
    kind: 'binary',
    main_metric: 'auroc',
    val: binaryMetrics(0.9018, 0.549, 8259, 0.0226),
    test: binaryMetrics(0.9134, 0.5921, 7667, 0.0453),
    baseline: {
      val: binaryMetrics(0.874, 0.4469, 8259, 0.0226),
      test: { ...binaryMetrics(0.8653, 0.485, 7667, 0.0453), accuracy: 0.9645, f1: 0.4087 },
      // a hostile feature name: the page must escape it
      features: ['price', 'price:null', 'time:log_age', '<img src=x onerror=alert(1)>', 'transactions.customer_id:log_prior_7d'],
    },
    // as the trainer writes it: rounded to 2 digits (the report recomputes it from the test metrics)
    lift: 0.05,
    best_epoch: 4,
    epochs,
    counts: { train: 185759, val: 8259, test: 7667 },
    anchors: { window: 604800, train: [], val: '2020-09-09T00:00:00Z', test: '2020-09-16T00:00:00Z' },
    parameters: { total: 75041, without_embeddings: 65985 },
    curves: { roc: rocPoints(57, 4), pr: prPoints(43, 0.95, 0.0453), calibration: calibrationBins() },
    baseline_curves: { roc: rocPoints(31, 2.5), pr: prPoints(29, 0.9, 0.0453) },
  };
}

export function writeTrainBinaryRun(artifacts: string): string {
  return writeRun(
    artifacts,
    TRAIN_BINARY_ID,
    {
      kind: 'train',
      task: 'fraud',
      status: 'complete',
      gnnctl: '0.1.0',
      created_at: '2026-11-22T03:11:32.891Z',
      finished_at: '2026-11-22T03:17:19.771Z',
      graph: GRAPH(artifacts),
      backend: 'wasm',
      seed: 0,
      config: {
        name: 'retail',
        path: '/data/retail.yaml',
        task: { query: 'PREDICT transactions.fraud = 1 FOR EACH transactions.transaction_id', split: { train_anchors: 10 } },
        model: { encoder: 'sage', layers: 2, channels: 64, num_neighbors: [16, 8], epochs: 10, batch_size: 512, lr: 0.002 },
      },
      split: { window: 604800, train: [], val: '2020-09-09T00:00:00Z', test: '2020-09-16T00:00:00Z' },
      init_from: null,
      timings: { training_tables: 1.94, training: 257.87, evaluation: 1.48, baseline: 87.5, total: 349.04 },
    },
    trainBinaryMetrics(),
  );
}

export function trainRegressionMetrics() {
  const reg = (mae: number, rmse: number, r2: number, n: number) => ({ mae, rmse, r2, n });
  const anchors = Array.from({ length: 8 }, (_, i) => new Date(Date.UTC(2020, 6, 1 + 7 * i)).toISOString().replace('.000Z', 'Z'));
  return {
    task: 'spend',
    kind: 'regression',
    main_metric: 'mae',
    val: reg(1.2345, 2.1, 0.41, 4000),
    test: reg(1.1875, 2.05, 0.4321, 3900),
    baseline: { val: reg(1.4, 2.3, 0.3, 4000), test: reg(1.3502, 2.25, 0.3307, 3900), features: ['age', 'club_member_status:one_hot(3)'] },
    lift: 0.16,
    best_epoch: 3,
    epochs: [1, 2, 3, 4].map((epoch) => ({
      epoch,
      loss: r4(1.5 / epoch),
      val: reg(r4(1.5 - 0.1 * Math.min(epoch, 3)), r4(2.4 - 0.1 * Math.min(epoch, 3)), 0.3 + 0.03 * epoch, 4000),
      seconds: 12.5,
      seeds_per_s: 2500 + epoch,
      timing: { sample: 0.4, gather: 2.1, step: 9.8 },
    })),
    counts: { train: 32000, val: 4000, test: 3900 },
    anchors: { window: 604800, train: anchors, val: '2020-09-02T00:00:00Z', test: '2020-09-09T00:00:00Z' },
    parameters: { total: 50123, without_embeddings: 40000 },
  };
}

export function writeTrainRegressionRun(artifacts: string): string {
  return writeRun(
    artifacts,
    TRAIN_REGRESSION_ID,
    {
      kind: 'train',
      task: 'spend',
      status: 'interrupted',
      gnnctl: '0.1.0',
      created_at: '2026-11-22T04:00:00.000Z',
      finished_at: '2026-11-22T04:01:02.000Z',
      graph: GRAPH(artifacts),
      backend: 'wasm',
      seed: 7,
      config: { name: 'retail', path: '/data/retail.yaml', task: { query: 'PREDICT SUM(transactions.price, 0, 7, days) FOR EACH customers.customer_id' }, model: { encoder: 'gat', layers: 2, channels: 32 } },
      split: { window: 604800, train: [], val: '2020-09-02T00:00:00Z', test: '2020-09-09T00:00:00Z' },
      init_from: 'spend-20261121-000000-0001',
      timings: { training_tables: 3.2, training: 50.1, evaluation: 2.5, baseline: 6.2, total: 62.0 },
    },
    trainRegressionMetrics(),
  );
}

export const SNAPSHOTS = Array.from({ length: 12 }, (_, i) => new Date(Date.UTC(2020, 6, 13 + 6 * i)).toISOString().replace('.000Z', 'Z'));

export function distillMetrics() {
  const m = (auroc: number, ap: number, n = 7667, p = 0.0453) => binaryMetrics(auroc, ap, n, p);
  return {
    task: 'fraud',
    kind: 'binary',
    base_run: TRAIN_BINARY_ID,
    base_task: 'fraud',
    val: m(0.8694, 0.3842, 8259, 0.0226),
    test: m(0.9019, 0.4613),
    teacher: { val: m(0.9018, 0.549, 8259, 0.0226), test: m(0.9134, 0.5921) },
    ablations: {
      features_only: { val: m(0.7161, 0.2, 8259, 0.0226), test: m(0.7723, 0.3395), best_epoch: 3 },
      embedding_only: { val: m(0.8723, 0.43, 8259, 0.0226), test: m(0.9083, 0.535), best_epoch: 3 },
      rti_only: { val: m(0.7437, 0.25, 8259, 0.0226), test: m(0.7862, 0.3667), best_epoch: 2 },
    },
    teacher_ratio: 0.9874,
    student: { parameters: 5442, bytes: 21912, latency_ms_p50: 0.4081, latency_ms_p99: 15.9 },
    teacher_model: { parameters: 75041, parameters_without_embeddings: 65985, bytes: 300164 },
    embeddings: { source: 'computed', snapshots: SNAPSHOTS, coverage: { train: 1, val: 0.998, test: 0.9731 } },
    counts: { train: 57210, val: 8259, test: 7667 },
    epochs: [1, 2, 3, 4, 5].map((epoch) => ({ epoch, loss: r4(0.22 / epoch + 0.05), val: m(0.83 + 0.01 * epoch, 0.3 + 0.02 * epoch, 8259, 0.0226) })),
    best_epoch: 4,
    curves: { roc: rocPoints(200, 4), pr: prPoints(200, 0.85, 0.0453), calibration: calibrationBins().slice(0, 8) },
  };
}

/** The distilled run, an export of it (model repository v1) and the graph manifest with the data's time range. */
export function writeDistillRun(artifacts: string, opts: { export?: boolean } = {}): string {
  const graph = GRAPH(artifacts);
  mkdirSync(graph.dir, { recursive: true });
  // data ends 2020-09-22T23:54:12Z
  writeFileSync(join(graph.dir, 'manifest.json'), JSON.stringify({ kind: 'graph', time_range: [1582683469, 1600818852] }));
  if (opts.export !== false) {
    const v = join(artifacts, 'model_repository', 'online-model', '1');
    mkdirSync(v, { recursive: true });
    writeFileSync(
      join(v, 'manifest.json'),
      JSON.stringify({
        kind: 'export',
        gnnctl: '0.1.0',
        created_at: '2026-11-22T03:23:18.233Z',
        model: 'online-model',
        version: 1,
        task: 'fraud',
        distilled_run: DISTILL_ID,
        base_run: TRAIN_BINARY_ID,
        max_embedding_offset_seconds: 1209600,
        embeddings: [
          { table: 'customers', anchor_time: '2020-09-22T23:54:12Z', run_id: TRAIN_BINARY_ID, rows: 10000, sources: [] },
          { table: 'articles', anchor_time: '2020-09-01T00:00:00Z', run_id: TRAIN_BINARY_ID, rows: 2000, sources: [] },
        ],
      }),
    );
    // an export of another run: must not show up
    const other = join(artifacts, 'model_repository', 'other-model', '3');
    mkdirSync(other, { recursive: true });
    writeFileSync(join(other, 'manifest.json'), JSON.stringify({ kind: 'export', model: 'other-model', version: 3, distilled_run: 'someone-else', embeddings: [] }));
  }
  return writeRun(
    artifacts,
    DISTILL_ID,
    {
      kind: 'distill',
      task: 'fraud',
      status: 'complete',
      gnnctl: '0.1.0',
      created_at: '2026-11-22T03:22:06.000Z',
      finished_at: '2026-11-22T03:22:53.000Z',
      graph,
      backend: 'wasm',
      seed: 0,
      config: {
        name: 'retail',
        path: '/data/retail.yaml',
        distillation: {
          task: 'fraud',
          base: 'fraud',
          embedding_keys: ['transactions.customer_id', 'transactions.article_id'],
          max_embedding_offset: 1209600,
          min_embedding_offset: 43200,
          real_time_offset: 3600,
          real_time_interactions: { 'transactions.customer_id->customers.customer_id->transactions.customer_id': 32 },
          train_window: 4838400,
        },
        task: { query: 'PREDICT transactions.fraud = 1 FOR EACH transactions.transaction_id' },
      },
      base_run: TRAIN_BINARY_ID,
      base_task: 'fraud',
      embeddings_source: 'computed',
      split: { val: '2020-09-09T00:00:00Z', test: '2020-09-16T00:00:00Z', train_from: '2020-07-15T00:00:00Z' },
      timings: { rti: 0.86, embeddings: 2.11, teacher: 6.51, student: 17.9, ablations: 19.3, total: 46.7 },
    },
    distillMetrics(),
  );
}

/** A run still training: manifest only, no metrics.json. */
export function writeRunningRun(artifacts: string): string {
  return writeRun(
    artifacts,
    RUNNING_ID,
    { kind: 'train', task: 'fraud', status: 'running', gnnctl: '0.1.0', created_at: '2026-11-22T05:00:00.000Z', graph: GRAPH(artifacts), backend: 'wasm', seed: 0, config: {}, timings: {} },
    null,
  );
}
