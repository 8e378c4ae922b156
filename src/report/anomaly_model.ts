/**
 * Report data of an anomaly run: its `manifest.json`, the `score_report.json` that `gnnctl anomaly score`
 * writes beside it (its schema: src/artifacts/anomaly_score_record.ts) and the Parquet scores themselves
 * (one row per snapshot). Read from files only, so a run copied from another machine still renders.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as arrow from 'apache-arrow';
import * as pq from 'parquet-wasm/node';
import { ArtifactError } from '../core/errors.js';
import type { RunManifestBase } from '../artifacts/run_store.js';
import { anomalyScoreRecordSchema, SCORE_RECORD_FILE, type AnomalyScoreRecord } from '../artifacts/anomaly_score_record.js';

export type { AnomalyDetectorQuality, AnomalyEvaluation, AnomalyScoreRecord } from '../artifacts/anomaly_score_record.js';

/** The score file's rows: epoch seconds, the snapshot score, τ at that snapshot (null: no history yet), alert. */
export interface ScoreSeries {
  ts: number[];
  score: number[];
  threshold: (number | null)[];
  alert: boolean[];
}

export interface AnomalyReportData {
  kind: 'anomaly';
  manifest: RunManifestBase & Record<string, unknown>;
  record: AnomalyScoreRecord;
  series: ScoreSeries;
}


export function loadAnomalyReportData(runDir: string, manifest: RunManifestBase): AnomalyReportData {
  const path = join(runDir, SCORE_RECORD_FILE);
  if (!existsSync(path)) {
    throw new ArtifactError(`anomaly run ${manifest.id} has not been scored: no ${SCORE_RECORD_FILE} in its folder`, {
      where: runDir,
      hint: `score a period first: gnnctl anomaly score --config <config> --run ${manifest.id}`,
    });
  }
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(path, 'utf8'));
  } catch (e) {
    throw new ArtifactError(`cannot read ${path}: ${(e as Error).message}`, { where: path, hint: 'score the run again to rewrite it' });
  }
  const parsed = anomalyScoreRecordSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new ArtifactError(`${path} is not a score report gnnctl can read: ${issue ? `${issue.path.join('.')}: ${issue.message}` : 'invalid'}`, { where: path, hint: 'score the run again to rewrite it' });
  }
  const record = parsed.data;
  return { kind: 'anomaly', manifest: manifest as AnomalyReportData['manifest'], record, series: readScores(record.scores_path) };
}

function readScores(path: string): ScoreSeries {
  if (!existsSync(path)) {
    throw new ArtifactError(`the score file ${path} named in ${SCORE_RECORD_FILE} is missing`, { where: path, hint: 'score the run again (gnnctl anomaly score … --run <run>), or put the file back' });
  }
  const table = arrow.tableFromIPC(pq.readParquet(new Uint8Array(readFileSync(path)), { columns: ['ts', 'score', 'threshold', 'alert'] }).intoIPCStream());
  const col = (name: string): arrow.Vector => {
    const v = table.getChild(name);
    if (!v) throw new ArtifactError(`${path} has no column ${name}`, { where: path, hint: 'score the run again with this gnnctl version' });
    return v;
  };
  const ts = col('ts');
  const score = col('score');
  const threshold = col('threshold');
  const alert = col('alert');
  const out: ScoreSeries = { ts: [], score: [], threshold: [], alert: [] };
  for (let i = 0; i < table.numRows; i++) {
    // Timestamps come back as epoch milliseconds (arrow's timestamp type), whatever the stored unit.
    out.ts.push(Number(ts.get(i)) / 1000);
    out.score.push(Number(score.get(i)));
    const t = threshold.get(i) as number | null;
    out.threshold.push(t === null ? null : Number(t));
    out.alert.push(Boolean(alert.get(i)));
  }
  return out;
}
