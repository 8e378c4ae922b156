#!/usr/bin/env node
/**
 * Distillation: the bundled `gnnctl distill` end to end (seconds, peak RSS, where the time goes) and the
 * student ablations docs/distillation.md's table reports — AUROC, AP, precision/recall at FPR 1 % and 5 %, for the
 * teacher and each student variant, all trained on one prepared data set (same rows, embeddings, RTI).
 * Needs a fraud teacher run in the config's artifacts (`gnnctl train --task fraud`).
 *
 *   npm run build && node bench/distill.mjs --config configs/retail.yaml [--variants '{"name":{"kd_temperature":2}}'] [--epochs 10]
 *   node bench/distill.mjs --config configs/retail.yaml --end-to-end        # the command as a user runs it
 */
import { arg, flag, peakRssMb } from './common.mjs';

const { loadConfig } = await import('../dist/config/load.js');
const { setQuiet } = await import('../dist/core/log.js');
const { distill, prepareDistill } = await import('../dist/distill/distill.js');
const { trainStudent, summarize } = await import('../dist/distill/student_training.js');
const { StudentFeatures } = await import('../dist/model/student/features.js');
setQuiet(!flag('verbose'), true);
const cfg = loadConfig(arg('config', 'configs/retail.yaml'));
const epochs = arg('epochs') ? Number(arg('epochs')) : undefined;
const pick = (m) => ({ auroc: m.auroc, ap: m.ap, recall_at_fpr_1: m.recall_at_fpr_1, precision_at_fpr_1: m.precision_at_fpr_1, recall_at_fpr_5: m.recall_at_fpr_5, precision_at_fpr_5: m.precision_at_fpr_5 });

if (flag('end-to-end')) {
  const t = performance.now();
  const r = await distill({ cfg, epochs });
  const m = r.metrics;
  console.log(JSON.stringify({
    bench: 'distill end to end',
    seconds: Math.round((performance.now() - t) / 100) / 10,
    peak_rss_mb: peakRssMb(),
    counts: m.counts,
    test: pick(m.test),
    teacher_test: m.teacher ? pick(m.teacher.test) : null,
    teacher_ratio: m.teacher_ratio,
    teacher_ap_ratio: m.teacher_ap_ratio,
    student_parameters: m.student.parameters,
    teacher_parameters_without_embeddings: m.teacher_model.parameters_without_embeddings,
    run: r.runId,
  }));
} else {
  const t0 = performance.now();
  const p = await prepareDistill({ cfg });
  const prepared = Math.round((performance.now() - t0) / 100) / 10;
  const { d, spec, features, data, labels, ranges, objective, teacherPred, seed } = p;
  const variants = JSON.parse(arg('variants', '{"bundled":{}}'));
  const rows = {
    teacher: teacherPred ? pick(objective.metrics(labels.subarray(ranges.test[0], ranges.test[1]), teacherPred.subarray(ranges.test[0], ranges.test[1]))) : null,
    // The teacher on the student's training rows: in-sample for the teacher, so its soft targets there
    // are closer to the labels than on test (how much the KD term can add beyond the labels).
    teacher_train: teacherPred ? pick(objective.metrics(labels.subarray(ranges.train[0], ranges.train[1]), teacherPred.subarray(ranges.train[0], ranges.train[1]))) : null,
  };
  for (const [name, v] of Object.entries(variants)) {
    const o = { ...d, ...v };
    const t = performance.now();
    // A variant that changes the RTI element features (rti_minute_recency) reads its own feature builder.
    const rti = 'rti_minute_recency' in v ? spec.rti.map((r) => ({ ...r, minute_recency: v.rti_minute_recency || undefined })) : spec.rti;
    const vspec = { ...spec, rti, hidden: [o.hidden, Math.max(2, Math.floor(o.hidden / 2))], element_dim: o.element_dim, proj_dim: o.projection_dim, use_embeddings: o.use_embeddings ?? spec.use_embeddings, use_rti: o.use_rti ?? spec.use_rti };
    const s = trainStudent(
      vspec,
      rti === spec.rti ? features : new StudentFeatures(p.graph, vspec), data, labels, ranges, objective, teacherPred, o.kd_weight,
      { epochs: o.epochs_override ?? epochs ?? o.epochs, batchSize: o.batch_size, lr: o.lr, patience: o.patience, dropout: o.dropout, seed: o.seed ?? seed, kdTemperature: o.kd_temperature, positiveWeight: o.positive_weight, emaDecay: o.ema_decay, emaEpochs: o.ema_epochs, selectBy: o.early_stopping_metric },
    );
    const params = s.model.parameterCount();
    const curve = s.epochs.map((e) => [e.val.auroc, e.val.ap]);
    const r = summarize(s);
    rows[name] = { ...pick(r.test), val_auroc: r.val.auroc, val_ap: r.val.ap, best_epoch: r.best_epoch, val_curve: curve, parameters: params, seconds: Math.round((performance.now() - t) / 100) / 10 };
    console.error(JSON.stringify({ [name]: rows[name] }));
  }
  console.log(JSON.stringify({ bench: 'distill ablations', prepare_seconds: prepared, counts: { train: ranges.train[1], val: ranges.val[1] - ranges.val[0], test: ranges.test[1] - ranges.test[0] }, timings: p.timings, rows, peak_rss_mb: peakRssMb() }));
  p.teacherModel.dispose();
}
