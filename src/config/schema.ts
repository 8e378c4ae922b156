/**
 * The config file's schema: YAML → this zod schema (every object `.strict()`, so a misspelled key is an
 * error, not a silent default) → the cross-field rules in `load.ts`. Field descriptions feed the generated
 * config reference (`gnnctl config reference`), so write them for users.
 */
import { z } from 'zod';
import { durationSchema } from '../core/duration.js';
import { isoTimeSchema } from '../core/time.js';
import { anomalySchema } from './anomaly_schema.js';

/** Early stopping's patience, with one meaning in every loop (core/early_stopping.ts). */
const patienceSchema = (epochs: number) => z.number().int().min(1).default(epochs).describe(
  'early stopping (every training loop): stop after this many epochs in a row without a validation gain of at least min_delta. min_delta is 1e-6 (absolute) for the deep model and the session recommender, and 0.1% of the score at the last epoch that reset the patience for the distilled student, whose kept epoch still follows any gain above 1e-6 (so a slowly creeping plateau ends)',
);

export const COLUMN_KINDS = ['numerical', 'categorical', 'timestamp', 'text', 'ignore'] as const;
export type ColumnKind = (typeof COLUMN_KINDS)[number];

const csvOptions = z
  .object({
    delim: z.string().optional().describe('field delimiter, e.g. "," or ";" or "\\t" (default: sniffed)'),
    header: z.boolean().optional().describe('whether the first line holds column names (default: sniffed)'),
    quote: z.string().optional().describe('quote character (default: sniffed)'),
    escape: z.string().optional().describe('escape character (default: sniffed)'),
    nullstr: z.union([z.string(), z.array(z.string())]).optional().describe('string(s) read as NULL'),
    skip: z.number().int().min(0).optional().describe('lines to skip at the top'),
    dateformat: z.string().optional().describe('strftime format of DATE columns'),
    timestampformat: z.string().optional().describe('strftime format of TIMESTAMP columns'),
    ignore_errors: z.boolean().optional().describe('skip rows that do not parse (default false)'),
    sample_size: z.number().int().optional().describe('rows the type sniffer reads (-1: all)'),
  })
  .strict()
  .describe('CSV reader options, passed through to DuckDB read_csv');

export const tableSchema = z
  .object({
    path: z
      .union([z.string(), z.array(z.string()).min(1)])
      .optional()
      .describe('CSV or Parquet file(s); globs allowed (e.g. data/tx/*.parquet). Relative to data.root or the working directory'),
    format: z.enum(['csv', 'parquet']).optional().describe('file format (default: from the extension)'),
    database: z.string().optional().describe('a .duckdb file to read the table from (instead of path)'),
    table: z.string().optional().describe('the table name inside `database` (default: this table\'s key)'),
    csv: csvOptions.optional(),
    primary_key: z.string().optional().describe('primary-key column; a table without one still gets nodes but cannot be an entity or FK target'),
    time_column: z.string().optional().describe('the row time: timestamps, dates, or epoch seconds/milliseconds'),
    time_unit: z.enum(['s', 'ms', 'us', 'ns']).optional().describe('unit of a numeric time column (default: inferred from magnitude)'),
    foreign_keys: z.record(z.string(), z.string()).default({}).describe('column → referenced table (joined on that table\'s primary key)'),
    columns: z
      .record(z.string(), z.enum(COLUMN_KINDS))
      .default({})
      .describe('override inferred column types: numerical | categorical | timestamp | text | ignore'),
  })
  .strict();

export const dataSchema = z
  .object({
    root: z.string().optional().describe('folder that relative table paths resolve against (relative to the config file)'),
    tables: z.record(z.string(), tableSchema).describe('one entry per table; the key is the table name'),
    strict: z.boolean().default(false).describe('fail on FK values that match no primary key (default: drop those edges with a warning)'),
    fit_until: z
      .union([z.literal('auto'), isoTimeSchema])
      .default('auto')
      .describe('fit feature statistics on rows up to this time (ISO timestamp); "auto" = each run\'s own task\'s earliest validation anchor (recorded with the run; `graph build` without --task: the latest of the tasks\' cut-offs), so no statistic sees that task\'s val/test data'),
    max_vocab: z.number().int().min(2).default(10000).describe('categorical vocabulary cap; rarer values share the out-of-vocabulary bucket'),
    min_frequency: z
      .number()
      .int()
      .min(1)
      .default(2)
      .describe('a categorical value needs this many rows up to fit_until to get its own code; rarer values share the out-of-vocabulary bucket, so that bucket is trained and a value first seen later is read like a rare one (1 = keep every value)'),
    id_like_ratio: z.number().min(0).max(1).default(0.5).describe('a string column with more distinct values than this share of rows is id-like and excluded'),
  })
  .strict();

const splitSchema = z
  .object({
    window: durationSchema.optional().describe('anchor spacing; default: the target window (entity tasks) or 7 days (fact tasks)'),
    test_timestamp: isoTimeSchema
      .optional()
      .describe("ISO time of the first test anchor (default: entity tasks test_anchors windows before the end of the target table's data, fact tasks one window before it)"),
    val_timestamp: isoTimeSchema.optional().describe('ISO time of the first validation anchor (default: val_anchors windows before the test timestamp)'),
    test_anchor: isoTimeSchema.optional().describe('older name of test_timestamp'),
    val_anchor: isoTimeSchema.optional().describe('older name of val_timestamp'),
    test_anchors: z
      .union([z.literal('auto'), z.number().int().min(1)])
      .default('auto')
      .describe(
        'entity tasks: test anchors one window apart from the test timestamp, the last window ending by the end of the target table\'s data; metrics pool all of them. "auto": up to 20, leaving room for the validation anchors and a sixth of the data\'s windows (at least 3) for training',
      ),
    train_anchors: z
      .union([z.literal('all'), z.number().int().min(1)])
      .default(10)
      .describe('entity tasks: training anchors stepping back from the val timestamp one window apart ("all": back to the start of the target data or train_from)'),
    val_anchors: z
      .union([z.literal('auto'), z.number().int().min(1).max(14)])
      .default('auto')
      .describe(
        'entity tasks: validation anchors one window apart from the val timestamp, their windows ending by the test timestamp. "auto": 4 when the validation set at one anchor is small (fewer than 1,000 examples, or fewer than 200 in the rarer class), else 1',
      ),
    train_from: isoTimeSchema.optional().describe('no training anchor (entity tasks) or training row (fact tasks) before this ISO time: leaves out a period whose labels drifted'),
    max_train_examples: z.number().int().positive().optional().describe('subsample training examples to at most this many (seeded)'),
    baseline_max_train_examples: z
      .number()
      .int()
      .positive()
      .default(1000000)
      .describe('the no-graph baseline fits on at most this many of the training examples (a seeded sample; its val/test are scored in full); lower it to trade baseline quality for time: at 250,000 of medium fraud\'s 1.86M rows its test AUROC fell 0.0145 (docs/scale.md)'),
  })
  .strict();

export const modelSchema = z
  .object({
    kind: z
      .enum(['auto', 'gnn', 'gbdt', 'hybrid'])
      .default('auto')
      .describe(
        'binary and regression tasks: "auto" trains the GNN, gradient-boosted trees on own columns + relational aggregates (gbdt) and trees on the same plus the GNN\'s embeddings (hybrid), and keeps the best on validation, the cheaper on a tie within the bootstrap interval (docs/models.md); "gnn", "gbdt", "hybrid" force one. The GNN always trains (distillation\'s embeddings come from it). Ranking tasks choose among their heuristics instead',
      ),
    encoder: z.enum(['sage', 'gat']).default('sage').describe('GNN layer: GraphSAGE (mean) or GAT (multi-head attention)'),
    layers: z.number().int().min(1).max(4).default(2).describe('message-passing depth'),
    channels: z.number().int().min(4).max(1024).default(64).describe('hidden width (and embedding dimension)'),
    num_neighbors: z
      .array(z.union([z.number().int().min(1), z.record(z.string(), z.number().int().min(0))]))
      .default([16, 8])
      .describe('fanout per hop, one entry per layer (hop 1 first): a number, or a map of edge type → fanout with an optional `default` (0 skips that edge type)'),
    sampling: z.enum(['last', 'uniform']).default('last').describe('neighbours with time ≤ anchor: the most recent, or uniform among them'),
    heads: z.number().int().min(1).max(16).default(4).describe('attention heads (gat)'),
    dropout: z.number().min(0).max(0.9).default(0.1),
    norm: z.enum(['layer', 'none']).default('layer').describe('normalization after each layer'),
    skip: z.boolean().default(true).describe('residual connections between layers'),
    categorical_dim: z.number().int().min(1).max(256).default(16).describe('width of categorical embeddings'),
    epochs: z.number().int().min(1).default(10),
    batch_size: z.number().int().min(1).default(512),
    lr: z.number().positive().default(0.002).describe('Adam learning rate'),
    patience: patienceSchema(3),
    val_smoothing: z
      .union([z.literal('auto'), z.number().int().min(1).max(9).refine((n) => n % 2 === 1, 'an odd number of epochs (1, 3, 5, …): the window is centered on the epoch it judges')])
      .default('auto')
      .describe('best epoch and early stopping judge each epoch by the mean validation score of this many epochs centered on it ("auto": 3 when the validation set is small, see split.val_anchors, else 1)'),
    search: z
      .boolean()
      .default(false)
      .describe('try the variant set (sampling last/uniform × layers 1/2 × encoder sage/gat, the configured model first) within search_budget and keep the best on validation; `model: auto` is short for this (model.kind stays auto)'),
    search_budget: durationSchema
      .refine((s) => s > 0, 'a positive duration, e.g. "10 minutes"')
      .default(600)
      .describe('wall-clock budget of the variant search (default 10 minutes); a variant starts only when the slowest one so far still fits, the configured model always trains'),
    loss: z.enum(['bce', 'l1', 'mse', 'sampled_softmax']).optional().describe('default: bce for binary, l1 for regression, sampled_softmax for ranking'),
    max_steps_per_epoch: z.number().int().positive().optional().describe('cap on optimizer steps per epoch'),
    min_steps_per_epoch: z
      .number()
      .int()
      .min(1)
      .default(16)
      .describe('fewest optimizer steps per epoch: a training set smaller than batch_size × this trains with smaller batches (never below 32 rows), so ~1,000 examples get 16 Adam steps an epoch, not 2'),
    workers: z
      .union([z.literal('auto'), z.number().int().min(1).max(16)])
      .default('auto')
      .describe('data-parallel worker threads for training on the wasm/cpu backends ("auto": 2 when the machine has 2+ cores); results are deterministic for a given count'),
    exact_degree_cap: z.number().int().min(1).default(1000).describe('exact embedding with uniform sampling: use at most this many most recent neighbours'),
    seed: z.number().int().optional().describe('default: the config seed'),
  })
  .strict();
export type ModelConfig = z.infer<typeof modelSchema>;

/** `model: auto` is short for `model: { search: true }` (the variant search with every other setting as it is). */
function autoModel(v: unknown): unknown {
  return v === 'auto' ? { search: true } : v;
}

export const taskSchema = z
  .object({
    query: z.string().describe('predictive query, e.g. PREDICT COUNT(transactions.*, 0, 7, days) = 0 FOR EACH customers.customer_id'),
    split: splitSchema.default({ train_anchors: 10, val_anchors: 'auto', test_anchors: 'auto', baseline_max_train_examples: 1000000 }),
    label_delay: durationSchema
      .refine((s) => s > 0, 'label_delay must be positive: a row\'s own label is known only after its time')
      .optional()
      .describe(
        'fact-row tasks: how long after a row\'s time its label is known (e.g. "30 days" for chargebacks); other rows\' labels become inputs of the deep model from then on, the row\'s own never. Default: other rows\' labels are never inputs (only you know when yours arrive)',
      ),
    model: z
      .preprocess(autoModel, modelSchema.partial())
      .optional()
      .describe('overrides of the top-level model block for this task; "auto": the top-level block with search: true'),
    rank: z
      .object({
        exclude_seen: z
          .union([z.literal('auto'), z.boolean()])
          .default('auto')
          .describe('drop items the user already interacted with from the model\'s and every heuristic\'s lists; auto: when under 1% of the training windows\' label items were seen before'),
      })
      .strict()
      .optional()
      .describe('ranking tasks (RANK TOP k): how the top-k lists are built'),
  })
  .strict();

export const distillationSchema = z
  .object({
    task: z.string().describe('the serving task: a fact-row task (one prediction per row, e.g. fraud) or an entity task (one per entity at request time, e.g. churn)'),
    base: z.string().describe('the deep task whose run provides the embeddings'),
    embedding_keys: z.array(z.string()).default([]).describe('FK columns of the serving table, e.g. transactions.customer_id, or an entity task\'s own key, e.g. customers.customer_id; the referenced entity\'s embedding is looked up'),
    max_embedding_offset: durationSchema.default(14 * 86400).describe('oldest usable embedding: anchor ≥ t − max_embedding_offset'),
    min_embedding_offset: durationSchema.default(0).describe('newest usable embedding: anchor ≤ t − min_embedding_offset (the batch job\'s lag)'),
    real_time_offset: durationSchema.default(0).describe('RTI elements strictly before t − real_time_offset'),
    real_time_interactions: z
      .record(z.string(), z.number().int().min(1).max(1024))
      .default({})
      .describe('hop path → max length, e.g. transactions.customer_id->customers.customer_id->transactions.customer_id: 32 (fact-row task) or customers.customer_id->transactions.customer_id: 32 (entity task)'),
    rti_minute_recency: z
      .boolean()
      .default(false)
      .describe('also give each RTI element log(1 + minutes since it) (the day-scale recency features cannot tell 10 minutes from 6 hours ago: an account takeover\'s earlier items)'),
    embedding_cadence: durationSchema.optional().describe('spacing of embedding anchors (default: min(7 days, half the offset range))'),
    kd_weight: z.number().min(0).max(1).default(0.5).describe('knowledge-distillation weight when the base task is the serving task'),
    kd_temperature: z.number().min(0.1).max(20).default(1).describe('temperature of the knowledge-distillation term (binary): the student matches sigmoid(teacher logit / T), loss scaled by T²'),
    positive_weight: z.number().min(0.01).max(1000).default(1).describe('weight of positive examples in the hard-label loss (binary): > 1 spends more of the student on the top of the ranking'),
    exclude_columns: z
      .array(z.string())
      .default([])
      .describe('<table>.<column>s the serving request will not carry (the student neither reads nor declares them)'),
    train_window: durationSchema.default(8 * 7 * 86400).describe('train on the fact rows of this period before the validation window'),
    max_train_examples: z.number().int().positive().optional().describe('subsample training rows to at most this many (seeded)'),
    ablation_max_train_examples: z
      .number()
      .int()
      .positive()
      .optional()
      .describe('the three input ablations train on a seeded sample of at most this many of the training rows (default: all of them); they are diagnostics, and at medium size they were most of the run'),
    hidden: z.number().int().min(4).default(32).describe('width of the first head layer (the second is half)'),
    element_dim: z.number().int().min(2).default(16).describe('width of the per-element RTI encoder'),
    projection_dim: z.number().int().min(2).default(16).describe('width each entity embedding is projected to'),
    categorical_dim: z.number().int().min(1).default(4).describe('width of categorical embeddings'),
    epochs: z.number().int().min(1).default(15),
    batch_size: z.number().int().min(1).default(1024),
    lr: z.number().positive().default(0.003),
    patience: patienceSchema(3),
    dropout: z.number().min(0).max(0.9).default(0.1),
    early_stopping_metric: z
      .enum(['auroc', 'ap'])
      .optional()
      .describe('binary tasks: the validation metric that picks the student\'s epoch and drives patience (default the task\'s main metric, AUROC); ap favours the top of the ranking'),
    ema_epochs: z
      .number()
      .min(0)
      .max(100)
      .default(0)
      .describe('validate and keep a moving average of the student\'s weights over about this many epochs of steps (Polyak averaging; 0: the raw weights): steadier early stopping on a small validation set'),
  })
  .strict()
  .refine((d) => d.min_embedding_offset < d.max_embedding_offset, {
    message: 'min_embedding_offset must be smaller than max_embedding_offset',
    path: ['min_embedding_offset'],
  });

export const sessionRecommenderSchema = z
  .object({
    task: z.string().describe('the ranking task served (tasks.<task>: PREDICT LIST_DISTINCT(…) RANK TOP k FOR EACH <user>); runs are named latest:<task>-session'),
    user_base: z.string().describe('the deep task whose run provides the user embeddings (it must represent the user table)'),
    item_base: z.string().optional().describe('the deep task whose run provides the item embeddings (default: user_base)'),
    session_length: z.number().int().min(1).max(1024).default(16).describe('N: the session is the user\'s last N interactions before the request (RTI)'),
    real_time_offset: durationSchema.default(0).describe('session elements strictly before t − real_time_offset'),
    min_embedding_offset: durationSchema.default(86400).describe('newest usable embedding snapshot: anchor ≤ t − min_embedding_offset (the batch job\'s lag)'),
    max_embedding_offset: durationSchema.default(14 * 86400).describe('oldest usable embedding snapshot'),
    embedding_cadence: durationSchema.default(86400).describe('spacing of embedding snapshots (the daily job)'),
    train_anchors: z.number().int().min(1).default(8).describe('training anchors before the validation anchor, one window apart'),
    max_train_examples: z.number().int().positive().optional().describe('subsample training examples to at most this many (seeded)'),
    kd_weight: z.number().min(0).max(1).default(0.5).describe('weight of the teacher\'s catalogue softmax in the target when a base run is a ranking run of the same task (the deep recommender)'),
    negatives: z.enum(['full']).default('full').describe('full: softmax over the whole catalogue (exact; sampled softmax is not implemented)'),
    dim: z.number().int().min(2).default(32).describe('width of the query and item vectors'),
    user_dim: z.number().int().min(2).default(32).describe('width the user embedding is projected to'),
    element_dim: z.number().int().min(2).default(32).describe('width of the per-element session encoder'),
    hidden: z.number().int().min(2).default(64).describe('width of the query network\'s hidden layer'),
    epochs: z.number().int().min(1).default(20),
    batch_size: z.number().int().min(1).default(256),
    lr: z.number().positive().default(0.003),
    patience: patienceSchema(4),
    dropout: z.number().min(0).max(0.9).default(0.1),
    name: z.string().regex(/^[A-Za-z0-9_.-]+$/, 'use letters, digits, "_", "-" and "."').default('session-recommender').describe('model name in the Triton repository'),
    max_batch_size: z.number().int().min(1).max(65536).default(64),
    max_queue_delay_microseconds: z.number().int().min(0).default(200),
  })
  .strict()
  .refine((d) => d.min_embedding_offset < d.max_embedding_offset, { message: 'min_embedding_offset must be smaller than max_embedding_offset', path: ['min_embedding_offset'] });

export const exportSchema = z
  .object({
    name: z.string().regex(/^[A-Za-z0-9_.-]+$/, 'use letters, digits, "_", "-" and "."').default('online-model'),
    max_batch_size: z.number().int().min(1).max(65536).default(256),
    max_queue_delay_microseconds: z.number().int().min(0).default(500),
    instances: z.number().int().min(1).default(1).describe('instance_group count (KIND_CPU)'),
    quantize: z.enum(['none', 'int8']).default('none').describe('entity tables as FLOAT32 (none) or INT8 with a scale per row (~4x smaller; export reports the score and AUROC change); `export --quantize` overrides, and `refresh` and `pipeline` follow it'),
    external_data: z
      .union([z.enum(['auto', 'always', 'never']), z.number().int().min(0)])
      .default('auto')
      .describe('entity tables in model.onnx.data beside model.onnx (ONNX external data): auto from 64 MiB or near the 2 GiB protobuf limit, always, never, or a size in bytes (every initializer at least that large); `export --external-data` overrides'),
  })
  .strict();

export const onlineStoreSchema = z
  .object({
    url: z.string().regex(/^rediss?:\/\/[^/\s]+(\/\d+)?\/?$/, 'a Redis URL: redis://HOST:PORT[/DB] (rediss:// for TLS)').describe('where `pipeline` and `refresh` publish each embedded table (and `refresh --predict` predictions) after the export: redis://HOST:PORT[/DB]; `--publish` overrides'),
    key_prefix: z.string().regex(/^\S+$/, 'a non-empty word').default('gnnctl').describe('first part of every key, <prefix>:<model>:<version>:<key>; `--publish-prefix` overrides'),
    ttl: durationSchema.refine((s) => s >= 1, 'at least 1 second').default(2 * 86400).describe('how long a published version lives (default 2 days; must outlast the refresh interval); `--publish-ttl` overrides'),
  })
  .strict();

export const configSchema = z
  .object({
    name: z.string().regex(/^[A-Za-z0-9_.-]+$/, 'use letters, digits, "_", "-" and "."').describe('project name (graph artifact folders are named after it)'),
    seed: z.number().int().default(0).describe('seed of every random choice: sampling, shuffling, initialization'),
    artifacts: z.string().optional().describe('artifact folder (default: ./artifacts; --artifacts overrides)'),
    data: dataSchema.prefault({ tables: {} }).describe('the tables and how they link (optional when the config has only an `anomaly` block)'),
    tasks: z.record(z.string(), taskSchema).default({}).describe('predictive tasks by name'),
    features: z
      .object({
        max: z
          .number()
          .int()
          .min(0)
          .default(200)
          .describe('the most relational aggregates the tree models (model.kind gbdt/hybrid/auto) get: the schema offers counts and recency first, then numeric summaries, category shares and two-hop aggregates, and the cap keeps them in that order (generation order within a tier), so the same schema always keeps the same ones; `graph inspect --features` lists each with its reason and what the cap left out'),
      })
      .strict()
      .default({ max: 200 })
      .describe('relational aggregate features of the tree models (docs/models.md)'),
    model: z
      .preprocess(autoModel, modelSchema)
      .default(modelSchema.parse({}))
      .describe('the deep model (per-task overrides under tasks.<name>.model); "auto": the defaults with search: true'),
    distillation: distillationSchema.optional().describe('the shallow serving model (Kumo field names)'),
    export: exportSchema.default(exportSchema.parse({})).describe('the Triton model repository'),
    online_store: onlineStoreSchema.optional().describe('publish embeddings and predictions to Redis for `serve --online-store` (docs/online_store.md)'),
    session_recommender: sessionRecommenderSchema.optional().describe('the session-aware distilled recommender for a ranking task (gnnctl recommender distill|export)'),
    anomaly: anomalySchema.optional().describe('graph-autoencoder anomaly detection on a service dependency graph (gnnctl anomaly)'),
  })
  .strict();

export type RawConfig = z.infer<typeof configSchema>;
export type TableConfig = z.infer<typeof tableSchema>;
export type DataConfig = z.infer<typeof dataSchema>;
export type TaskConfig = z.infer<typeof taskSchema>;
export type DistillationConfig = z.infer<typeof distillationSchema>;
export type ExportConfig = z.infer<typeof exportSchema>;
export type OnlineStoreConfig = z.infer<typeof onlineStoreSchema>;
export type SessionRecommenderConfig = z.infer<typeof sessionRecommenderSchema>;
