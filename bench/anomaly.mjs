#!/usr/bin/env node
/**
 * `gnnctl anomaly` against the targets, one JSON object:
 *
 * - quality: a generated mesh (default 200 services, 72 hours of 5-minute snapshots, seed 0), fitted on
 *   its incident-free first third and scored on the rest — recall, precision, false alarms per day and
 *   detection delay per incident kind for TAGAE, static per-service thresholds and the flat autoencoder;
 *   false alarms of each at the static baseline's recall; alerts during planned scale-outs;
 * - latency: scoring one snapshot of 500 services / 3,000 calls with a full window of history
 *   (Detector.step: graph build, GATv2 encode, temporal attention, dense decode, per-service errors),
 *   p50/p99 over `--iterations`. Through TF.js (wasm): the scorer has no ONNX export yet.
 *
 *   npm run build && node bench/anomaly.mjs [--services 200] [--hours 72] [--epochs 15] [--iterations 300] [--skip-quality]
 */
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { arg, CACHE, flag, peakRssMb } from './common.mjs';

const { setQuiet } = await import('../dist/core/log.js');
const { selectBackend } = await import('../dist/compute/backend.js');
setQuiet(true);
const backend = await selectBackend('auto');
const out = { backend: backend.name };

if (!flag('skip-quality')) {
  const services = Number(arg('services', '200'));
  const hours = Number(arg('hours', '72'));
  const dir = join(CACHE, `mesh-${services}-${hours}`);
  const { generateMesh } = await import('../dist/datasets/mesh/generate.js');
  if (!existsSync(join(dir, 'config.yaml'))) generateMesh({ out: dir, services, hours, seed: 0 });
  const { loadConfig } = await import('../dist/config/load.js');
  const { fitAnomaly } = await import('../dist/anomaly/fit.js');
  const { scoreAnomaly } = await import('../dist/anomaly/score.js');
  const cfg = loadConfig(join(dir, 'config.yaml'), { artifacts: join(CACHE, 'artifacts-anomaly') });
  const epochs = arg('epochs', null);
  const fit = await fitAnomaly(cfg, { epochs: epochs === null ? undefined : Number(epochs) });
  const score = await scoreAnomaly(cfg, { run: fit.run_id, out: join(fit.run_dir, 'scores.parquet') });
  const ev = score.evaluation;
  const brief = (q) => q && { recall: q.recall, precision: q.precision, false_alarms: q.false_alarms, false_alarms_per_day: q.false_alarms_per_day, by_kind: q.by_kind };
  out.quality = {
    services,
    hours,
    snapshots_scored: score.snapshots,
    incidents: ev?.incidents,
    fit_seconds: fit.seconds,
    epochs: fit.epochs,
    final_loss: fit.loss[fit.loss.length - 1],
    score_seconds: score.seconds,
    tagae: brief(ev?.tagae),
    static: brief(ev?.static),
    flat: brief(ev?.flat),
    at_static_recall: ev?.at_static_recall,
    target_fewer_false_alarms_vs_static: 0.5,
    scale_out_alerts: score.scale_out_alerts,
    run_id: fit.run_id,
  };
}

// Latency: a random 500-service / 3,000-call snapshot and 5 earlier ones (W = 6), default model sizes.
// The weights are untrained: the cost of a forward pass does not depend on their values.
{
  const { Rng } = await import('../dist/core/rng.js');
  const { Tagae } = await import('../dist/anomaly/model.js');
  const { Detector, emptyState } = await import('../dist/anomaly/detector.js');
  const { anomalySchema } = await import('../dist/config/anomaly_schema.js');
  const n = 500;
  const E = 3000;
  const F = 8;
  const rng = new Rng(1);
  const services = Array.from({ length: n }, (_, i) => `svc-${i}`);
  const pairs = new Set();
  while (pairs.size < E) {
    const s = rng.int(n);
    const d = rng.int(n);
    if (s !== d) pairs.add(s * n + d);
  }
  const list = [...pairs];
  const snapshot = (ts) => ({
    ts,
    services,
    features: Float32Array.from({ length: n * F }, () => rng.next()),
    src: Int32Array.from(list, (p) => Math.floor(p / n)),
    dst: Int32Array.from(list, (p) => p % n),
    rate: Float32Array.from(list, () => 1 + rng.next() * 100),
    edgeFeatures: Float32Array.from({ length: E * 2 }, () => rng.next()),
  });
  const a = anomalySchema.parse({ metrics: { path: 'x.csv' }, calls: { path: 'y.csv' } });
  const stats = { node: Array.from({ length: F }, (_, i) => ({ name: `f${i}`, log: true, mean: 0.5, std: 0.3 })), edge: [0, 1].map((i) => ({ name: `e${i}`, log: true, mean: 0.5, std: 0.3 })) };
  const model = new Tagae({ featDim: F, edgeExtra: 2, hidden: a.hidden, heads: a.heads, embeddingDim: a.embedding_dim, window: a.window, structureWeight: a.structure_weight, negativeRatio: a.negative_ratio, allPairsMaxNodes: a.all_pairs_max_nodes, seed: 0 });
  const base = { services: {}, median: [0.01, 0.5] };
  const detector = new Detector(model, stats, a, base, emptyState('bench', Array.from({ length: 50 }, () => 1)));
  const iterations = Number(arg('iterations', '300'));
  let ts = 0;
  for (let k = 0; k < a.window + 10; k++) detector.step(snapshot((ts += 60)), []);
  const snaps = Array.from({ length: 8 }, () => snapshot(0));
  const ms = [];
  for (let k = 0; k < iterations; k++) {
    const s = { ...snaps[k % snaps.length], ts: (ts += 60) };
    const t0 = performance.now();
    detector.step(s, []);
    ms.push(performance.now() - t0);
  }
  ms.sort((x, y) => x - y);
  const q = (p) => Math.round(ms[Math.min(ms.length - 1, Math.floor(p * ms.length))] * 100) / 100;
  out.latency = { services: n, calls: E, window: a.window, runtime: `tfjs-${backend.name}`, onnx: 'not exported (no ONNX export of the scorer yet)', iterations, p50_ms: q(0.5), p90_ms: q(0.9), p99_ms: q(0.99), target_p99_ms: 5 };
  model.params.dispose();
}
out.peak_rss_mb = peakRssMb();
mkdirSync(CACHE, { recursive: true });
writeFileSync(join(CACHE, 'anomaly-last.json'), `${JSON.stringify(out, null, 2)}\n`);
process.stdout.write(`${JSON.stringify(out)}\n`);
