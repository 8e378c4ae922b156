#!/usr/bin/env node
/**
 * Export of a distilled model at a size (default `medium`: 100k customers, 10k articles): wall time of
 * `gnnctl export` with the embeddings already computed (what the pipeline and refresh do), model.onnx and
 * embedding sizes, the TF.js ↔ onnxruntime parity on 1,000 test rows and onnxruntime's batch-1 latency;
 * with `--serve`, `gnnctl serve` on the exported repository under `gnnctl bench serve`'s open-loop load.
 * One JSON object.
 *
 *   npm run build && node bench/export.mjs --size medium [--serve] [--rate 2000] [--duration 30]
 *
 * The deep and distilled runs it exports are trained briefly (not timed): the export's cost depends on the
 * model's shape and the embedding tables, not on how well it was trained.
 */
import { spawn, spawnSync } from 'node:child_process';
import { statSync } from 'node:fs';
import { join } from 'node:path';
import { arg, benchConfig, dataset, flag, peakRssMb, ROOT } from './common.mjs';

const size = arg('size', 'medium');
const data = await dataset(size);
const { loadConfig } = await import('../dist/config/load.js');
const { train } = await import('../dist/train/trainer.js');
const { distill } = await import('../dist/distill/distill.js');
const { embed } = await import('../dist/embed/embed.js');
const { exportModel } = await import('../dist/export/export.js');
const { setQuiet } = await import('../dist/core/log.js');
setQuiet(true);

const cfgPath = benchConfig(size, data);
const cfg = loadConfig(cfgPath);
cfg.taskSpecs.fraud.model = { ...cfg.taskSpecs.fraud.model, max_steps_per_epoch: 100 };
const base = arg('run', null) ?? (await train({ cfg, task: 'fraud', epochs: 1, skip_baseline: true })).runId;
const WEEK = 7 * 86400;
cfg.distillation = { ...cfg.distillation, train_window: WEEK, embedding_cadence: WEEK, max_train_examples: 20_000 };
const distilled = await distill({ cfg, base, epochs: 1 });

const files = [];
const embedSeconds = {};
for (const table of ['customers', 'articles']) {
  const e = await embed({ cfg, run: base, table, out: join(cfg.artifactsDir, `bench-export-${table}.parquet`) });
  files.push(e.path);
  embedSeconds[table] = e.seconds;
}

const repo = join(cfg.artifactsDir, 'bench-model-repository');
const t = performance.now();
const r = await exportModel({ cfg, run: distilled.runId, embeddings: files, out: repo, parityExamples: 1000 });
const seconds = (performance.now() - t) / 1000;
const versionDir = r.dir;
const out = {
  bench: 'export',
  size,
  seconds: Math.round(seconds * 100) / 100,
  model_onnx_mib: Math.round((r.model_bytes / 2 ** 20) * 100) / 100,
  embedding_rows: r.embedding_rows,
  embeddings_mib: Math.round((files.reduce((s, f) => s + statSync(f).size, 0) / 2 ** 20) * 100) / 100,
  parity: r.parity,
  embed_seconds_before_export: embedSeconds,
  peak_rss_mb: peakRssMb(),
  runs: { base, distilled: distilled.runId },
  dir: versionDir,
};

if (flag('serve')) out.serve = await serveLoad(repo, ['customers', 'articles'].map((t) => join(versionDir, `embeddings.${t}.parquet`)));
console.log(JSON.stringify(out));

/** gnnctl serve on the repository in one process, gnnctl bench serve against it in another. */
async function serveLoad(repository, keys) {
  const bin = join(ROOT, 'bin', 'gnnctl.js');
  const port = Number(arg('port', '18765'));
  const server = spawn(process.execPath, [bin, 'serve', '--model-repository', repository, '--port', String(port), '--quiet'], { stdio: ['ignore', 'ignore', 'inherit'] });
  try {
    const url = `http://127.0.0.1:${port}`;
    for (let i = 0; ; i++) {
      const ready = await fetch(`${url}/v2/health/ready`).then((x) => x.ok, () => false);
      if (ready) break;
      if (i > 600) throw new Error('gnnctl serve did not become ready in 60 s');
      await new Promise((res) => setTimeout(res, 100));
    }
    const b = spawnSync(process.execPath, [bin, 'bench', 'serve', '--url', url, '--model', cfg.export.name, '--rate', arg('rate', '2000'), '--duration', arg('duration', '30'), '--warmup', '3', '--json', '--keys', ...keys], { encoding: 'utf8', maxBuffer: 1 << 26 });
    if (b.status !== 0) return { error: b.stderr.split('\n').slice(-5).join(' ') };
    return JSON.parse(b.stdout);
  } finally {
    server.kill('SIGTERM');
  }
}
