/**
 * The distilled student never loses to its own ablation (issue 33): `distill` keeps the variant best on
 * validation and `export` ships that one. Forced on tiny data: the teacher is a fraud run trained on the
 * inverted label (`transactions.fraud = 0`, same tables and task name), and with `kd_weight: 1` the full
 * student learns only from the teacher's predictions, so it ranks frauds last; the ablations learn from the
 * labels — so an ablation wins on validation beyond noise, is written as the run's student and is what the
 * exported model computes (read back from the run's and the version's manifests).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { selectBackend } from '../../src/compute/backend.js';
import { loadConfig, type Config } from '../../src/config/load.js';
import { distill, type DistillManifest, type DistillMetrics, type DistillResult } from '../../src/distill/distill.js';
import { STUDENT_VARIANTS } from '../../src/distill/student_choice.js';
import { exportModel, type ExportResult } from '../../src/export/export.js';
import type { StudentSpec } from '../../src/model/student/spec.js';
import { readManifest, readModelJson } from '../../src/artifacts/run_store.js';
import { train } from '../../src/train/trainer.js';
import { setQuiet } from '../../src/core/log.js';
import { FRAUD, pipelineConfig } from '../helpers/pipeline.js';
import { tinySynth, type SynthFixture } from '../helpers/synth.js';

/** The inputs each variant reads. */
const USES = {
  student: { use_embeddings: true, use_rti: true },
  features_only: { use_embeddings: false, use_rti: false },
  embedding_only: { use_embeddings: true, use_rti: false },
  rti_only: { use_embeddings: false, use_rti: true },
} as const;

let fx: SynthFixture;
let cfg: Config;
let run: DistillResult;
let exported: ExportResult;

beforeAll(async () => {
  setQuiet(true);
  await selectBackend('wasm');
  const model = '{ channels: 8, categorical_dim: 4, num_neighbors: [6, 3], epochs: 2, batch_size: 64, max_steps_per_epoch: 20 }';
  fx = await tinySynth(pipelineConfig({ distillation: { kd_weight: 1 }, model }));
  cfg = loadConfig(fx.config, { cwd: fx.dir, artifacts: fx.artifacts });
  // The teacher: the same task name over the same tables, trained to predict the opposite label.
  const inverted = join(fx.dir, 'inverted.yaml');
  writeFileSync(inverted, readFileSync(fx.config, 'utf8').replace(FRAUD, FRAUD.replace('fraud = 1', 'fraud = 0')));
  const base = await train({ cfg: loadConfig(inverted, { cwd: fx.dir, artifacts: fx.artifacts }), task: 'fraud', backend: 'wasm', skip_baseline: true });
  run = await distill({ cfg, base: base.runId, backend: 'wasm' });
  exported = await exportModel({ cfg, run: run.runId, out: join(fx.artifacts, 'repo'), backend: 'wasm' });
});
afterAll(() => {
  fx?.cleanup();
  setQuiet(false);
});

describe('a distill run whose ablation beats the full student on validation', () => {
  it('keeps the ablation best on the selection metric: metrics.json names it, with the reason and interval, and its val/test are the run\'s', () => {
    const m = JSON.parse(readFileSync(join(run.runDir, 'metrics.json'), 'utf8')) as DistillMetrics;
    expect(m.chosen).not.toBe('student');
    // the selection metric: distillation.early_stopping_metric (the bundled block's `ap`), else AUROC
    const metric = cfg.distillation!.early_stopping_metric ?? 'auroc';
    const score = (x: unknown): number => (x as Record<string, number>)[metric]!;
    const val = { student: score(m.full_student.val), ...Object.fromEntries(Object.entries(m.ablations).map(([k, v]) => [k, score(v.val)])) } as Record<string, number>;
    for (const v of STUDENT_VARIANTS) expect(val[m.chosen]!, v).toBeGreaterThanOrEqual(val[v]!);
    expect(val[m.chosen]!).toBeGreaterThan(val.student!);
    // and beyond noise: the paired bootstrap interval of its lift over the full student lies above 0
    expect(m.chosen_val_lift![0]).toBeGreaterThan(0);
    expect(m.chosen_reason).toContain(`val ${metric}`);
    const kept = m.ablations[m.chosen as Exclude<typeof m.chosen, 'student'>];
    expect(m.val).toEqual(kept.val);
    expect(m.test).toEqual(kept.test);
    expect(m.best_epoch).toBe(kept.best_epoch);
  });

  it('the run manifest says which (student_kind fact_row, headline chosen), and student.json is the ablation\'s spec', () => {
    const man = readManifest<DistillManifest>(run.runDir);
    const m = run.metrics;
    expect(man.student_kind).toBe('fact_row');
    expect((man.metrics as { chosen: string }).chosen).toBe(m.chosen);
    const spec = readModelJson<StudentSpec>(run.runDir, 'student.json');
    expect({ use_embeddings: spec.use_embeddings, use_rti: spec.use_rti }).toEqual(USES[m.chosen]);
  });

  it('export ships that ablation: the version manifest names its inputs, and the ONNX model agrees with it within 1e-4', () => {
    const v = JSON.parse(readFileSync(join(exported.dir, 'manifest.json'), 'utf8')) as { distilled_run: string; student: { kind: string; use_embeddings: boolean; use_rti: boolean } };
    expect(v.distilled_run).toBe(run.runId);
    expect(v.student).toEqual({ kind: 'fact_row', ...USES[run.metrics.chosen] });
    expect(exported.parity!.max_abs_diff).toBeLessThanOrEqual(1e-4);
  });
});
