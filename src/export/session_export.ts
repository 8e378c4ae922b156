/**
 * `recommender export`: a session recommender run → a Triton model repository that NVIDIA Triton
 * (onnxruntime backend) and `gnnctl serve` both load:
 *
 *   <out>/<name>/config.pbtxt
 *   <out>/<name>/<version>/model.onnx, manifest.json
 *
 * The base runs embed every user and every item at the newest time of the data (what the daily job
 * publishes); both tables and the precomputed catalogue are baked into the graph. The `session` kind of
 * the export seam (export_kind.ts): the version folder is assembled under a temporary name and checked —
 * onnxruntime loads it and its top-k scores agree with TF.js within 1e-4 on requests rebuilt from the
 * data — before it is renamed into place (model_repository.ts).
 */
import { join } from 'node:path';
import { tf } from '../core/tf.js';
import * as ort from 'onnxruntime-node';
import type { Config } from '../config/load.js';
import { lit, q, readStrings, withDuck } from '../data/duck.js';
import { ArtifactError, ConfigError, UsageError } from '../core/errors.js';
import { isoSeconds } from '../core/duration.js';
import { VERSION } from '../core/version.js';
import { ONNX_TYPE_TO_TRITON } from './export.js';
import { loadWeightMap, readManifest, readModelJson, resolveRun, type RunListing } from '../artifacts/run_store.js';
import type { TritonModelConfig } from '../artifacts/triton/pbtxt.js';
import type { ModelFiles } from '../artifacts/onnx/onnx_graph_builder.js';
import type { DistillManifestBase } from '../distill/student_kind.js';
import type { ExportKind, StudentExportOptions } from './export_kind.js';
import { exportStudent } from './export_student.js';
import { versionResult, type RepositoryTarget } from './model_repository.js';
import { buildGraph } from '../graph/build.js';
import { runFit } from '../graph/fit_until.js';
import { Graph } from '../graph/graph.js';
import { DeepModel } from '../model/deep_model.js';
import { SessionModel } from '../model/student/session_model.js';
import { keyIndex, sessionBatchFromRequests, type SessionRequest } from '../model/student/session_features.js';
import type { SessionSpec } from '../model/student/session_spec.js';
import { tableDepth } from '../embed/layerwise.js';
import { tableVectorsAt } from '../distill/session/teacher.js';
import { SESSION_SPEC_FILE, type SessionDistillManifest } from '../distill/session/session_kind.js';
import { sessionElements } from '../distill/session/data.js';
import { fkParents } from '../distill/session/examples.js';
import type { RankingTarget } from '../task/ranking_target.js';
import type { TrainManifest } from '../train/trainer.js';
import { INT64_MIN } from '../artifacts/onnx/ops/time.js';
import type { Vocabulary } from '../artifacts/onnx/ops/lookup.js';
import { buildSessionOnnx, CANDIDATES_INPUT, itemOutputName, keyElemType, SCORE_OUTPUT, sessionRequestInputs, type KeyedTable } from './session_onnx.js';

export interface SessionExportOptions extends StudentExportOptions {
  /** requests in the TF.js/onnxruntime self-check (default 256; 0 skips it) */
  parityRequests?: number;
}

export interface SessionParityReport {
  requests: number;
  /** largest |Δ| between onnxruntime's and TF.js's sorted top-k scores */
  max_abs_diff: number;
  /** requests whose top-k keys are identical in order (ties may legitimately swap) */
  keys_equal: number;
}

export interface SessionExportResult {
  repository: string;
  model: string;
  version: number;
  dir: string;
  model_bytes: number;
  users: number;
  items: number;
  embedding_anchor: string;
  parity: SessionParityReport;
  seconds: number;
}

/** Exports a session recommender run through the one export path (export_student.ts). */
export async function exportSessionRecommender(opts: SessionExportOptions): Promise<SessionExportResult> {
  return exportStudent(sessionExport, opts);
}

/** What a session export reads: the run's spec and weights, the graph, every user and item embedded at the data's newest time. */
async function sessionExportInputs(opts: SessionExportOptions, run: RunListing, runManifest: DistillManifestBase) {
  const { cfg } = opts;
  const manifest = runManifest as SessionDistillManifest;
  const spec = readModelJson<SessionSpec>(run.dir, SESSION_SPEC_FILE);
  const weights = loadWeightMap(run.dir);
  const r = cfg.session_recommender;
  const target = cfg.sessionTarget;
  if (!r || !target) throw new ConfigError('the config has no `session_recommender` block', [], { hint: 'export with the config the run was distilled with' });

  const built = await buildGraph(cfg, { fit: runFit(run.dir, manifest) });
  const graph = Graph.load(built.dir);
  if (graph.manifest.schema_fingerprint !== manifest.graph.schema_fingerprint) {
    throw new ArtifactError(`version skew: the data's graph schema ${graph.manifest.schema_fingerprint} is not the run's ${manifest.graph.schema_fingerprint}`, { hint: 'distill again on today\'s data' });
  }
  const nItems = graph.table(spec.item.table).rows;
  if (nItems !== spec.items) throw new ArtifactError(`the catalogue has ${nItems} ${spec.item.table} now, the run was trained on ${spec.items}`, { hint: 'distill again (the per-item vectors cover the catalogue the run saw)' });
  const anchor = graph.manifest.time_range![1];
  const users = await embedTable(cfg, graph, manifest.user_base_run, spec.user.table, anchor, spec.user.type);
  const items = await embedTable(cfg, graph, manifest.item_base_run, spec.item.table, anchor, spec.item.type);
  return { cfg, r, target, run, manifest, spec, weights, graph, anchor, users, items };
}

type SessionExportInputs = Awaited<ReturnType<typeof sessionExportInputs>>;

/** What writing a session version gave: its files and the parity check. */
interface SessionWritten {
  files: ModelFiles;
  parity: SessionParityReport;
}

/** The session recommender as a kind of export: user and item tables and the catalogue baked in, top-k parity against TF.js. */
const sessionExport: ExportKind<SessionExportOptions, SessionExportInputs, SessionWritten, SessionExportResult> = {
  kinds: ['session'],
  steps: 2,
  wrongRun: (runId) => new UsageError(`run ${runId} is not a session recommender run`, { where: '--run', hint: 'export it with `gnnctl export`; session recommender runs come from `gnnctl recommender distill`' }),
  inputs: sessionExportInputs,
  defaultName: (x) => x.r.name,
  write: async (x, opts, tmp, step) => {
    const { spec, weights, users, items, run, manifest } = x;
    step('writing the model');
    const g = buildSessionOnnx({ spec, weights, users, items, metadata: { 'gnnctl.distilled_run': run.id, 'gnnctl.user_base_run': manifest.user_base_run, 'gnnctl.item_base_run': manifest.item_base_run, 'gnnctl.version': VERSION } });
    const files = g.toFiles(tmp);
    const n = opts.parityRequests ?? 256;
    step(`parity check on ${n} requests`);
    const requests = await sessionRequests(x.graph, x.target, spec, lastActiveUsers(x.graph, x.target, n), x.anchor, x.r.real_time_offset);
    const parity = await checkSessionParity(files.modelPath, spec, weights, users, items, requests);
    if (!(parity.max_abs_diff <= 1e-4)) {
      throw new ArtifactError(`the exported recommender disagrees with the trained one (max |Δ score| ${parity.max_abs_diff})`, { hint: 'this is a bug in gnnctl; please report it with the run folder' });
    }
    return { files, parity };
  },
  describe: (x, target, w) => ({ manifest: (hashes) => sessionLineage(x, target, w, hashes), readme: null, config: sessionModelConfig(x.spec, target.name, x.r.max_batch_size, x.r.max_queue_delay_microseconds) }),
  result: (x, target, w, seconds) => ({
    ...versionResult(target, w.files),
    users: x.users.keys.length,
    items: x.items.keys.length,
    embedding_anchor: isoSeconds(x.anchor),
    parity: w.parity,
    seconds,
  }),
};

/** The version's manifest.json: what the recommender was made from, what it takes and gives, its check and file hashes. */
function sessionLineage(x: SessionExportInputs, target: RepositoryTarget, w: SessionWritten, hashes: Record<string, string>) {
  const { spec, run, manifest, graph, anchor, users, items } = x;
  return {
    kind: 'export',
    model_kind: 'session_recommender',
    gnnctl: VERSION,
    created_at: new Date().toISOString(),
    model: target.name,
    version: target.version,
    query: spec.query,
    distilled_run: run.id,
    graph_fingerprint: manifest.graph.schema_fingerprint,
    data_fingerprint: graph.manifest.fingerprint,
    embeddings: [
      { table: spec.user.table, anchor_time: isoSeconds(anchor), run_id: manifest.user_base_run, rows: users.keys.length },
      { table: spec.item.table, anchor_time: isoSeconds(anchor), run_id: manifest.item_base_run, rows: items.keys.length },
    ],
    inputs: sessionRequestInputs(spec).map((i) => ({ name: i.name, datatype: v2(i.elemType), shape: [-1, ...i.dims] })),
    outputs: [
      { name: itemOutputName(spec), datatype: v2(keyElemType(spec.item.type)), shape: [-1, spec.k] },
      { name: SCORE_OUTPUT, datatype: 'FP32', shape: [-1, spec.k] },
    ],
    parity: w.parity,
    files: hashes,
  };
}

function v2(t: 'INT64' | 'STRING' | 'FLOAT' | string): string {
  return t === 'STRING' ? 'BYTES' : t === 'FLOAT' ? 'FP32' : t;
}

/** Triton's model configuration of the recommender (plus gnnctl serve's padding / missing / cap parameters). */
export function sessionModelConfig(spec: SessionSpec, name: string, maxBatchSize: number, queueDelayUs: number): TritonModelConfig {
  const inputs = sessionRequestInputs(spec);
  const itemType = keyElemType(spec.item.type);
  return {
    name,
    platform: 'onnxruntime_onnx',
    max_batch_size: maxBatchSize,
    // candidates: optional, so a request may leave it out (gnnctl serve feeds an empty [b, 0] list from its
    // missing value; Triton passes the request on, and onnxruntime needs the input: Triton clients send [b, 0]).
    input: inputs.map((i) => ({ name: i.name, data_type: ONNX_TYPE_TO_TRITON[i.elemType as keyof typeof ONNX_TYPE_TO_TRITON] as never, dims: i.dims, ...(i.name === CANDIDATES_INPUT ? { optional: true } : {}) })),
    output: [
      { name: itemOutputName(spec), data_type: ONNX_TYPE_TO_TRITON[itemType as keyof typeof ONNX_TYPE_TO_TRITON] as never, dims: [spec.k] },
      { name: SCORE_OUTPUT, data_type: 'TYPE_FP32', dims: [spec.k] },
    ],
    dynamic_batching: { max_queue_delay_microseconds: queueDelayUs },
    instance_group: [{ count: 1, kind: 'KIND_CPU' }],
    parameters: Object.fromEntries([
      ...inputs.filter((i) => i.padValue !== undefined).map((i) => [`pad_value:${i.name}`, { string_value: i.padValue! }]),
      ...inputs.filter((i) => i.missingValue !== undefined).map((i) => [`missing_value:${i.name}`, { string_value: i.missingValue! }]),
      ...inputs.filter((i) => i.maxLength !== undefined).map((i) => [`max_sequence_length:${i.name}`, { string_value: String(i.maxLength) }]),
      [`max_sequence_length:${CANDIDATES_INPUT}`, { string_value: String(spec.items) }],
    ]),
  };
}

/** Every row of `table` embedded with a base run at `anchor`, keys in node order. */
async function embedTable(cfg: Config, graph: Graph, runRef: string, table: string, anchor: number, keyType: string): Promise<KeyedTable> {
  const run = resolveRun(cfg.artifactsDir, runRef, { kind: 'train' });
  const m = readManifest<TrainManifest>(run.dir);
  const model = DeepModel.load(run.dir, graph);
  try {
    const depth = tableDepth(model, table);
    if (depth === null) throw new ArtifactError(`the base run ${run.id} has no representation of ${table}`, { hint: 'distill with a base run that embeds it' });
    const rows = graph.table(table).rows;
    const vectors = tableVectorsAt(model, table, depth, Int32Array.from({ length: rows }, (_, i) => i), anchor, cfg.taskSpecs[m.task]?.model.exact_degree_cap ?? 1000);
    return { keys: await tableKeys(graph, table, keyType), vectors, dim: model.spec.channels };
  } finally {
    model.dispose();
  }
}

/** A table's primary keys in node order: strings, or bigints for integer keys. */
export async function tableKeys(graph: Graph, table: string, keyType: string): Promise<Vocabulary> {
  const pk = graph.manifest.schema.tables[table]!.primary_key!.column;
  const keys = await withDuck(async ({ conn }) => readStrings(conn, `SELECT CAST(${q(pk)} AS VARCHAR) FROM read_parquet(${lit(join(graph.dir, graph.manifest.tables[table]!.rows_file))}) ORDER BY __node`));
  return keyElemType(keyType) === 'INT64' ? keys.map((k) => BigInt(k!)) : keys.map((k) => k ?? '');
}

/** The `n` users with the most recent fact rows (the ones a live system is asked about). */
export function lastActiveUsers(graph: Graph, target: RankingTarget, n: number): Int32Array {
  const userFk = fkParents(graph, target.fact_table, target.user_column);
  const seen = new Set<number>();
  for (let v = userFk.length - 1; v >= 0 && seen.size < n; v--) if (userFk[v]! >= 0) seen.add(userFk[v]!);
  return Int32Array.from(seen);
}

/** Raw requests for users at `anchor` (seconds): key, and the last N interactions before anchor − offset. */
export async function sessionRequests(graph: Graph, target: RankingTarget, spec: SessionSpec, users: Int32Array, anchor: number, offset: number): Promise<SessionRequest[]> {
  const anchors = new Float64Array(users.length).fill(anchor);
  const { elements } = sessionElements(graph, target, spec.session.max_length, users, anchors, offset);
  const userKeys = await tableKeys(graph, spec.user.table, spec.user.type);
  const itemKeys = await tableKeys(graph, spec.item.table, spec.item.type);
  const itemFk = fkParents(graph, target.fact_table, target.item_column);
  const time = graph.table(target.fact_table).time!;
  const ns = (s: number): bigint => BigInt(Math.round(s)) * 1_000_000_000n;
  const N = spec.session.max_length;
  return Array.from(users, (u, i) => {
    const items: (string | bigint)[] = [];
    const times: bigint[] = [];
    for (let j = 0; j < N; j++) {
      const el = elements[i * N + j]!;
      if (el < 0) break;
      const it = itemFk[el]!;
      items.push(it < 0 ? (keyElemType(spec.item.type) === 'INT64' ? -987654321n : '\uFFFFunknown') : itemKeys[it]!);
      times.push(ns(time[el]!));
    }
    return { anchor_ns: ns(anchor), user: userKeys[u]!, items, times_ns: times };
  });
}

/** ORT feeds for requests (sessions padded to the longest; no candidates: the whole catalogue). */
export function sessionFeeds(spec: SessionSpec, reqs: readonly SessionRequest[]): Record<string, ort.Tensor> {
  const n = reqs.length;
  const S = Math.max(0, ...reqs.map((r) => r.items.length));
  const itemInt = keyElemType(spec.item.type) === 'INT64';
  const userInt = keyElemType(spec.user.type) === 'INT64';
  const p = spec.session.path;
  const feeds: Record<string, ort.Tensor> = {
    anchor_time: new ort.Tensor('int64', BigInt64Array.from(reqs, (r) => r.anchor_ns), [n, 1]),
    [`${spec.user.table}.${spec.user.column}`]: userInt ? new ort.Tensor('int64', BigInt64Array.from(reqs, (r) => BigInt(r.user)), [n, 1]) : new ort.Tensor('string', reqs.map((r) => String(r.user)), [n, 1]),
    [CANDIDATES_INPUT]: itemInt ? new ort.Tensor('int64', new BigInt64Array(0), [n, 0]) : new ort.Tensor('string', [], [n, 0]),
  };
  if (spec.use_rti) {
    const times = new BigInt64Array(n * S).fill(INT64_MIN);
    const items: (string | bigint)[] = new Array(n * S).fill(itemInt ? INT64_MIN : '');
    reqs.forEach((r, i) => r.items.forEach((k, j) => {
      items[i * S + j] = k;
      times[i * S + j] = r.times_ns[j]!;
    }));
    feeds[`${p}:${spec.session.time_column}`] = new ort.Tensor('int64', times, [n, S, 1]);
    feeds[`${p}:${spec.session.item_column}`] = itemInt ? new ort.Tensor('int64', BigInt64Array.from(items as bigint[]), [n, S, 1]) : new ort.Tensor('string', items as string[], [n, S, 1]);
  }
  return feeds;
}

/** TF.js scores of the full catalogue for requests, and their top-k (the reference the export is held to). */
export function tfTopK(spec: SessionSpec, weights: Map<string, Float32Array>, users: KeyedTable, items: KeyedTable, reqs: readonly SessionRequest[]): { keys: (string | bigint)[][]; scores: number[][] } {
  const model = new SessionModel(spec, 0, 0);
  try {
    model.params.restore(weights);
    const b = sessionBatchFromRequests(spec, reqs, { index: keyIndex(users.keys as ArrayLike<string | bigint>), vectors: users.vectors }, keyIndex(items.keys as ArrayLike<string | bigint>));
    const t = tf.tidy(() => model.scores(b, tf.tensor2d(items.vectors, [spec.items, spec.item.dim]), false));
    const all = t.dataSync() as Float32Array;
    t.dispose();
    const keys: (string | bigint)[][] = [];
    const scores: number[][] = [];
    for (let i = 0; i < reqs.length; i++) {
      const s = all.subarray(i * spec.items, (i + 1) * spec.items);
      const order = Array.from(s.keys()).sort((a, b) => s[b]! - s[a]! || a - b).slice(0, spec.k);
      keys.push(order.map((j) => (items.keys as ArrayLike<string | bigint>)[j]!));
      scores.push(order.map((j) => s[j]!));
    }
    return { keys, scores };
  } finally {
    model.dispose();
  }
}

async function checkSessionParity(modelPath: string, spec: SessionSpec, weights: Map<string, Float32Array>, users: KeyedTable, items: KeyedTable, reqs: SessionRequest[]): Promise<SessionParityReport> {
  if (reqs.length === 0) return { requests: 0, max_abs_diff: 0, keys_equal: 0 };
  const expected = tfTopK(spec, weights, users, items, reqs);
  const session = await ort.InferenceSession.create(modelPath, { intraOpNumThreads: 1 });
  try {
    let maxAbs = 0;
    let keysEqual = 0;
    for (let i = 0; i < reqs.length; i += 64) {
      const part = reqs.slice(i, i + 64);
      const out = await session.run(sessionFeeds(spec, part));
      const keys = out[itemOutputName(spec)]!.data as ArrayLike<string | bigint>;
      const scores = out[SCORE_OUTPUT]!.data as Float32Array;
      part.forEach((_, j) => {
        let same = true;
        for (let c = 0; c < spec.k; c++) {
          const d = Math.abs(scores[j * spec.k + c]! - expected.scores[i + j]![c]!);
          maxAbs = Number.isFinite(d) ? Math.max(maxAbs, d) : Infinity;
          if (String(keys[j * spec.k + c]) !== String(expected.keys[i + j]![c])) same = false;
        }
        if (same) keysEqual++;
      });
    }
    return { requests: reqs.length, max_abs_diff: maxAbs, keys_equal: keysEqual };
  } finally {
    await session.release();
  }
}
