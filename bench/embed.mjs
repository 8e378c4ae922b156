#!/usr/bin/env node
/**
 * Batch embeddings of every customer with a churn run: exact (layer-wise) and sampled mode, end to end
 * (graph loading included) and compute-only entities/s, peak RSS (of this process, and per mode of one
 * `gnnctl embed` process: `<mode>.process`); with `--reference`, the PyTorch reference's sampled and
 * layer-wise figures on the same data, and the ratios (`memory_ratio_*`: process peak RSS per mode).
 *
 *   npm run build && node bench/embed.mjs --size medium [--run RUN] [--exact-run RUN] [--reference] [--repeats 3]
 * Without --run / --exact-run it trains the 1-epoch churn runs first (not timed): sampled mode embeds with a
 * run trained with `last` sampling, exact mode with one trained with `uniform` sampling (see below).
 *
 * Like with like: the reference times its forward pass only (data in memory), median of 3 repeats in one
 * process, at its test anchor (7 days before the data's last day). So each mode here runs `--repeats`
 * times in this process and reports the median compute-only rate (`entities_per_s`: entities over the
 * time spent computing representations, without graph loading, worker start-up, key reading or Parquet
 * writing, which `seconds_end_to_end` includes), at the same anchor. Each embed() call starts its own
 * workers, so those passes are cold; `steady` keeps one pool over the passes, as the reference keeps its
 * process (see below), and `ratio_*_steady` compares that. `ratio_*` compares those cold calls with the
 * reference's warm median; `ratio_*_cold` with the reference's own first call in a fresh process
 * (`--repeats 1`), cold against cold. The work is the same too:
 * - sampled: the reference's `forward_sampled` takes each customer's 10 most recent transactions and their
 *   articles; the `last`-sampled run here samples the same tree ([10, 5] fanouts: a transaction's customer
 *   and article);
 * - exact: the reference's `full` mode aggregates every transaction before the anchor (≈ 2M at medium).
 *   Exact mode of a `last`-sampled run aggregates only the 10 most recent per customer, as it was trained,
 *   so exact mode here embeds with a `uniform`-sampled run, whose exact neighbourhood is every transaction
 *   before the anchor (up to `exact_degree_cap`, 1,000, which no customer reaches).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { arg, CACHE, churnBench, flag, peakRssMb, reference, ROOT } from './common.mjs';

const size = arg('size', 'medium');
const repeats = Number(arg('repeats', '3'));
const { cfg, run, data } = await churnBench(size);
const { run: exactRun } = await churnBench(size, { sampling: 'uniform', runFlag: 'exact-run' });
const { embed } = await import('../dist/embed/embed.js');
const { loadavg } = await import('node:os');
// The reference's test anchor: day 0 is the first day of data, last_day = ceil(last time in days), anchor = last_day − 7.
const lastDay = JSON.parse(readFileSync(join(data, 'manifest.json'), 'utf8')).last_day;
const anchorTime = new Date(Date.parse(`${lastDay}T00:00:00Z`) - 7 * 86400e3).toISOString();
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const out = { bench: 'embed customers', size, run, exact_run: exactRun, anchor_time: anchorTime, repeats, load_average_start: loadavg().map((x) => Math.round(x * 100) / 100) };
for (const mode of ['exact', 'sampled']) {
  const runs = [];
  for (let r = 0; r < repeats; r++) {
    const cpu0 = process.cpuUsage();
    const e = await embed({ cfg, run: mode === 'exact' ? exactRun : run, mode, anchorTime, out: `${cfg.artifactsDir}/bench-embed-${mode}.parquet` });
    const cpu = process.cpuUsage(cpu0);
    runs.push({ seconds_end_to_end: e.seconds, compute_seconds: e.compute_seconds, entities_per_s: e.entities_per_s, rows: e.rows, workers: e.workers, cpu_seconds: Math.round((cpu.user + cpu.system) / 1e4) / 100 });
  }
  out[mode] = { entities_per_s: median(runs.map((x) => x.entities_per_s)), compute_seconds: median(runs.map((x) => x.compute_seconds)), seconds_end_to_end: median(runs.map((x) => x.seconds_end_to_end)), rows: runs[0].rows, runs };
}
out.peak_rss_mb = peakRssMb();

// Steady state: each embed() above starts its own two workers, so every pass is a cold one (fresh V8
// isolates, a TF.js heap first touched, for 25 batches of 4,096 at medium), while the reference's median is
// of warm repeats in one process. Here one pool is kept over `repeats` + 1 passes of the same compute
// (whole table, compute only); the first pass is reported apart and the median of the others is compared.
{
  const { exactDegreeCap, openSnapshot } = await import('../dist/embed/snapshot.js');
  const { EMBED_LAYOUT } = await import('../dist/embed/embed.js');
  const { EmbedPool } = await import('../dist/embed/pool.js');
  for (const mode of ['exact', 'sampled']) {
    const s = await openSnapshot({ cfg, run: mode === 'exact' ? exactRun : run, mode, anchorTime, out: `${cfg.artifactsDir}/bench-embed-steady.parquet` }, EMBED_LAYOUT);
    const C = s.model.spec.channels;
    const degreeCap = exactDegreeCap(cfg, s);
    const nodes = Int32Array.from({ length: s.hi - s.lo }, (_, i) => s.lo + i);
    const pool = await EmbedPool.start(2, s.model, 'auto');
    const rates = [];
    try {
      for (let r = 0; r <= repeats; r++) {
        const t = performance.now();
        if (mode === 'exact') await pool.exact(s.table, s.depth, nodes, s.anchor, degreeCap, C);
        else await pool.sampled(s.table, s.depth, nodes, s.anchor, 7, C);
        rates.push(Math.round(nodes.length / ((performance.now() - t) / 1000)));
      }
    } finally {
      await pool.close();
      s.model.dispose();
    }
    out[mode].steady = { first_pass_entities_per_s: rates[0], entities_per_s: median(rates.slice(1)), passes: rates };
  }
  out.peak_rss_mb_with_steady = peakRssMb();
}
// Memory per mode, as the reference reports it (one process per mode): `gnnctl embed` in its own process,
// its peak RSS with its workers, TF.js heaps, DuckDB and the graph (this process holds both runs and modes).
{
  const { spawnSync } = await import('node:child_process');
  const { tmpdir } = await import('node:os');
  const { rmSync } = await import('node:fs');
  const rssFile = join(tmpdir(), `gnnctl-embed-rss-${process.pid}`);
  for (const mode of ['exact', 'sampled']) {
    rmSync(rssFile, { force: true });
    const args = ['embed', '--config', join(CACHE, `retail-${size}.yaml`), '--run', mode === 'exact' ? exactRun : run, '--mode', mode, '--anchor-time', anchorTime, '--out', `${cfg.artifactsDir}/bench-embed-process-${mode}.parquet`, '--json'];
    const r = spawnSync(process.execPath, [join(ROOT, 'bench', 'gnnctl_rss.mjs'), ...args], { cwd: ROOT, env: { ...process.env, GNNCTL_BENCH_RSS_FILE: rssFile }, encoding: 'utf8', maxBuffer: 1 << 26 });
    if (r.status !== 0) throw new Error(`gnnctl embed --mode ${mode} exited ${r.status}: ${r.stderr.split('\n').slice(-4).join(' ')}`);
    const e = JSON.parse(r.stdout.trim().split('\n').pop());
    out[mode].process = { peak_rss_mb: Math.round(Number(readFileSync(rssFile, 'utf8')) / 1024), seconds: e.seconds, entities_per_s: e.entities_per_s };
  }
  rmSync(rssFile, { force: true });
}
if (flag('reference')) {
  // The reference embeds with its own trained model; train it (one epoch) if it has none yet.
  const { existsSync } = await import('node:fs');
  if (!existsSync(`${data}/gnn_churn.pt`)) reference(data, ['--mode', 'train', '--epochs', '1']);
  const sampled = reference(data, ['--mode', 'infer', '--how', 'sampled']);
  const full = reference(data, ['--mode', 'infer', '--how', 'full']);
  // Its first call in a fresh process (`--repeats 1`): cold, as each embed() call here is.
  const sampledCold = reference(data, ['--mode', 'infer', '--how', 'sampled', '--repeats', '1']);
  const fullCold = reference(data, ['--mode', 'infer', '--how', 'full', '--repeats', '1']);
  out.reference = {
    sampled_entities_per_s: sampled?.nodes_per_s ?? null,
    full_entities_per_s: full?.nodes_per_s ?? null,
    sampled_cold_entities_per_s: sampledCold?.nodes_per_s ?? null,
    full_cold_entities_per_s: fullCold?.nodes_per_s ?? null,
    sampled_peak_rss_mb: sampled?.peak_rss_mb ?? null,
    full_peak_rss_mb: full?.peak_rss_mb ?? null,
  };
  out.reference_note = 'sampled: both take the 10 most recent transactions per customer; exact: both aggregate every transaction before the anchor (the exact run was trained with uniform sampling)';
  const ratio = (a, b) => Math.round((a / b) * 100) / 100;
  if (sampled?.nodes_per_s) {
    out.ratio_sampled = ratio(out.sampled.entities_per_s, sampled.nodes_per_s);
    out.ratio_sampled_steady = ratio(out.sampled.steady.entities_per_s, sampled.nodes_per_s);
  }
  if (sampledCold?.nodes_per_s) out.ratio_sampled_cold = ratio(out.sampled.entities_per_s, sampledCold.nodes_per_s);
  if (fullCold?.nodes_per_s) out.ratio_exact_cold = ratio(out.exact.entities_per_s, fullCold.nodes_per_s);
  if (full?.nodes_per_s) {
    out.ratio_exact = ratio(out.exact.entities_per_s, full.nodes_per_s);
    out.ratio_exact_steady = ratio(out.exact.steady.entities_per_s, full.nodes_per_s);
  }
  // Peak RSS of one `gnnctl embed` process over the reference's process, per mode (target ≤ 1.5).
  if (sampled?.peak_rss_mb) out.memory_ratio_sampled = ratio(out.sampled.process.peak_rss_mb, sampled.peak_rss_mb);
  if (full?.peak_rss_mb) out.memory_ratio_exact = ratio(out.exact.process.peak_rss_mb, full.peak_rss_mb);
}
out.load_average_end = loadavg().map((x) => Math.round(x * 100) / 100);
console.log(JSON.stringify(out));
