/**
 * `<anomaly run>/score_report.json`, the contract between `gnnctl anomaly score` (which writes it) and
 * `gnnctl report` (which draws it): the score file's location, the evaluation (detection per detector,
 * root-cause AC@k per method with intervals, the recommended methods), the labelled fault windows of the
 * scored period and the call graph around the strongest alert. One zod schema; the writer's and the
 * reader's types both come from it. Not `.strict()`: newer writers may add fields an older reader skips.
 */
import { z } from 'zod';

export const SCORE_RECORD_FILE = 'score_report.json';

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
const interval = z.tuple([z.number(), z.number()]);
const stretchQuality = z.object({ incidents: z.number(), recall: rate, recall_interval: interval.nullable().default(null), chance_recall: rate, false_alarms: z.number(), auroc: rate });
const operatingPoint = z.object({ threshold: z.number(), rule: z.string(), split_ts: z.number(), validation: stretchQuality, test: stretchQuality, all: stretchQuality.optional() });
const rankQuality = z.object({
  incidents: z.number(),
  ac_at_1: z.number(),
  ac_at_3: z.number(),
  avg_at_5: z.number(),
  /** 95% Wilson intervals (absent in reports written before they were added) */
  ac_at_1_interval: interval.optional(),
  ac_at_3_interval: interval.optional(),
});
const rootCauseQuality = rankQuality.extend({ by_kind: z.record(z.string(), rankQuality).default({}) });
const rootCause = z.object({
  incidents: z.number(),
  methods: z.record(z.string(), rootCauseQuality),
  recommended_method: z.string().nullable(),
  /** validation (the earlier incidents, where the recommendation is chosen) and test (the later ones) */
  selection: z
    .object({ validation_incidents: z.number(), test_incidents: z.number(), validation: z.record(z.string(), rootCauseQuality), test: z.record(z.string(), rootCauseQuality) })
    .optional(),
  rankings: z.array(z.object({ start: z.number(), kind: z.string(), root_cause: z.string(), top: z.record(z.string(), z.array(z.string())) })).default([]),
});

/** The strongest alert's top root-cause service, its callers and callees, and the calls among them. */
export const alertGraphSchema = z.object({
  ts: z.string(),
  score: z.number(),
  threshold: z.number().nullable(),
  /** the service ranked first as root cause at that snapshot */
  service: z.string(),
  /** services drawn: the centre first, then its neighbours; `rank` is the 1-based root-cause rank, if ranked */
  nodes: z.array(z.object({ service: z.string(), rank: z.number().nullable() })),
  edges: z.array(z.object({ source: z.string(), destination: z.string(), rate: z.number() })),
});

export const anomalyScoreRecordSchema = z.object({
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
      /** the drift-following detectors (src/anomaly/rolling_reference.ts); absent in reports written before them */
      rolling_family: detectorQuality.nullable().default(null),
      tagae_rolling: detectorQuality.nullable().default(null),
      combined: detectorQuality.nullable().default(null),
      /** per detector, the threshold chosen on the earlier half of the faults and its figures on the later half */
      operating_points: z.record(z.string(), operatingPoint).default({}),
      recommended_detector: z.object({ method: z.string(), threshold: z.number(), validation_auroc: rate }).nullable().default(null),
      root_cause: rootCause.nullable().default(null),
      recommended_method: z.object({ detection: z.string(), root_cause: z.string().nullable() }),
    })
    .optional(),
  incidents: z.array(z.object({ start: z.string(), end: z.string(), kind: z.string(), root_cause: z.string().nullable() })).default([]),
  /** the detector the alert column follows: anomaly.detector (`config`), the run's fit-time choice (`fit`), else TAGAE at its sliding τ (`default`, threshold null) */
  detector: z
    .object({ method: z.string(), threshold: z.number().nullable(), source: z.enum(['config', 'fit', 'default']) })
    .nullable()
    .default(null),
  alert_graph: alertGraphSchema.nullable().default(null),
});

export type AnomalyScoreRecord = z.infer<typeof anomalyScoreRecordSchema>;
export type AlertGraph = z.infer<typeof alertGraphSchema>;
export type AnomalyEvaluation = NonNullable<AnomalyScoreRecord['evaluation']>;
export type AnomalyDetectorQuality = z.infer<typeof detectorQuality>;
