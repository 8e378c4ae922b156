/**
 * `anomaly fit`'s detector choice (detector_choice.ts): the new run replays the labels' validation
 * stretch — from a trailing reference's length before its first fault (so the rolling detectors judge
 * it against a reference of their own) up to where the test faults begin — and every detector
 * `anomaly.detector` can name gets its threshold there. Test faults are never loaded.
 */
import type { Config } from '../config/load.js';
import { withDuck } from '../data/duck.js';
import { chooseDetector, validationIncidents, type DetectorChoice } from './detector_choice.js';
import { ROLLING_DEFAULTS } from './rolling_reference.js';
import { splitTime } from './operating_point.js';
import { loadRun, openScorer, scoringConfig } from './run.js';
import { detectorSeries, loadPeriod, replay } from './score.js';
import { anomalyConfig, loadIncidents } from './source.js';
import type { SnapshotScorer } from './scorer.js';

/** The choice for the run being fitted in `runDir` (its model files written), or null without labelled faults in the data. */
export async function chooseRunDetector(cfg: Config, runDir: string): Promise<DetectorChoice | null> {
  const incidents = ((await withDuck(({ conn }) => loadIncidents(conn, cfg))) ?? []).sort((x, y) => x.start - y.start);
  const validation = validationIncidents(incidents);
  if (validation.length === 0) return null;
  const a = anomalyConfig(cfg);
  const grace = a.evaluation_grace_seconds;
  const from = validation[0]!.start - ROLLING_DEFAULTS.reference_seconds;
  const until = splitTime(incidents) ?? Math.max(...validation.map((i) => i.end)) + grace + 1;
  const run = loadRun(cfg.artifactsDir, runDir, { running: true });
  let scorer: SnapshotScorer | undefined;
  try {
    scorer = await openScorer(run, 'onnx');
    const { snaps, prime, events } = await loadPeriod(cfg, run, from, until);
    if (snaps.length === 0) return null;
    const res = await replay(run, scorer, scoringConfig(a, run), snaps, prime, events);
    return chooseDetector(detectorSeries(res), validation, grace);
  } finally {
    await scorer?.close();
    run.model.params.dispose();
    run.flat.params.dispose();
  }
}
