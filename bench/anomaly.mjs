#!/usr/bin/env node
/**
 * `gnnctl anomaly` against the targets, one JSON object:
 *
 * - quality: a generated mesh (default 200 services, 72 hours of 5-minute snapshots, seed 0), fitted on
 *   its incident-free first third and scored on the rest — recall, precision, false alarms per day and
 *   detection delay per incident kind for TAGAE, static per-service thresholds and the flat autoencoder;
 *   false alarms of each at the static baseline's recall; alerts during planned scale-outs;
 * - latency: scoring one snapshot of 500 services / 3,000 calls with a full window of history
 *   (Detector.step: graph build, GATv2 encode, temporal attention, dense decode, per-service errors,
 *   top edges), p50/p99 over `--iterations` and garbage collections per 100 snapshots, through
 *   onnxruntime (the exported `tagae.onnx`, one intra-op thread: what `score` and `watch` run) and
 *   through TF.js; each the median of 3 passes.
 *   `--skip-tfjs` leaves TF.js out.
 *
 * - real data (`--data DIR`, a Nezha-layout folder such as ../shared/data/nezha-onlineboutique): spans
 *   and per-pod metrics ingested (timed), TAGAE fitted on the calmest stretch (after the last labelled
 *   fault when that lasts 3 h, else the longest gap between faults), every earlier snapshot scored, and the table printed — recall, chance recall,
 *   false-alarm episodes and AUROC per detector; AC@1, AC@3, Avg@5 per root-cause method; the recommended
 *   methods. A fault's window is [inject_time, inject_time + --fault-minutes) (default 5), cut at the next.
 *
 *   npm run build && node bench/anomaly.mjs [--services 200] [--hours 72] [--epochs 15] [--iterations 300] [--skip-quality] [--skip-tfjs] [--skip-latency]
 *   npm run build && node bench/anomaly.mjs --data ../shared/data/nezha-onlineboutique [--fault-minutes 5] [--epochs 15] --skip-latency
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { availableParallelism, loadavg } from 'node:os';
import { PerformanceObserver } from 'node:perf_hooks';
import { basename, join, resolve } from 'node:path';
import { arg, CACHE, flag, peakRssMb } from './common.mjs';

const { setQuiet } = await import('../dist/core/log.js');
const { selectBackend } = await import('../dist/compute/backend.js');
setQuiet(true);
const backend = await selectBackend('auto');
const out = { backend: backend.name };

const data = arg('data', null);
if (data !== null) out.real = await realData(data);

if (data === null && !flag('skip-quality')) {
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
    zscore: brief(ev?.zscore),
    rolling_family: brief(ev?.rolling_family),
    tagae_rolling: brief(ev?.tagae_rolling),
    combined: brief(ev?.combined),
    operating_points: ev?.operating_points,
    recommended_detector: ev?.recommended_detector,
    at_static_recall: ev?.at_static_recall,
    target_fewer_false_alarms_vs_static: 0.5,
    scale_out_alerts: score.scale_out_alerts,
    run_id: fit.run_id,
  };
}

// Latency: a random 500-service / 3,000-call snapshot and 5 earlier ones (W = 6), default model sizes.
// The weights are untrained: the cost of a forward pass does not depend on their values.
if (!flag('skip-latency')) {
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
  const { OnnxScorer, TfjsScorer } = await import('../dist/anomaly/scorer.js');
  const base = { services: {}, median: [0.01, 0.5] };
  const iterations = Number(arg('iterations', '300'));
  const snaps = Array.from({ length: 8 }, () => snapshot(0));
  const PASSES = 3;
  const measure = async (scorer) => {
    // Garbage collections during the timed steps: the p99 is where they show.
    let gcs = 0;
    const gcObserver = new PerformanceObserver((list) => (gcs += list.getEntries().length));
    const p50 = [];
    const p90 = [];
    const p99 = [];
    const cpu50 = [];
    const cpu99 = [];
    for (let pass = 0; pass < PASSES; pass++) {
      const detector = new Detector(scorer, stats, a, base, emptyState('bench', Array.from({ length: 50 }, () => 1)));
      let ts = 0;
      for (let k = 0; k < a.window + 10; k++) await detector.step(snapshot((ts += 60)), []);
      const ms = [];
      const cpu = [];
      gcObserver.observe({ entryTypes: ['gc'] });
      for (let k = 0; k < iterations; k++) {
        const s = { ...snaps[k % snaps.length], ts: (ts += 60) };
        const c0 = process.cpuUsage();
        const t0 = performance.now();
        await detector.step(s, []);
        ms.push(performance.now() - t0);
        const c = process.cpuUsage(c0);
        cpu.push((c.user + c.system) / 1000);
      }
      await new Promise((r) => setTimeout(r, 10)); // gc entries are delivered asynchronously
      gcObserver.disconnect();
      ms.sort((x, y) => x - y);
      cpu.sort((x, y) => x - y);
      const q = (xs, p) => xs[Math.min(xs.length - 1, Math.floor(p * xs.length))];
      p50.push(q(ms, 0.5));
      p90.push(q(ms, 0.9));
      p99.push(q(ms, 0.99));
      cpu50.push(q(cpu, 0.5));
      cpu99.push(q(cpu, 0.99));
    }
    const med = (xs) => Math.round([...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)] * 100) / 100;
    // CPU time (user + system of the whole process, the runtime's threads included) per step: the work a
    // snapshot costs, which the wall-clock figures only show when the machine is otherwise idle.
    return { p50_ms: med(p50), p90_ms: med(p90), p99_ms: med(p99), p99_ms_per_pass: p99.map((v) => Math.round(v * 100) / 100), cpu_p50_ms: med(cpu50), cpu_p99_ms: med(cpu99), gc_per_100_snapshots: Math.round((gcs / (PASSES * iterations)) * 1000) / 10, load_average_1m: Math.round(loadavg()[0] * 10) / 10 };
  };
  const onnx = await OnnxScorer.fromModel(model);
  const latency = { services: n, calls: E, window: a.window, iterations, passes: PASSES, machine: { cpus: availableParallelism(), load_average_1m_at_start: Math.round(loadavg()[0] * 10) / 10 }, target_p99_ms: 5 };
  try {
    latency.onnxruntime = { runtime: 'onnxruntime-node, 1 intra-op thread', ...(await measure(onnx)) };
  } finally {
    await onnx.close();
  }
  if (!flag('skip-tfjs')) latency.tfjs = { runtime: `tfjs-${backend.name}`, ...(await measure(new TfjsScorer(model))) };
  out.latency = latency;
  model.params.dispose();
}
out.peak_rss_mb = peakRssMb();

/** Nezha layout: metrics/<date>/<pod>_metric.csv, spans/<date>.parquet, faults/<date>-fault_list.json. */
async function realData(dir) {
  const root = resolve(dir);
  const work = join(CACHE, `anomaly-real-${basename(root)}`);
  mkdirSync(work, { recursive: true });
  const faultMinutes = Number(arg('fault-minutes', '5'));
  const faults = [];
  for (const f of readdirSync(join(root, 'faults')).filter((x) => x.endsWith('.json')).sort()) {
    for (const list of Object.values(JSON.parse(readFileSync(join(root, 'faults', f), 'utf8')))) {
      // inject_time (UTC) rather than inject_timestamp, which the dataset's README says is sometimes off
      for (const x of list) faults.push({ start: Date.parse(`${x.inject_time.replace(' ', 'T')}Z`) / 1000, kind: x.inject_type, pod: x.inject_pod });
    }
  }
  faults.sort((x, y) => x.start - y.start);
  const iso = (t) => new Date(t * 1000).toISOString().replace('.000Z', 'Z');
  const rows = faults.map((f, k) => `${iso(f.start)},${iso(Math.min(f.start + faultMinutes * 60, faults[k + 1]?.start ?? Infinity))},${f.kind},${f.pod}`);
  writeFileSync(join(work, 'labels.csv'), `start,end,kind,root_cause\n${rows.join('\n')}\n`);
  const metricsColumns = ['CpuUsage(m)', 'CpuUsageRate(%)', 'MemoryUsage(Mi)', 'MemoryUsageRate(%)', 'SyscallRead', 'SyscallWrite', 'NetworkReceiveBytes', 'NetworkTransmitBytes', 'PodClientLatencyP90(s)', 'PodServerLatencyP90(s)', 'PodClientLatencyP95(s)', 'PodServerLatencyP95(s)', 'PodClientLatencyP99(s)', 'PodServerLatencyP99(s)', 'PodWorkload(Ops)'];
  const config = {
    name: `real-${basename(root)}`,
    anomaly: {
      metrics: { path: join(root, 'metrics/*/*.csv'), ts_column: 'Time', service_column: 'PodName', service_from: 'strip_replica', feature_columns: metricsColumns },
      spans: { path: join(root, 'spans/*.parquet'), trace_id_column: 'TraceID', span_id_column: 'SpanID', parent_span_id_column: 'ParentID', service_column: 'PodName', start_column: 'StartTimeUnixNano', end_column: 'EndTimeUnixNano', status_column: null, service_from: 'strip_replica', service_map: true },
      labels: { path: join(work, 'labels.csv'), root_cause_column: 'root_cause', service_from: 'strip_replica' },
      snapshot_seconds: 60,
    },
  };
  writeFileSync(join(work, 'config.yaml'), JSON.stringify(config, null, 2)); // JSON is YAML
  const { loadConfig } = await import('../dist/config/load.js');
  const { withDuck } = await import('../dist/data/duck.js');
  const { loadSnapshots } = await import('../dist/anomaly/source.js');
  const { fitAnomaly } = await import('../dist/anomaly/fit.js');
  const { scoreAnomaly } = await import('../dist/anomaly/score.js');
  const cfg = loadConfig(join(work, 'config.yaml'), { artifacts: join(CACHE, 'artifacts-anomaly-real') });
  const t0 = performance.now();
  const loaded = await withDuck(({ conn }) => loadSnapshots(conn, cfg, {}));
  const ingest = { seconds: Math.round((performance.now() - t0) / 100) / 10, spans: loaded.spans.spans, calls: loaded.spans.calls, snapshots: loaded.snapshots.length, service_map_edges: loaded.spans.serviceMapEdges, load_average_1m: Math.round(loadavg()[0] * 10) / 10 };
  // The calmest stretch: after the last fault (effects settle for 10 minutes) when it lasts 3 hours or
  // more, so every labelled fault is scored; else the longest gap between faults.
  const first = loaded.snapshots[0].ts;
  const last = loaded.snapshots[loaded.snapshots.length - 1].ts + 60;
  const settle = faultMinutes * 60 + 600;
  let best = { from: (faults[faults.length - 1]?.start ?? first - settle) + settle, until: last };
  if (best.until - best.from < 3 * 3600) {
    best = { from: first, until: faults[0]?.start ?? last };
    faults.forEach((f, k) => {
      const from = f.start + settle;
      const until = faults[k + 1]?.start ?? last;
      if (until - from > best.until - best.from) best = { from, until };
    });
  }
  const epochs = arg('epochs', null);
  const fit = await fitAnomaly(cfg, { from: best.from, until: best.until, epochs: epochs === null ? undefined : Number(epochs) });
  const score = await scoreAnomaly(cfg, { run: fit.run_id, from: first, to: best.from, out: join(fit.run_dir, 'scores.parquet') });
  const ev = score.evaluation;
  const det = (q) => q && { recall: q.recall, chance_recall: q.chance_recall, false_alarm_episodes: q.false_alarms, false_alarms_per_day: q.false_alarms_per_day, auroc: q.auroc };
  const rc = ev?.root_cause;
  return {
    data: root,
    fault_minutes: faultMinutes,
    ingest,
    fit: { from: fit.fit_from, until: fit.fit_until, snapshots: fit.train_snapshots + fit.warmup_snapshots, seconds: fit.seconds, static_baseline_columns: fit.static_baseline_columns, snapshots_without_edges: fit.snapshots_without_edges, root_cause_weights: fit.root_cause_weights },
    scored: { snapshots: score.snapshots, incidents: ev?.incidents, seconds: score.seconds },
    detection: { tagae: det(ev?.tagae), static: det(ev?.static), flat: det(ev?.flat), zscore: det(ev?.zscore), rolling_family: det(ev?.rolling_family), tagae_rolling: det(ev?.tagae_rolling), combined: det(ev?.combined) },
    // a fixed threshold per detector chosen on the earlier half of the faults; its figures on the later half
    detection_operating_points: ev?.operating_points,
    recommended_detector: ev?.recommended_detector,
    root_cause: rc && Object.fromEntries(Object.entries(rc.methods).map(([m, q]) => [m, { ac_at_1: q.ac_at_1, ac_at_1_interval: q.ac_at_1_interval, ac_at_3: q.ac_at_3, ac_at_3_interval: q.ac_at_3_interval, avg_at_5: q.avg_at_5, ac_at_1_by_kind: Object.fromEntries(Object.entries(q.by_kind).map(([k, v]) => [k, v.ac_at_1])), ac_at_3_by_kind: Object.fromEntries(Object.entries(q.by_kind).map(([k, v]) => [k, v.ac_at_3])) }])),
    // the recommendation is chosen on the earlier half of the faults; its figures on the later half
    root_cause_selection: rc?.selection && { validation_incidents: rc.selection.validation_incidents, test_incidents: rc.selection.test_incidents, validation_ac_at_1: Object.fromEntries(Object.entries(rc.selection.validation).map(([m, q]) => [m, q.ac_at_1])), test: Object.fromEntries(Object.entries(rc.selection.test).map(([m, q]) => [m, { ac_at_1: q.ac_at_1, ac_at_1_interval: q.ac_at_1_interval, ac_at_3: q.ac_at_3 }])) },
    recommended_method: ev?.recommended_method,
    run_id: fit.run_id,
  };
}
mkdirSync(CACHE, { recursive: true });
writeFileSync(join(CACHE, 'anomaly-last.json'), `${JSON.stringify(out, null, 2)}\n`);
process.stdout.write(`${JSON.stringify(out)}\n`);
