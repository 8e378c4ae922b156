/**
 * The optional top-level `anomaly:` block: graph-autoencoder anomaly detection on a service dependency
 * graph (`gnnctl anomaly fit | score | watch`). It is its own small pipeline beside the relational one, so
 * a config with only `name` and `anomaly` is valid. Column names default to the data contract in
 * docs/anomaly.md and can be renamed per source. Relative paths resolve against `data.root` when set, else the
 * config file's folder (a generated mesh folder works from any working directory).
 */
import { z } from 'zod';
import { isoTimeSchema } from '../core/time.js';

const sourceFields = {
  path: z.union([z.string(), z.array(z.string()).min(1)]).optional().describe('CSV or Parquet file(s); globs allowed'),
  format: z.enum(['csv', 'parquet']).optional().describe('file format (default: from the extension)'),
  database: z.string().optional().describe('a .duckdb file to read the table from (instead of path)'),
  table: z.string().optional().describe('the table name inside `database`'),
  csv: z.record(z.string(), z.union([z.string(), z.number(), z.boolean(), z.array(z.string())])).optional().describe('CSV reader options passed to DuckDB read_csv (delim, header, nullstr, …)'),
  ts_column: z.string().default('ts').describe('snapshot time column: timestamps or epoch seconds; each distinct value is one snapshot'),
};

const hasSource = (s: { path?: unknown; database?: unknown; table?: unknown }): boolean => (s.path === undefined) !== (s.database === undefined) && (s.table === undefined || s.database !== undefined);
const sourceRule = { message: 'give exactly one of `path:` (CSV/Parquet) or `database:` (+ `table:`)' };

/**
 * How a pod (or instance) name in a service column maps to its service: `strip_replica` drops a
 * Kubernetes replica suffix (`frontend-579b9bff58-t2dbm` → `frontend`, `redis-0` → `redis`); a pattern's
 * first capture group is the service (a name that does not match stays as it is).
 */
const serviceFromSchema = z.union([
  z.literal('strip_replica'),
  z.object({ pattern: z.string().min(1).describe('regular expression (RE2); its first capture group is the service') }).strict(),
]);

const metricsSource = z
  .object({
    ...sourceFields,
    service_column: z.string().default('service').describe('service name column (or pod name, with service_from)'),
    service_from: serviceFromSchema.optional().describe('map pod names to services: strip_replica or {pattern: …}; rows of one service at one snapshot are averaged'),
    feature_columns: z.array(z.string()).min(1).optional().describe('node features (default: every numeric column other than the time and service columns)'),
  })
  .strict()
  .refine(hasSource, sourceRule);

const callsSource = z
  .object({
    ...sourceFields,
    source_column: z.string().default('source').describe('calling service'),
    destination_column: z.string().default('destination').describe('called service'),
    rate_column: z.string().default('requests_per_second').describe('call rate; the edge weight is its share of the source\'s outgoing traffic'),
    feature_columns: z.array(z.string()).optional().describe('further edge features (default: latency_ms and error_rate when present)'),
  })
  .strict()
  .refine(hasSource, sourceRule);

const spansSource = z
  .object({
    path: sourceFields.path,
    format: sourceFields.format,
    database: sourceFields.database,
    table: sourceFields.table,
    csv: sourceFields.csv,
    trace_id_column: z.string().default('trace_id').describe('trace id'),
    span_id_column: z.string().default('span_id').describe('span id'),
    parent_span_id_column: z.string().default('parent_span_id').describe('parent span id (null, empty or a non-matching value such as "root" for a root span)'),
    service_column: z.string().default('service_name').describe('service (or pod, with service_from) that emitted the span'),
    start_column: z.string().default('start_time_unix_nano').describe('span start: unix nanoseconds, or a timestamp'),
    end_column: z.string().default('end_time_unix_nano').describe('span end: unix nanoseconds, or a timestamp'),
    status_column: z.string().nullable().default('status_code').describe('status: error when it is 2, ERROR or STATUS_CODE_ERROR (null, or a missing column: no error share)'),
    service_from: serviceFromSchema.optional().describe('map pod names to services: strip_replica or {pattern: …}'),
    service_map: z
      .union([z.boolean(), z.object({ from: isoTimeSchema.optional(), until: isoTimeSchema.optional() }).strict()])
      .default(false)
      .describe('when traces are sampled or missing: every snapshot gets the edges seen in the spans (over [from, until) when given); unseen edges carry rate 0'),
  })
  .strict()
  .refine(hasSource, sourceRule);

const eventsSource = z
  .object({
    ...sourceFields,
    service_column: z.string().default('service').describe('service the change applies to'),
    kind_column: z.string().default('kind').describe('event kind, e.g. deploy, pod_added, service_added'),
    kinds: z.array(z.string()).optional().describe('event kinds that suppress scores (default: all)'),
  })
  .strict()
  .refine(hasSource, sourceRule);

const labelsSource = z
  .object({
    path: sourceFields.path,
    format: sourceFields.format,
    database: sourceFields.database,
    table: sourceFields.table,
    csv: sourceFields.csv,
    start_column: z.string().default('start').describe('incident start (ISO time)'),
    end_column: z.string().default('end').describe('incident end (exclusive)'),
    kind_column: z.string().default('kind').describe('incident kind: metrics are reported per kind'),
    root_cause_column: z.string().optional().describe('the root-cause service: AC@1, AC@3 and Avg@5 of each ranking are reported'),
    service_from: serviceFromSchema.optional().describe('map the root-cause column\'s pod names to services'),
  })
  .strict()
  .refine(hasSource, sourceRule);

const prometheusSchema = z
  .object({
    step: z.number().int().min(1).default(15).describe('seconds between snapshots requested from query_range'),
    metrics: z.record(z.string(), z.string()).describe('node feature column → PromQL returning one series per service (labelled with service_label)'),
    calls: z.record(z.string(), z.string()).describe('edge column → PromQL returning one series per call edge; must include the rate column'),
    service_label: z.string().default('service').describe('label naming the service in metrics series'),
    source_label: z.string().default('source').describe('label naming the caller in calls series'),
    destination_label: z.string().default('destination').describe('label naming the callee in calls series'),
  })
  .strict();

export const anomalySchema = z
  .object({
    metrics: metricsSource.describe('one row per (ts, service) scrape; numeric columns are the node features'),
    calls: callsSource.optional().describe('one row per (ts, source, destination); or give `spans`'),
    spans: spansSource.optional().describe('raw trace spans (OpenTelemetry column names by default): each snapshot\'s call graph is built from them'),
    snapshot_seconds: z.number().int().min(1).optional().describe('floor metric and call times to this interval (scrapes of one minute that differ by seconds become one snapshot); required with spans'),
    events: eventsSource.optional().describe('planned changes (ts, service, kind): deploys, pods/services added or terminating'),
    labels: labelsSource.optional().describe('labelled incidents (start, end, kind) for precision/recall in score reports'),
    prometheus: prometheusSchema.optional().describe('`anomaly watch --prometheus URL`: how snapshots are read from a Prometheus HTTP API'),
    fit_from: isoTimeSchema.optional().describe('ISO time: first snapshot of the period taken as normal (default: the first; --from overrides)'),
    fit_until: isoTimeSchema.optional().describe('ISO time: the normal period ends before this (default: the last snapshot; --until overrides)'),
    window: z.number().int().min(1).max(64).default(6).describe('W: snapshots the temporal attention looks back over (the current one included)'),
    threshold: z
      .object({ false_alarms_per_day: z.number().positive().describe('alerting snapshots per day the normal period may produce') })
      .strict()
      .optional()
      .describe('an alert budget: τ is calibrated on the warm-up window so that normal time alerts at most this often (sets the quantile from the snapshot interval; overrides threshold_quantile)'),
    detector: z
      .object({
        method: z.enum(['tagae', 'zscore', 'rolling_family', 'tagae_rolling', 'combined']).describe('the score `watch` alerts on: TAGAE, the fitted z-score, or a detector against a trailing reference of the past (docs/anomaly.md)'),
        threshold: z.number().describe('alert when the score reaches this fixed value (score reports `recommended_detector`, chosen on validation faults)'),
      })
      .strict()
      .optional()
      .describe('alert on this detector at a fixed threshold instead of TAGAE at its sliding τ (copy `score`\'s `recommended_detector`)'),
    threshold_quantile: z.number().gt(0).lt(1).default(0.99).describe('τ is this quantile of the scores of the warm-up window, then of the sliding window'),
    warmup_snapshots: z.number().int().min(5).default(72).describe('snapshots held out of training, spread evenly over the normal period (covering its daily cycle), that set per-service baselines and the first τ'),
    threshold_window: z.number().int().min(5).default(288).describe('snapshots in the sliding window τ is recomputed over (an alerting snapshot enters at τ, so an incident cannot raise its own threshold)'),
    suppress_snapshots: z.number().int().min(0).default(6).describe('snapshots an event suppresses the scores of its service and direct neighbours (default: the window, so the change has left the temporal window when scores count again)'),
    rebaseline_snapshots: z.number().int().min(0).default(30).describe('after a pod_replaced event, snapshots the service is held out while its baselines (TAGAE error, z-score medians) are refitted on its new level (0: keep the fitted baselines)'),
    hidden: z.number().int().min(4).max(512).default(32).describe('GATv2 width per head'),
    heads: z.number().int().min(1).max(16).default(2).describe('GATv2 attention heads'),
    embedding_dim: z.number().int().min(2).max(512).default(16).describe('Z width (half for the source role, half for the destination role)'),
    epochs: z.number().int().min(1).default(15).describe('passes over the normal period\'s snapshots'),
    lr: z.number().positive().default(0.005).describe('Adam learning rate'),
    negative_ratio: z.number().int().min(1).max(50).default(5).describe('sampled non-edges per observed edge in the reconstruction loss'),
    all_pairs_max_nodes: z.number().int().min(2).default(64).describe('snapshots with at most this many services use every pair instead of sampled non-edges'),
    structure_weight: z.number().min(0).max(1).default(0.5).describe('weight of the edge reconstruction error against the node-feature reconstruction error'),
    score_services: z.number().int().min(1).max(100).default(1).describe('the snapshot score is the mean of this many largest service errors (1: the largest)'),
    evaluation_grace_seconds: z.number().min(0).default(0).describe('an alert up to this long after a labelled incident\'s end still counts as catching it (default 0: only alerts inside the window count)'),
    top_k: z.number().int().min(1).max(100).default(5).describe('services and edges listed with each score and alert'),
  })
  .strict()
  .refine((a) => a.embedding_dim % 2 === 0, { message: 'embedding_dim must be even (source and destination halves)', path: ['embedding_dim'] })
  .refine((a) => (a.calls === undefined) !== (a.spans === undefined), { message: 'give exactly one of `calls:` (per-snapshot call table) or `spans:` (raw trace spans)', path: ['calls'] })
  .refine((a) => a.spans === undefined || a.snapshot_seconds !== undefined, { message: 'spans need `snapshot_seconds:` (the interval each call graph aggregates), e.g. 60', path: ['snapshot_seconds'] });

export type AnomalyConfig = z.infer<typeof anomalySchema>;
