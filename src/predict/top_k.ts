/**
 * `predict` on a ranking run: the top k items of every entity that exists at the anchor, exact over the
 * whole catalogue, into Parquet with columns `<entity key>`, `rank` (1…k), `<item key>`, `score` — k rows
 * per entity, best first (fewer only when the catalogue has fewer than k items).
 *
 * The user side h_u comes from `embed`'s snapshot machinery (exact layer-wise by default, sharded the
 * same way); the item side e_i (the GNN over the item's own tree plus its learned vector) is computed once
 * for the catalogue at the same anchor; per chunk of users one fused score matrix and a top-k selection
 * (`rankCatalogue` in model/recommender.ts), the same formula training evaluated.
 *
 * Beside the file, `item_embeddings.parquet` (or `<out>.item_embeddings.parquet` with --out; written by
 * the unsharded job or shard 0) holds e_i per item at the anchor: the item-side vectors a downstream
 * student scores against with a dot product. The user-side vectors are `gnnctl embed --table <entity>`
 * of the same run and anchor (exactly h_u).
 */
import * as arrow from 'apache-arrow';
import * as tf from '@tensorflow/tfjs';
import { basename, join } from 'node:path';
import { UsageError } from '../core/errors.js';
import { Progress } from '../core/progress.js';
import { round } from '../core/number.js';
import { VERSION } from '../core/version.js';
import { writeJsonAtomic } from '../core/atomic.js';
import { embedExact } from '../embed/layerwise.js';
import { existingAt, kvMetadata, readTableKeys, representations, snapshotMetadata, type Snapshot, type SnapshotFigures, type SnapshotOptions } from '../embed/snapshot.js';
import { writeColumns, writeEmbeddings } from '../embed/writer.js';
import { itemPopularity, rankCatalogue, userHistories } from '../model/recommender.js';
import type { DeepModel } from '../model/deep_model.js';

export interface TopKResult extends SnapshotFigures {
  task: string;
  objective: 'ranking';
  prediction: 'top_k';
  k: number;
  key: string;
  item_table: string;
  item_key: string;
  /** items in the catalogue at the anchor */
  items: number;
  /** e_i per item, or null for shards other than 0 */
  item_embeddings: string | null;
}

/** The Parquet column of the item key: its own name, or `<items table>_<key>` when it equals the entity key. */
export function itemKeyColumn(entityKey: string, itemTable: string, itemKey: string): string {
  return itemKey === entityKey ? `${itemTable}_${itemKey}` : itemKey;
}

export async function predictTopK(opts: SnapshotOptions & { withEmbeddings?: boolean }, s: Snapshot, t0: number): Promise<TopKResult> {
  if (opts.withEmbeddings) {
    throw new UsageError(`run ${s.runId} ranks items: its top-k file has k rows per ${s.table} and no embedding column`, {
      where: '--with-embeddings',
      hint: `the user-side vectors are gnnctl embed --table ${s.table} --run ${s.runId} (same anchor); the item-side ones are written beside the predictions (item_embeddings.parquet)`,
    });
  }
  const model = s.model;
  const rs = model.spec.ranking!;
  const C = model.spec.channels;
  const k = rs.top_k;
  const itemPk = s.graph.manifest.schema.tables[rs.item_table]!.primary_key!.column;
  const itemCol = itemKeyColumn(s.key, rs.item_table, itemPk);
  const nItems = existingAt(s.graph, rs.item_table, s.anchor);
  const itemKeys = await readTableKeys(s.graph, rs.item_table, itemPk, 0, nItems, s.path);
  const degreeCap = model.spec.sampling === 'uniform' ? opts.cfg.taskSpecs[s.manifest.task]?.model.exact_degree_cap ?? 1000 : 0;

  const timing: { computeMs: number; workers?: number } = { computeMs: 0 };
  let t = performance.now();
  const items = itemVectors(model, s, nItems, degreeCap);
  const pop = itemPopularity(s.graph, rs, s.anchor).subarray(0, nItems);
  timing.computeMs += performance.now() - t;

  const meta = { ...snapshotMetadata(s, VERSION), task: s.manifest.task, objective: 'ranking' as const, prediction: 'top_k' as const, k, item_table: rs.item_table, item_key: itemCol, items: nItems };
  const progress = new Progress();
  progress.begin(`predict top ${k} ${rs.item_table} per ${s.table} (${s.mode})`, s.hi - s.lo);
  const keyType = (v: arrow.Vector): arrow.DataType => v.type as arrow.DataType;
  async function* chunks(): AsyncGenerator<Record<string, arrow.Vector>> {
    for await (const chunk of representations(s, opts, timing, progress)) {
      t = performance.now();
      const n = chunk.keys.length;
      const users = Int32Array.from({ length: n }, (_, i) => chunk.start + i);
      const histories = userHistories(s.graph, rs, users, new Float64Array(n).fill(s.anchor), () => pop);
      const { ids, scores } = rankCatalogue(model.ranking!, chunk.embeddings, items, pop, histories, k);
      timing.computeMs += performance.now() - t;
      // k rows per user, except past the end of a catalogue smaller than k.
      const keep: number[] = [];
      for (let i = 0; i < ids.length; i++) if (ids[i]! >= 0) keep.push(i);
      const userValues = keep.map((i) => chunk.keys.get(Math.floor(i / k)));
      const itemValues = keep.map((i) => itemKeys.get(ids[i]!));
      yield {
        [s.key]: arrow.vectorFromArray(userValues, keyType(chunk.keys)),
        rank: arrow.makeVector(Int16Array.from(keep, (i) => (i % k) + 1)),
        [itemCol]: arrow.vectorFromArray(itemValues, keyType(itemKeys)),
        score: arrow.makeVector(Float32Array.from(keep, (i) => scores[i]!)),
      };
    }
  }
  const { rows } = await writeColumns(s.path, chunks(), { rowGroupSize: 65536 * Math.min(k, 16), metadata: kvMetadata(meta, s.shard) });
  let itemFile: string | null = null;
  if (!opts.shard || opts.shard.index === 0) {
    itemFile = opts.out ? s.path.replace(/(\.parquet)?$/, '.item_embeddings.parquet') : join(s.outDir, 'item_embeddings.parquet');
    async function* one() {
      yield { keys: itemKeys, embeddings: items };
    }
    await writeEmbeddings(itemFile, one(), { keyName: itemPk, dim: C, anchorTime: s.anchor, rowGroupSize: 65536, metadata: kvMetadata({ ...snapshotMetadata(s, VERSION), table: rs.item_table, key: itemPk, dim: C, side: 'item' }, null) });
  }
  const seconds = (performance.now() - t0) / 1000;
  const rate = (s.hi - s.lo) / Math.max(1e-9, timing.computeMs / 1000);
  progress.end(`ranked ${(s.hi - s.lo).toLocaleString('en-US')} ${s.table} × ${nItems.toLocaleString('en-US')} ${rs.item_table} in ${seconds.toFixed(1)}s`);
  writeJsonAtomic(join(s.outDir, 'manifest.json'), {
    kind: 'predictions',
    ...meta,
    run_dir: s.runDir,
    graph_dir: s.graphDir,
    shards: opts.shard?.count ?? 1,
    rows_total: s.existing,
    files: opts.shard ? 'part-*.parquet' : basename(s.path),
    item_embeddings: itemFile ? basename(itemFile) : null,
  });
  return {
    path: s.path,
    rows,
    anchor_time: meta.anchor_time,
    seconds: round(seconds, 3),
    compute_seconds: round(timing.computeMs / 1000, 3),
    entities_per_s: Math.round(rate),
    workers: timing.workers ?? 1,
    mode: s.mode,
    table: s.table,
    run_id: s.runId,
    shard: s.shard,
    task: meta.task,
    objective: 'ranking',
    prediction: 'top_k',
    k,
    key: s.key,
    item_table: rs.item_table,
    item_key: itemCol,
    items: nItems,
    item_embeddings: itemFile,
  };
}

/** e_i for the catalogue at the snapshot's anchor [N × C]: the item tree (exact or sampled, as asked) plus v_i. */
function itemVectors(model: DeepModel, s: Snapshot, n: number, degreeCap: number): Float32Array {
  const rs = model.spec.ranking!;
  const C = model.spec.channels;
  const nodes = Int32Array.from({ length: n }, (_, i) => i);
  const gnn = s.mode === 'exact' ? embedExact(model, rs.item_table, 0, nodes, s.anchor, degreeCap) : model.embedSampled(rs.item_table, 0, nodes, s.anchor, (s.manifest.seed * 1000003) >>> 0);
  const e = tf.tidy(() => model.ranking!.itemEmbeddings(tf.tensor2d(gnn, [n, C]), nodes));
  const out = e.dataSync() as Float32Array;
  e.dispose();
  return out;
}
