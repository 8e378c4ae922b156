/**
 * `anomaly fit` with labelled faults chooses the detector and threshold on the validation faults
 * (model/detector.json); `score` writes that detector's alerts to scores.parquet (read back with DuckDB);
 * an explicit `anomaly.detector` wins over it. Through the real binary on a tiny generated mesh.
 */
import { appendFileSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateMesh } from '../../src/datasets/mesh/generate.js';
import { duckRows } from '../helpers/graph.js';
import { gnnctlJson } from './gnnctl_json.js';

const root = mkdtempSync(join(tmpdir(), 'gnnctl-detector-'));
const artifacts = join(root, 'artifacts');
let config: string;
let runId: string;
let fit: Record<string, any>;

const query = duckRows;

beforeAll(() => {
  const mesh = generateMesh({ out: join(root, 'mesh'), services: 12, hours: 12, step: 600, seed: 5 });
  config = mesh.files.config;
  appendFileSync(config, '  warmup_snapshots: 8\n  window: 3\n  epochs: 2\n  threshold_window: 50\n  hidden: 8\n  embedding_dim: 8\n');
  const r = gnnctlJson(['anomaly', 'fit', '-c', config, '--artifacts', artifacts], root);
  expect(r.status, r.stderr).toBe(0);
  runId = String(r.json.run_id);
  fit = r.json;
}, 300_000);

afterAll(() => rmSync(root, { recursive: true, force: true }));

describe('the detector chosen at fit time', () => {
  it('is saved with the run, chosen on the validation faults only', () => {
    const file = join(artifacts, 'runs', runId, 'model', 'detector.json');
    expect(existsSync(file)).toBe(true);
    const choice = JSON.parse(readFileSync(file, 'utf8'));
    expect(['tagae', 'zscore', 'rolling_family', 'tagae_rolling', 'combined']).toContain(choice.method);
    expect(fit.detector).toMatchObject({ file: 'model/detector.json', method: choice.method, threshold: choice.threshold, incidents: choice.chosen_on.incidents });
    const metrics = JSON.parse(readFileSync(join(artifacts, 'runs', runId, 'metrics.json'), 'utf8'));
    expect(metrics.detector.threshold).toBe(choice.threshold);
    // one labelled fault on this mesh: too few to split, so it is the validation stretch (the split is unit-tested)
    const labels = JSON.parse(readFileSync(join(root, 'mesh', 'manifest.json'), 'utf8')).incident_labels as { start: string; end: string }[];
    expect(labels).toHaveLength(1);
    expect(choice.chosen_on.incidents).toBe(1);
    expect(Date.parse(choice.chosen_on.from)).toBeLessThanOrEqual(Date.parse(labels[0]!.start));
    // the chosen detector has the best validation AUROC of the candidates
    const best = Math.max(...Object.values(choice.candidates as Record<string, { auroc: number | null }>).map((c) => c.auroc ?? -1));
    expect(choice.candidates[choice.method].auroc ?? -1).toBe(best);
  });

  it('is what score alerts on when the config sets no anomaly.detector', async () => {
    const out = join(root, 'fit_choice.parquet');
    const r = gnnctlJson(['anomaly', 'score', '-c', config, '--artifacts', artifacts, '--run', runId, '--out', out], root);
    expect(r.status, r.stderr).toBe(0);
    expect(r.json.detector).toEqual({ method: fit.detector.method, threshold: fit.detector.threshold, source: 'fit' });
    const rows = await query(`SELECT score, threshold, alert FROM '${out}'`);
    expect(rows).toHaveLength(r.json.snapshots);
    for (const row of rows) {
      expect(row.threshold).toBe(fit.detector.threshold);
      expect(row.alert).toBe(Number(row.score) >= fit.detector.threshold);
    }
    expect(rows.filter((x) => x.alert).length).toBe(r.json.alerts);
    const meta = await query(`SELECT decode(key) AS k, decode(value) AS v FROM parquet_kv_metadata('${out}')`);
    expect(Object.fromEntries(meta.map((m) => [m.k, m.v]))).toMatchObject({ detector_method: fit.detector.method, detector_threshold: String(fit.detector.threshold), detector_source: 'fit' });
  });

  it('gives way to an explicit anomaly.detector in the config', async () => {
    // TAGAE at a fixed threshold of 0: every snapshot with a finite score alerts
    const own = join(root, 'mesh', 'explicit.yaml');
    writeFileSync(own, `${readFileSync(config, 'utf8')}  detector: {method: tagae, threshold: 0}\n`);
    const out = join(root, 'explicit.parquet');
    const r = gnnctlJson(['anomaly', 'score', '-c', own, '--artifacts', artifacts, '--run', runId, '--out', out], root);
    expect(r.status, r.stderr).toBe(0);
    expect(r.json.detector).toEqual({ method: 'tagae', threshold: 0, source: 'config' });
    const rows = await query(`SELECT count(*) AS n, count(*) FILTER (WHERE alert) AS alerts, min(threshold) AS lo, max(threshold) AS hi FROM '${out}'`);
    expect(rows[0]).toMatchObject({ n: BigInt(r.json.snapshots), alerts: BigInt(r.json.snapshots), lo: 0, hi: 0 });
  });
});
