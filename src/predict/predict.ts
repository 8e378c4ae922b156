/**
 * `predict`: the trained run's prediction for every entity of its task's table that exists at one anchor
 * time — churn probability per customer, next week's sales per article — into `predictions.parquet` (or one
 * part file per shard), as Kumo's batch prediction job writes `predictions`. The embedding snapshot's
 * machinery (`embed/snapshot.ts`: run and schema checks, entities at the anchor, shards, exact layer-wise
 * inference, atomic Parquet) with the model's head and the objective's output transform on top, so a
 * prediction is what the trained model outputs for that entity at that anchor, in the task's units.
 *
 * Every entity that exists at the anchor gets a row, including one without any history (no interaction
 * before the anchor): its prediction comes from its own columns alone — the cold-start path — never a
 * missing row. Ranking runs write each entity's top-k items instead (predict/top_k.ts): the model's, or the
 * heuristic's when the run chose one because it beat the model on validation. The task's WHERE filter (e.g. "active in the last 7 days") is not applied: it selects
 * training examples, while a batch job scores the whole table; filter the file by the same rule if needed.
 */
import { tf } from '../core/tf.js';
import { UsageError } from '../core/errors.js';
import { Progress } from '../core/progress.js';
import { VERSION } from '../core/version.js';
import { openSnapshot, representations, snapshotMetadata, writeSnapshot, type RepresentationChunk, type Snapshot, type SnapshotFigures, type SnapshotOptions } from '../embed/snapshot.js';
import type { EmbeddingChunk, EntityColumn } from '../embed/writer.js';
import { objectiveFor, type ObjectiveKind } from '../task/objective/objective.js';
import { targetTable } from '../task/split.js';
import { predictTopK, type TopKResult } from './top_k.js';
import { info } from '../core/log.js';
import { chosenTreeModel, predictTreeModel, type TreeModelFile } from '../train/tree_model.js';

export interface PredictOptions extends SnapshotOptions {
  /** also write each entity's embedding (the representation the head reads) */
  withEmbeddings?: boolean;
  /**
   * ranking runs: the deep model's lists even when the run chose a heuristic (`chosen` in metrics.json);
   * binary and regression runs: the GNN's predictions even when the run chose its trees or hybrid
   */
  serveModel?: boolean;
}

export interface PredictResult extends SnapshotFigures {
  task: string;
  objective: ObjectiveKind;
  /** what `prediction` holds: "probability" (binary) or "value" (regression) */
  prediction: 'probability' | 'value';
  key: string;
  with_embeddings: boolean;
  /** the model that wrote `prediction`: the run's chosen candidate (`gnn`, `gbdt`, `hybrid`), or `gnn` under --serve-model */
  served_by: 'gnn' | 'gbdt' | 'hybrid';
}

/** What the parquet metadata and the folder manifest record about a predictions file. */
export interface PredictionMetadata extends ReturnType<typeof snapshotMetadata> {
  task: string;
  objective: ObjectiveKind;
  prediction: 'probability' | 'value';
  /** embedding dimension, or 0 without an embedding column */
  dim: number;
  served_by: PredictResult['served_by'];
}

export async function predict(opts: PredictOptions): Promise<PredictResult | TopKResult> {
  const t0 = performance.now();
  const s = await openSnapshot(opts, { verb: 'predict', done: 'predicted', folder: 'predictions', file: 'predictions.parquet', checkTable: checkEntityTable(opts), latest: latestTargetTime(opts) });
  try {
    // Ranking runs write top-k lists (predict/top_k.ts), not one value per entity.
    if (s.model.spec.ranking) return await predictTopK(opts, s, t0);
    const output = s.model.spec.output;
    const objective = objectiveFor(output.kind);
    const C = s.model.spec.channels;
    const tree = opts.serveModel ? null : chosenTreeModel(s.runDir);
    if (tree) info(`predict: serving the run's ${tree.kind} model (chosen in training; --serve-model writes the GNN's predictions)`);
    const meta: PredictionMetadata = {
      ...snapshotMetadata(s, VERSION),
      task: s.manifest.task,
      objective: objective.kind,
      prediction: objective.probabilistic ? 'probability' : 'value',
      dim: opts.withEmbeddings ? C : 0,
      served_by: tree?.kind ?? 'gnn',
    };
    const timing = { computeMs: 0 };
    const progress = new Progress();
    progress.begin(`predict ${s.table} (${s.mode})`, s.hi - s.lo);
    async function* chunks(): AsyncGenerator<EmbeddingChunk> {
      for await (const chunk of representations(s, opts, timing, progress)) {
        const t = performance.now();
        const predictions = tree ? await treeOutputs(s, tree, chunk) : headOutputs(s, chunk);
        timing.computeMs += performance.now() - t;
        yield { keys: chunk.keys, predictions, embeddings: opts.withEmbeddings ? chunk.embeddings : undefined };
      }
    }
    const columns: EntityColumn[] = opts.withEmbeddings ? ['anchor_time', 'prediction', 'embedding'] : ['anchor_time', 'prediction'];
    const figures = await writeSnapshot(s, opts, chunks(), { meta, columns, timing, progress, t0 });
    return { ...figures, task: meta.task, objective: meta.objective, prediction: meta.prediction, key: s.key, with_embeddings: !!opts.withEmbeddings, served_by: meta.served_by };
  } finally {
    s.model.dispose();
  }
}

/**
 * The run's head has an output only for its task's entity table, and only an entity task's model scores
 * an entity at an arbitrary anchor (a fact-row model scores a row at its own time).
 */
function checkEntityTable(opts: PredictOptions): NonNullable<Parameters<typeof openSnapshot>[1]['checkTable']> {
  return (table, model, run) => {
    const task = opts.cfg.taskSpecs[run.manifest.task];
    if (task && task.query.target.kind === 'fact') {
      throw new UsageError(`run ${run.id} is for the fact-row task ${task.name}: its model scores each ${model.spec.root} row at the row's own time, not every entity at an anchor`, {
        where: '--run',
        hint: 'predict runs of entity tasks (FOR EACH <table>.<primary key> with an aggregate target); fact-row tasks are scored online by the distilled student (gnnctl distill, export, serve)',
      });
    }
    if (table !== model.spec.root) {
      throw new UsageError(`run ${run.id} predicts ${model.spec.root}, not ${table}`, {
        where: '--table',
        hint: `leave --table out (or pass --table ${model.spec.root}); for representations of ${table} use gnnctl embed --table ${table}`,
      });
    }
  };
}

/**
 * `--anchor-time latest`: the newest time of the task's target table (the table its labels come from), not
 * of any table: a calendar of future-dated rows elsewhere would put the anchor past every known event.
 */
function latestTargetTime(opts: PredictOptions): NonNullable<Parameters<typeof openSnapshot>[1]['latest']> {
  return (graph, run) => {
    const task = opts.cfg.taskSpecs[run.manifest.task];
    const range = task ? graph.manifest.tables[targetTable(task)]?.time_range : null;
    return range ? range[1] : graph.manifest.time_range?.[1] ?? Date.now() / 1000;
  };
}

/** The model's head on a chunk's embeddings, through the objective's output transform. */
function headOutputs(s: Snapshot, chunk: RepresentationChunk): Float32Array {
  const C = s.model.spec.channels;
  const n = chunk.embeddings.length / C;
  if (n === 0) return new Float32Array(0);
  const raw = tf.tidy(() => s.model.gnn.head(tf.tensor2d(chunk.embeddings, [n, C]), false));
  const values = raw.dataSync() as Float32Array;
  raw.dispose();
  return s.model.toOutput(values);
}

/** The tree model on a chunk's entities at the snapshot's anchor (the hybrid also reads their embeddings). */
async function treeOutputs(s: Snapshot, tree: TreeModelFile, chunk: RepresentationChunk): Promise<Float32Array> {
  const n = chunk.keys.length;
  if (n === 0) return new Float32Array(0);
  const nodes = Int32Array.from({ length: n }, (_, i) => chunk.start + i);
  const anchors = new Float64Array(n).fill(s.anchor);
  return Float32Array.from(await predictTreeModel(tree, s.graphDir, s.graph.manifest, { anchors, nodes }, tree.embedding_dim > 0 ? chunk.embeddings : null));
}
