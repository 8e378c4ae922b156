/**
 * Report data of an anomaly run: its `manifest.json`, the `score_report.json` that `gnnctl anomaly score`
 * writes beside it (evaluation, fault windows, the graph around the strongest alert, the score file's
 * path) and the Parquet scores themselves (one row per snapshot). Validated with zod, not `.strict()`:
 * newer runs may add fields. Read from files only, so a run copied from another machine still renders.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as arrow from 'apache-arrow';
import * as pq from 'parquet-wasm/node';
import { z } from 'zod';
import { ArtifactError } from '../core/errors.js';
import type { RunManifestBase } from '../artifacts/run_store.js';

const rate = z.number().nullable();
const kindQuality = z.object({ incidents: z.number(), detected: z.number(), recall: z.number(), mean_delay_seconds: z.number().nullable() });
const detectorQuality = z.object({
  alerts: z.number(),
  episodes: z.number(),
  false_alarms: z.number(),
  false_alarms_per_day: z.number(),
  precision: rate,
  recall: rate,
  chance_recall: rate.default(null),
  auroc: rate.default(null),
  by_kind: z.record(z.string(), kindQuality).default({}),
});
const rootCauseQuality = z.object({
  incidents: z.number(),
  ac_at_1: z.number(),
  ac_at_3: z.number(),
  avg_at_5: z.number(),
  by_kind: z.record(z.string(), z.object({ incidents: z.number(), ac_at_1: z.number(), ac_at_3: z.number(), avg_at_5: z.number() })).default({}),
});
const rootCause = z.object({
  incidents: z.number(),
  methods: z.record(z.string(), rootCauseQuality),
  recommended_method: z.string().nullable(),
  rankings: z.array(z.object({ start: z.number(), kind: z.string(), root_cause: z.string(), top: z.record(z.string(), z.array(z.string())) })).default([]),
});

const scoreRecordSchema = z.object({
  kind: z.literal('anomaly_score_report'),
  run_id: z.string(),
  runtime: z.string(),
  scores_path: z.string(),
  from: z.string(),
  to: z.string(),
  snapshots: z.number(),
  alerts: z.number(),
  threshold_first: z.number(),
  threshold_last: z.number(),
  new_services: z.number().default(0),
  seconds: z.number().optional(),
  evaluation: z
    .object({
      incidents: z.number(),
      days: z.number(),
      grace_seconds: z.number().default(0),
      tagae: detectorQuality,
      static: detectorQuality.nullable(),
      flat: detectorQuality,
      zscore: detectorQuality.nullable().default(null),
      root_cause: rootCause.nullable().default(null),
      recommended_method: z.object({ detection: z.string(), root_cause: z.string().nullable() }),
    })
    .optional(),
  incidents: z.array(z.object({ start: z.string(), end: z.string(), kind: z.string(), root_cause: z.string().nullable() })).default([]),
  alert_graph: z
    .object({
      ts: z.string(),
      score: z.number(),
      threshold: z.number().nullable(),
      service: z.string(),
      nodes: z.array(z.object({ service: z.string(), rank: z.number().nullable() })),
      edges: z.array(z.object({ source: z.string(), destination: z.string(), rate: z.number() })),
    })
    .nullable()
    .default(null),
});

export type AnomalyScoreRecord = z.infer<typeof scoreRecordSchema>;
export type AnomalyEvaluation = NonNullable<AnomalyScoreRecord['evaluation']>;
export type AnomalyDetectorQuality = z.infer<typeof detectorQuality>;

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

export const SCORE_RECORD_FILE = 'score_report.json';

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
  const parsed = scoreRecordSchema.safeParse(raw);
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
