/**
 * `anomaly fit` with labels naming root causes keeps the `signals_learned` weights with the run
 * (model/family_weights.json, family_weights.ts): fitted on the earlier half of the labelled faults only,
 * read back by every scorer of the run, refused with a fix when the file is damaged.
 */
import { readFileSync, writeFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateMesh } from '../../src/datasets/mesh/generate.js';
import { loadConfig } from '../../src/config/load.js';
import { fitAnomaly, type FitResult } from '../../src/anomaly/fit.js';
import { FAMILY_WEIGHTS_FILE, type FamilyWeights } from '../../src/anomaly/family_weights.js';
import { loadRun } from '../../src/anomaly/run.js';
import { signalFamilies } from '../../src/anomaly/signal_share.js';
import { setQuiet } from '../../src/core/log.js';

const root = mkdtempSync(join(tmpdir(), 'gnnctl-fw-'));
const artifacts = join(root, 'artifacts');
let fit: FitResult;
let incidents = 0;

beforeAll(async () => {
  setQuiet(true);
  const mesh = generateMesh({ out: join(root, 'mesh'), services: 12, hours: 36, normalHours: 6, step: 600, seed: 5 });
  const text = readFileSync(mesh.files.config, 'utf8').replace('labels: { path: incidents.csv }', 'labels: { path: incidents.csv, root_cause_column: root_service }');
  writeFileSync(mesh.files.config, `${text}  warmup_snapshots: 8\n  window: 3\n  epochs: 1\n  hidden: 8\n  embedding_dim: 8\n`);
  incidents = readFileSync(join(root, 'mesh', 'incidents.csv'), 'utf8').trimEnd().split('\n').length - 1;
  fit = await fitAnomaly(loadConfig(mesh.files.config, { artifacts }));
}, 120_000);

afterAll(() => rmSync(root, { recursive: true, force: true }));

describe('learned root-cause weights saved by anomaly fit', () => {
  it('fits them on the validation half of the labelled faults and says whether alerts use them', () => {
    expect(incidents).toBeGreaterThanOrEqual(6);
    const w = JSON.parse(readFileSync(join(fit.run_dir, 'model', FAMILY_WEIGHTS_FILE), 'utf8')) as FamilyWeights;
    expect(w.families).toEqual(signalFamilies(fit.feature_columns, fit.edge_feature_columns).names);
    expect(w.weights).toHaveLength(w.families.length);
    for (const x of w.weights) expect(x > 0 && Number.isFinite(x)).toBe(true);
    expect(w.fitted_on.incidents).toBeGreaterThan(0);
    expect(w.fitted_on.incidents).toBeLessThanOrEqual(Math.ceil(incidents / 2));
    expect(w.use).toBe(w.validation_ac_at_1.signals_learned > w.validation_ac_at_1.signals);
    expect(w.method).toBe(w.use ? 'signals_learned' : 'signals');
    expect(fit.root_cause_weights).toMatchObject({ file: `model/${FAMILY_WEIGHTS_FILE}`, method: w.method, incidents: w.fitted_on.incidents });
  });

  it('is read back with the run, and a damaged file is refused naming it', () => {
    const run = loadRun(artifacts, fit.run_id);
    try {
      expect(run.familyWeights?.weights).toEqual(JSON.parse(readFileSync(join(fit.run_dir, 'model', FAMILY_WEIGHTS_FILE), 'utf8')).weights);
    } finally {
      run.model.params.dispose();
      run.flat.params.dispose();
    }
    writeFileSync(join(fit.run_dir, 'model', FAMILY_WEIGHTS_FILE), '{"version": 1, "families": ["cpu"], "weights": []}');
    expect(() => loadRun(artifacts, fit.run_id)).toThrow(/learned root-cause weights/);
  });
});
