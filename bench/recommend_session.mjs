#!/usr/bin/env node
/**
 * Issue 34 item 3: the session recommender (distilled, `gnnctl recommender distill`) against the deep model
 * it distils, on the same examples. Reads a ranking run of bench/recommend.mjs (same --size and --preset),
 * adds a `session_recommender` block to that bench's config with the run as both bases (so it also
 * teaches, KD on), distils, and prints the student's test MAP@12 beside the teacher's and the baselines',
 * with the 95% intervals the run records (`lift_over_teacher` is paired over test users).
 *
 *   npm run build && node bench/recommend_session.mjs --size small --preset retail|retail-dates|bursty|ratings|retail-colour
 *     [--run RUN] [--epochs N] [--session-length 16] [--kd-weight 0.5] [--verbose]
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadavg } from 'node:os';
import { arg, CACHE, peakRssMb } from './common.mjs';

const size = arg('size', 'small');
const preset = arg('preset', 'retail');
const ratingsShape = preset === 'bursty' || preset === 'ratings';
const task = ratingsShape ? 'next_rated' : 'next_purchases';
// The config bench/recommend.mjs wrote for this size and preset.
const base = join(CACHE, preset === 'retail' ? `retail-${size}-recommend.yaml` : preset === 'retail-colour' ? `retail-colour-${size}-recommend.yaml` : `${preset}-${size}-recommend.yaml`);
if (!existsSync(base)) throw new Error(`no ${base}: run node bench/recommend.mjs --size ${size} --preset ${preset} first`);
const run = arg('run', `latest:${task}`);
const block = [
  'session_recommender:',
  `  task: ${task}`,
  `  user_base: ${task}`,
  `  item_base: ${task}`,
  `  session_length: ${Number(arg('session-length', '16'))}`,
  '  min_embedding_offset: 1 day',
  '  embedding_cadence: 1 day',
  '  train_anchors: 8',
  `  kd_weight: ${Number(arg('kd-weight', '0.5'))}`,
  `  epochs: ${Number(arg('epochs', '20'))}`,
].join('\n');
const text = readFileSync(base, 'utf8').replace(/^session_recommender:\n(  .*\n?)*/m, '');
const path = join(CACHE, `session-${preset}-${size}.yaml`);
writeFileSync(path, `${text.trimEnd()}\n${block}\n`);

const { loadConfig } = await import('../dist/config/load.js');
const { distillSession } = await import('../dist/distill/distill.js');
const { setQuiet } = await import('../dist/core/log.js');
setQuiet(!process.argv.includes('--verbose'));
const cfg = loadConfig(path);
const t = performance.now();
const r = await distillSession({ cfg, userBase: run, itemBase: run });
const m = r.metrics;
const round = (x) => (x == null ? null : Math.round(x * 10000) / 10000);
console.log(
  JSON.stringify({
    bench: 'recommend_session',
    size,
    preset,
    task,
    base_run: m.user_base_run,
    run: r.runId,
    counts: m.counts,
    test_map_at_12: {
      student: round(m.test.map),
      teacher: round(m.teacher?.test.map),
      popularity: round(m.baselines.popularity.test.map),
      repeat: round(m.baselines.repeat.test.map),
      no_session: round(m.ablations.no_session.test.map),
      session_only: round(m.ablations.session_only.test.map),
    },
    val_map_at_12: { student: round(m.val.map), teacher: round(m.teacher?.val.map) },
    // student ÷ teacher test MAP@12 (issue 34's target: ≥ 0.98) and the paired interval of the difference
    teacher_ratio: m.teacher_ratio,
    intervals: m.intervals,
    distillation: m.distillation,
    seconds: Math.round((performance.now() - t) / 100) / 10,
    load_average_1m: Math.round(loadavg()[0] * 10) / 10,
    peak_rss_mb: peakRssMb(),
  }),
);
