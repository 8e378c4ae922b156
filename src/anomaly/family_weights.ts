/**
 * The `signals_learned` weights a run keeps (`model/family_weights.json`): fitted by `anomaly fit` on the
 * labelled faults of `anomaly.labels` that name a root cause, so `score` and `watch` rank an alert's
 * services with them on unlabelled data instead of refitting from labels each time.
 *
 * Only the validation faults are used — the earlier half in time (all of them below 6), the same split
 * `score`'s evaluation chooses its recommended method on — so the later half stays a test the weights
 * never saw. Whether alerts use the weights (`use`) is decided on those validation faults too: each half
 * ranked with weights fitted on the other half, against the unweighted `signals` ranking; the learned
 * weights are used only when their AC@1 is higher (a tie goes to the simpler unweighted shares).
 */
import type { DuckDBConnection } from '@duckdb/node-api';
import type { Config } from '../config/load.js';
import { isoSeconds } from '../core/duration.js';
import { rankServices } from './root_cause.js';
import { familyShares, familySums, shareScores, signalDeviations, signalFamilies } from './signal_share.js';
import { readRunSidecar, writeRunSidecar } from './run_sidecar.js';
import { fitFamilyWeights, weightedScores, type WeightedExample } from './signal_weights.js';
import { loadIncidents, loadSnapshots, type Incident } from './source.js';
import { fitEdgeZScore, type EdgeZScoreStats, type ZScoreStats } from './zscore_baseline.js';

export const FAMILY_WEIGHTS_FILE = 'family_weights.json';

/** With fewer labelled faults than this, all of them validate (as in root_cause_eval.ts). */
const MIN_SPLIT_INCIDENTS = 6;

export interface FamilyWeights {
  version: 1;
  /** signal families (signal_share.ts), in the order of `weights` */
  families: string[];
  weights: number[];
  /** true: alerts rank with these weights (`signals_learned`); false: unweighted `signals` did as well on validation */
  use: boolean;
  method: 'signals_learned' | 'signals';
  fitted_on: { incidents: number; from: string; until: string };
  /** AC@1 on the validation faults, each half ranked with weights fitted on the other half */
  validation_ac_at_1: { signals: number; signals_learned: number };
}

interface Window {
  names: string[];
  shares: Float64Array[];
  target: number;
}

/**
 * Fits the weights on the configured labels' validation faults, or returns null when there are no labels
 * naming a root cause or no snapshots inside their windows.
 */
export async function fitRunFamilyWeights(
  conn: DuckDBConnection,
  cfg: Config,
  d: { featureColumns: string[]; edgeFeatureColumns: string[]; zscore: ZScoreStats; edgeZscore: EdgeZScoreStats },
): Promise<FamilyWeights | null> {
  const labelled = ((await loadIncidents(conn, cfg)) ?? []).filter((i) => i.root_cause !== undefined).sort((x, y) => x.start - y.start);
  const nValidation = labelled.length < MIN_SPLIT_INCIDENTS ? labelled.length : Math.ceil(labelled.length / 2);
  const validation = labelled.slice(0, nValidation);
  if (validation.length === 0) return null;
  const from = Math.min(...validation.map((i) => i.start));
  const until = Math.max(...validation.map((i) => i.end));
  const { snapshots } = await loadSnapshots(conn, cfg, { from, until }, { featureColumns: d.featureColumns, edgeFeatureColumns: d.edgeFeatureColumns });
  // Edges the normal period never saw with values get the loaded period's own median and spread (label-free), as in score.
  const edges: EdgeZScoreStats = { columns: d.edgeZscore.columns, edges: { ...fitEdgeZScore(snapshots, d.edgeFeatureColumns).edges, ...d.edgeZscore.edges } };
  const fam = signalFamilies(d.featureColumns, d.edgeFeatureColumns);
  const deviations = snapshots.map((s) => ({ ts: s.ts, services: s.services, deviations: signalDeviations(fam, d.zscore, edges, s) }));
  const windows = validation.map((inc) => incidentWindow(deviations, inc)).filter((w): w is Window => w !== null && w.target >= 0);
  if (windows.length === 0) return null;
  const F = fam.names.length;
  const examples = (ws: Window[]): WeightedExample[] => ws.map((w) => ({ shares: w.shares, target: w.target }));
  const half = Math.ceil(windows.length / 2);
  const first = windows.slice(0, half);
  const second = windows.slice(half);
  const crossFitted = second.length === 0 ? [] : [...rankedFirst(first, fitFamilyWeights(examples(second), F)), ...rankedFirst(second, fitFamilyWeights(examples(first), F))];
  const learnedAc1 = crossFitted.length === 0 ? 0 : crossFitted.filter(Boolean).length / crossFitted.length;
  const plainAc1 = windows.filter((w) => rankServices(w.names, shareScores(w.shares, w.names.length))[0] === w.names[w.target]).length / windows.length;
  const use = learnedAc1 > plainAc1;
  return {
    version: 1,
    families: fam.names,
    weights: [...fitFamilyWeights(examples(windows), F)],
    use,
    method: use ? 'signals_learned' : 'signals',
    fitted_on: { incidents: windows.length, from: isoSeconds(from), until: isoSeconds(until) },
    validation_ac_at_1: { signals: plainAc1, signals_learned: learnedAc1 },
  };
}

/** Per window, whether the weighted ranking names its root cause first. */
function rankedFirst(ws: Window[], w: Float64Array): boolean[] {
  return ws.map((x) => rankServices(x.names, weightedScores(x.shares, w, x.names.length))[0] === x.names[x.target]);
}

function incidentWindow(snaps: { ts: number; services: string[]; deviations: Float64Array[] }[], inc: Incident): Window | null {
  const inside = snaps.filter((s) => s.ts >= inc.start && s.ts < inc.end);
  if (inside.length === 0) return null;
  const { services, rows } = familySums(inside);
  return { names: services, shares: familyShares(rows), target: services.indexOf(inc.root_cause!) };
}

export function writeFamilyWeights(runDir: string, w: FamilyWeights): void {
  writeRunSidecar(runDir, FAMILY_WEIGHTS_FILE, w);
}

/** The run's saved weights, or null when it has none (fitted without root-cause labels). */
export function readFamilyWeights(runDir: string): FamilyWeights | null {
  return readRunSidecar<FamilyWeights>(
    runDir,
    FAMILY_WEIGHTS_FILE,
    (w) => (w.version !== 1 || !Array.isArray(w.families) || !Array.isArray(w.weights) || w.families.length !== w.weights.length ? 'not a version-1 weights file' : null),
    "the run's learned root-cause weights",
    'fit the run again (or delete the file to rank with unweighted signals)',
  );
}
