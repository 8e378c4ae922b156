/**
 * The `session` kind of the student seam (student_kind.ts), `recommender distill`: the session-aware distilled recommender of a ranking task (Kumo's online path).
 * Trained on the task's (user, anchor) examples with the window's distinct items as positives, from the
 * base runs' user and item embeddings (as of the snapshot a daily job would have published before each
 * anchor) and the user's last N interactions. Reports MAP@k / recall@k / NDCG@k on val and test against the
 * popularity and repeat baselines, an ablation without the session, and what the session adds on the users
 * whose session departs from their earlier history.
 */
import { tf } from '../../core/tf.js';
import { isoSeconds } from '../../core/duration.js';
import { ConfigError } from '../../core/errors.js';
import { info } from '../../core/log.js';
import { round } from '../../core/number.js';
import { selectBackend, type BackendRequest } from '../../compute/backend.js';
import type { Config } from '../../config/load.js';
import { newRunId, readManifest, resolveRun } from '../../artifacts/run_store.js';
import { runManifestHead } from '../../artifacts/run_lifecycle.js';
import { checkSchema } from '../../embed/embed.js';
import { buildGraph } from '../../graph/build.js';
import { latestRunFit } from '../../graph/fit_until.js';
import { Graph } from '../../graph/graph.js';
import { DeepModel } from '../../model/deep_model.js';
import type { SessionSpec } from '../../model/student/session_spec.js';
import type { TrainManifest } from '../../train/trainer.js';
import { meanInterval, perUserRanking, rankingIntervals } from '../../train/ranking_intervals.js';
import type { Interval } from '../../task/intervals.js';
import type { RankingTarget } from '../../task/ranking_target.js';
import { checkProviders, sessionData, type SessionData } from './data.js';
import { rankingAnchors, rankingExamples, type RankingExamples } from './examples.js';
import { popularityLists, rankingMetrics, repeatLists, topK, type RankingMetrics } from './ranking_eval.js';
import { trainSessionModel, type TrainedSessionModel } from './train.js';
import { RankingTeacher } from './teacher.js';
import type { StudentDistillResult } from '../distill_student.js';
import type { DistillManifestBase, StudentKind } from '../student_kind.js';

export const SESSION_SPEC_FILE = 'session_spec.json';

export interface DistillSessionOptions {
  cfg: Config;
  /** user base run: id, folder or latest:<task>; default latest:<session_recommender.user_base> */
  userBase?: string;
  /** item base run; default latest:<item_base ?? user_base> */
  itemBase?: string;
  epochs?: number;
  backend?: BackendRequest;
  cwd?: string;
}

export interface SessionDistillMetrics {
  task: string;
  query: string;
  k: number;
  user_base_run: string;
  item_base_run: string;
  val: RankingMetrics;
  test: RankingMetrics;
  baselines: { popularity: { val: RankingMetrics; test: RankingMetrics }; repeat: { val: RankingMetrics; test: RankingMetrics } };
  /** test MAP@k over the best baseline's */
  lift_over_best_baseline: number;
  ablations: { no_session: { val: RankingMetrics; test: RankingMetrics }; session_only: { val: RankingMetrics; test: RankingMetrics } };
  /**
   * Test users split by how far the session departs from their earlier history: cosine of the mean item
   * embedding of the session against that of the user's interactions before it; "departed" is the lower half.
   */
  session_departure: { threshold_cosine: number; departed: { student: RankingMetrics; no_session: RankingMetrics }; rest: { student: RankingMetrics; no_session: RankingMetrics }; no_history: number };
  /** distillation from a ranking run of the same task (the deep recommender), or why there was none */
  distillation: { teacher: string | null; kd_weight: number; reason: string | null };
  /** the teacher's own metrics on the same examples, and the student's test MAP@k over the teacher's */
  teacher: { val: RankingMetrics; test: RankingMetrics } | null;
  teacher_ratio: number | null;
  /**
   * 95% bootstrap intervals, test users resampled (docs/evaluation.md): the student's test MAP@k, recall@k and
   * NDCG@k, each baseline's and the teacher's test MAP@k, and the paired student − teacher and student − best
   * baseline MAP@k differences
   */
  intervals: {
    test: Record<'map_at_k' | 'recall_at_k' | 'ndcg_at_k', Interval>;
    test_map_by_list: Record<string, Interval>;
    lift_over_teacher: Interval;
    lift_over_best_baseline: Interval;
  };
  negatives: 'full';
  student: { parameters: number; parameters_per_item: number; bytes: number };
  counts: { train: number; val: number; test: number; items: number };
  split: { train: string[]; val: string; test: string };
  epochs: { epoch: number; loss: number; val_map: number }[];
  best_epoch: number;
}

export interface SessionDistillManifest extends DistillManifestBase {
  model: 'session_recommender';
  user_base_run: string;
  item_base_run: string;
}

export type DistillSessionResult = StudentDistillResult<SessionDistillMetrics>;

export function sessionRunTask(task: string): string {
  return `${task}-session`;
}

/** The session recommender as a kind of the student seam. */
export const sessionKind: StudentKind<DistillSessionOptions, PreparedSession, SessionStudents, SessionDistillMetrics> = {
  name: 'session',
  specFile: SESSION_SPEC_FILE,
  prepare: prepareSession,
  manifest: sessionRunManifest,
  train: async (p, opts) => trainSessionStudents(p, opts),
  main: (s) => s.main,
  metrics: (p, _opts, s, bytes) => sessionMetrics(p, s, bytes),
  headline: (m) => ({ test: m.test, baselines_test: { popularity: m.baselines.popularity.test, repeat: m.baselines.repeat.test }, no_session_test: m.ablations.no_session.test }),
  disposeStudents: (s) => {
    for (const m of [s.main, s.noSession, s.sessionOnly]) m.model.dispose();
  },
  release: (p) => {
    p.teacher?.dispose();
    if (p.itemModel !== p.userModel) p.itemModel.dispose();
    p.userModel.dispose();
  },
};

/** Everything the session students train on: the base runs and their models, the examples, the spec and the session data. */
async function prepareSession(opts: DistillSessionOptions) {
  const { cfg } = opts;
  const r = cfg.session_recommender;
  const target = cfg.sessionTarget;
  if (!r || !target) throw new ConfigError('the config has no `session_recommender` block', [], { hint: 'add session_recommender: { task, query, user_base, item_base, … } (see docs/config.md)' });
  const backend = await selectBackend(opts.backend ?? 'auto');
  const userRun = resolveRun(cfg.artifactsDir, opts.userBase ?? `latest:${r.user_base}`, { kind: 'train', cwd: opts.cwd });
  const itemRun = resolveRun(cfg.artifactsDir, opts.itemBase ?? `latest:${r.item_base ?? r.user_base}`, { kind: 'train', cwd: opts.cwd });
  const userManifest = readManifest<TrainManifest>(userRun.dir);
  const itemManifest = readManifest<TrainManifest>(itemRun.dir);
  const built = await buildGraph(cfg, { fit: latestRunFit([{ dir: userRun.dir, manifest: userManifest }, { dir: itemRun.dir, manifest: itemManifest }]) });
  const graph = Graph.load(built.dir);
  checkSchema(userRun, userManifest, graph);
  checkSchema(itemRun, itemManifest, graph);
  const userModel = DeepModel.load(userRun.dir, graph);
  const itemModel = itemRun.dir === userRun.dir ? userModel : DeepModel.load(itemRun.dir, graph);
  try {
    const cap = (m: TrainManifest): number => cfg.taskSpecs[m.task]?.model.exact_degree_cap ?? 1000;
    const providers = { user: userModel, item: itemModel, userCap: cap(userManifest), itemCap: cap(itemManifest) };
    const depths = checkProviders(providers, target, { user: userRun.id, item: itemRun.id });

    const range = graph.manifest.time_range!;
    const anchors = rankingAnchors(target, range, r.train_anchors);
    const ex = rankingExamples(graph, target, anchors, { maxTrain: r.max_train_examples, seed: cfg.seed });
    const nItems = graph.table(target.item_table).rows;
    info(`recommender: ${ex.ranges.train[1]} train / ${ex.ranges.val[1] - ex.ranges.val[0]} val / ${ex.ranges.test[1] - ex.ranges.test[0]} test examples, ${nItems} items`);
    const typeOf = (table: string, column: string): string => (graph.manifest.schema.tables[table]!.primary_key!.column === column ? graph.manifest.schema.tables[table]!.primary_key!.type : 'VARCHAR');
    const spec: SessionSpec = {
      query: target.query,
      user: { table: target.user_table, column: target.user_key, type: typeOf(target.user_table, target.user_key), dim: userModel.spec.channels },
      item: { table: target.item_table, column: target.item_key, type: typeOf(target.item_table, target.item_key), dim: itemModel.spec.channels },
      items: nItems,
      session: { path: `${target.user_table}.${target.user_key}->${target.fact_table}.${target.user_column}`, fact_table: target.fact_table, item_column: target.item_column, time_column: cfg.data.tables[target.fact_table]!.time_column!, max_length: r.session_length },
      k: target.k,
      dim: r.dim,
      user_dim: r.user_dim,
      element_dim: r.element_dim,
      hidden: r.hidden,
      use_user: true,
      use_rti: true,
      // Each session element sees its recency rank and its item's count in the session: without them the student
      // cannot express "one of the last few articles, bought twice" and lost to the repeat baseline (README).
      element_context: true,
    };
    let t = performance.now();
    const data = sessionData(graph, target, spec, providers, ex.users, ex.anchors, { realTimeOffset: r.real_time_offset, minOffset: r.min_embedding_offset, maxOffset: r.max_embedding_offset, cadence: r.embedding_cadence }, depths);
    const timings: Record<string, number> = { data: secs(t) };

    // The deep recommender of this very task teaches (KD on its catalogue scores); other base runs only provide embeddings.
    const teacherRun = [userRun, itemRun].find((x, i) => (i === 0 ? userModel : itemModel).ranking && x.manifest.task === r.task) ?? null;
    let teacher: RankingTeacher | null = null;
    if (teacherRun) {
      t = performance.now();
      teacher = new RankingTeacher(teacherRun === userRun ? userModel : itemModel, graph, ex, nItems, cap(teacherRun === userRun ? userManifest : itemManifest));
      timings.teacher = secs(t);
    }
    return { cfg, r, target, backend, userRun, itemRun, built, graph, userModel, itemModel, anchors, ex, nItems, spec, data, timings, teacherRun, teacher };
  } catch (e) {
    if (itemModel !== userModel) itemModel.dispose();
    userModel.dispose();
    throw e;
  }
}

type PreparedSession = Awaited<ReturnType<typeof prepareSession>>;

/** The session run's `running` manifest (its timings fill in as the stages end). */
function sessionRunManifest(p: PreparedSession, _opts: DistillSessionOptions, startedAt: string): SessionDistillManifest {
  const { cfg, r, backend, userRun, itemRun, built, graph, timings } = p;
  return {
    ...runManifestHead({
      kind: 'distill',
      id: newRunId(sessionRunTask(r.task)),
      task: sessionRunTask(r.task),
      created_at: startedAt,
      graph_dir: built.dir,
      graph: graph.manifest,
      backend: backend.name,
      seed: cfg.seed,
      config: { name: cfg.name, path: cfg.path, session_recommender: r },
      timings,
    }),
    model: 'session_recommender',
    user_base_run: userRun.id,
    item_base_run: itemRun.id,
  };
}

/** The student and its two ablations (without the session, without the user embedding). */
interface SessionStudents {
  main: TrainedSessionModel;
  noSession: TrainedSessionModel;
  sessionOnly: TrainedSessionModel;
}

function trainSessionStudents(p: PreparedSession, opts: DistillSessionOptions): SessionStudents {
  const { cfg, r, spec, data, ex, teacher, timings } = p;
  const train = (variant: Partial<SessionSpec>, epochs: number, kd: boolean): TrainedSessionModel =>
    trainSessionModel({ ...spec, ...variant }, data, ex, {
      epochs,
      batchSize: r.batch_size,
      lr: r.lr,
      patience: r.patience,
      dropout: r.dropout,
      seed: cfg.seed,
      ...(teacher && kd && r.kd_weight > 0 ? { teacher: { model: teacher, weight: r.kd_weight } } : {}),
    });
  let t = performance.now();
  const epochs = opts.epochs ?? r.epochs;
  const main = train({}, epochs, true);
  timings.student = secs(t);
  t = performance.now();
  const ablationEpochs = Math.max(1, Math.ceil(epochs * 0.67));
  const noSession = train({ use_rti: false }, ablationEpochs, true);
  const sessionOnly = train({ use_user: false }, ablationEpochs, true);
  timings.ablations = secs(t);
  return { main, noSession, sessionOnly };
}

/** metrics.json of a session run: the student beside the baselines, the ablations, the teacher and the session-departure split. */
function sessionMetrics(p: PreparedSession, students: SessionStudents, studentBytes: number): SessionDistillMetrics {
  const { cfg, r, target, graph, ex, spec, data, anchors, nItems, teacher, teacherRun, userRun, itemRun } = p;
  const { main, noSession, sessionOnly } = students;
  const rows = (rg: [number, number]): Int32Array => Int32Array.from({ length: rg[1] - rg[0] }, (_, i) => rg[0] + i);
  const baseline = (f: (rs: Int32Array) => Int32Array) => ({ val: rankingMetrics(ex, rows(ex.ranges.val), f(rows(ex.ranges.val)), spec.k), test: rankingMetrics(ex, rows(ex.ranges.test), f(rows(ex.ranges.test)), spec.k) });
  const popularity = baseline((rs) => popularityLists(graph, target, ex, rs, spec.k, anchors.window));
  const repeat = baseline((rs) => repeatLists(graph, target, ex, rs, spec.k));
  const testRows = rows(ex.ranges.test);
  const lists: Record<string, Int32Array> = {
    student: main.testLists,
    popularity: popularityLists(graph, target, ex, testRows, spec.k, anchors.window),
    repeat: repeatLists(graph, target, ex, testRows, spec.k),
    ...(teacher ? { teacher: teacherLists(teacher, ex, testRows, spec.k) } : {}),
  };
  const departure = departureSplit(graph, target, ex, data, spec, main, noSession);
  const teacherMetrics = teacher ? { val: rankingMetrics(ex, rows(ex.ranges.val), teacherLists(teacher, ex, rows(ex.ranges.val), spec.k), spec.k), test: rankingMetrics(ex, rows(ex.ranges.test), teacherLists(teacher, ex, rows(ex.ranges.test), spec.k), spec.k) } : null;
  const bestBaseline = Math.max(popularity.test.map, repeat.test.map);
  const intervals = sessionIntervals(ex, testRows, lists, spec.k, cfg.seed, popularity.test.map >= repeat.test.map ? 'popularity' : 'repeat');
  return {
    task: r.task,
    query: target.query,
    k: spec.k,
    user_base_run: userRun.id,
    item_base_run: itemRun.id,
    val: main.val,
    test: main.test,
    baselines: { popularity, repeat },
    lift_over_best_baseline: bestBaseline > 0 ? round(main.test.map / bestBaseline, 4) : 0,
    ablations: { no_session: { val: noSession.val, test: noSession.test }, session_only: { val: sessionOnly.val, test: sessionOnly.test } },
    session_departure: departure,
    distillation: teacherRun
      ? { teacher: teacherRun.id, kd_weight: r.kd_weight, reason: null }
      : { teacher: null, kd_weight: 0, reason: `neither base run is a ranking run of ${r.task}: there are no teacher scores to distil from, so the student learns from the labels and the base runs' embeddings only` },
    teacher: teacherMetrics,
    teacher_ratio: teacherMetrics && teacherMetrics.test.map > 0 ? round(main.test.map / teacherMetrics.test.map, 4) : null,
    intervals,
    negatives: 'full',
    student: { parameters: main.model.parameterCount(), parameters_per_item: spec.dim + 1, bytes: studentBytes },
    counts: { train: ex.ranges.train[1] - ex.ranges.train[0], val: ex.ranges.val[1] - ex.ranges.val[0], test: ex.ranges.test[1] - ex.ranges.test[0], items: nItems },
    split: { train: anchors.train.map(isoSeconds), val: isoSeconds(anchors.val), test: isoSeconds(anchors.test) },
    epochs: main.epochs,
    best_epoch: main.bestEpoch,
  };
}

/** Metrics of the student and the no-session ablation on test users whose session departs from their history, and on the rest. */
function departureSplit(graph: Graph, target: RankingTarget, ex: RankingExamples, data: SessionData, spec: SessionSpec, main: TrainedSessionModel, noSession: TrainedSessionModel): SessionDistillMetrics['session_departure'] {
  const [lo, hi] = ex.ranges.test;
  const N = spec.session.max_length;
  const di = spec.item.dim;
  const rev = graph.edges.find((e) => e.kind === 'rev' && e.src === target.user_table && e.dst === target.fact_table && e.meta.column === target.user_column)!;
  const time = graph.table(target.fact_table).time!;
  const itemFk = graph.edges.find((e) => e.kind === 'fk' && e.src === target.fact_table && e.meta.column === target.item_column)!.parent!;
  const cos: number[] = [];
  const pos: number[] = [];
  let noHistory = 0;
  for (let e = lo; e < hi; e++) {
    const B = data.snapshots[data.snapshot[e]!]!.items;
    const s = new Float64Array(di);
    let sn = 0;
    let oldest = Infinity;
    for (let j = 0; j < N; j++) {
      if (!data.mask[e * N + j]) continue;
      const it = data.items[e * N + j]!;
      if (it >= spec.items) continue;
      for (let c = 0; c < di; c++) s[c]! += B[it * di + c]!;
      sn++;
      oldest = Math.min(oldest, ex.anchors[e]! - data.delta[e * N + j]! * 86400);
    }
    // Earlier history: the user's interactions before the session's oldest element.
    const h = new Float64Array(di);
    let hn = 0;
    const u = ex.users[e]!;
    for (let j = rev.indptr![u]!; j < rev.indptr![u + 1]!; j++) {
      const v = rev.indices![j]!;
      if (time[v]! >= oldest - 1) break;
      const it = itemFk[v]!;
      if (it < 0) continue;
      for (let c = 0; c < di; c++) h[c]! += B[it * di + c]!;
      hn++;
    }
    if (sn === 0 || hn === 0) {
      noHistory++;
      continue;
    }
    let dot = 0;
    let ns = 0;
    let nh = 0;
    for (let c = 0; c < di; c++) {
      dot += s[c]! * h[c]!;
      ns += s[c]! ** 2;
      nh += h[c]! ** 2;
    }
    cos.push(dot / Math.sqrt(ns * nh || 1));
    pos.push(e - lo);
  }
  const sorted = [...cos].sort((a, b) => a - b);
  const threshold = sorted.length ? sorted[Math.floor(sorted.length / 2)]! : 0;
  const departed = pos.filter((_, i) => cos[i]! < threshold);
  const rest = pos.filter((_, i) => cos[i]! >= threshold);
  const k = spec.k;
  const sub = (lists: Int32Array, idx: number[]): RankingMetrics => {
    const l = new Int32Array(idx.length * k);
    idx.forEach((p, i) => l.set(lists.subarray(p * k, (p + 1) * k), i * k));
    return rankingMetrics(ex, idx.map((p) => lo + p), l, k);
  };
  return {
    threshold_cosine: round(threshold, 4),
    departed: { student: sub(main.testLists, departed), no_session: sub(noSession.testLists, departed) },
    rest: { student: sub(main.testLists, rest), no_session: sub(noSession.testLists, rest) },
    no_history: noHistory,
  };
}

/** The teacher's top-k lists for examples `rows` (grouped by anchor). */
function teacherLists(teacher: RankingTeacher, ex: RankingExamples, rows: Int32Array, k: number): Int32Array {
  const out = new Int32Array(rows.length * k);
  const byAnchor = new Map<number, number[]>();
  rows.forEach((e, p) => {
    const t = ex.anchors[e]!;
    let l = byAnchor.get(t);
    if (!l) byAnchor.set(t, (l = []));
    l.push(p);
  });
  for (const [t, ps] of byAnchor) {
    for (let i = 0; i < ps.length; i += 512) {
      const part = ps.slice(i, i + 512);
      const s = tf.tidy(() => teacher.scores(part.map((p) => rows[p]!), t));
      const v = s.dataSync() as Float32Array;
      const M = s.shape[1];
      s.dispose();
      part.forEach((p, j) => topK(v.subarray(j * M, (j + 1) * M), k, out, p * k));
    }
  }
  return out;
}

function secs(t: number): number {
  return Math.round((performance.now() - t) / 10) / 100;
}

/** The session run's test intervals from each list's per-user AP@k (train/ranking_intervals.ts, as ranking runs report). */
function sessionIntervals(ex: RankingExamples, testRows: Int32Array, lists: Record<string, Int32Array>, k: number, seed: number, bestBaseline: 'popularity' | 'repeat'): SessionDistillMetrics['intervals'] {
  const offsets = new Int32Array(testRows.length + 1);
  const items: number[] = [];
  testRows.forEach((e, i) => {
    for (let j = ex.ptr[e]!; j < ex.ptr[e + 1]!; j++) items.push(ex.items[j]!);
    offsets[i + 1] = items.length;
  });
  const labels = { offsets, items: Int32Array.from(items) };
  const perUser = Object.fromEntries(Object.entries(lists).map(([name, l]) => [name, perUserRanking(labels, l, k)]));
  const student = perUser.student!;
  return {
    test: rankingIntervals(student, seed),
    test_map_by_list: Object.fromEntries(Object.entries(perUser).map(([name, u]) => [name, meanInterval(u.map_at_k, seed)])),
    lift_over_teacher: perUser.teacher ? meanInterval(student.map_at_k, seed, perUser.teacher.map_at_k) : null,
    lift_over_best_baseline: meanInterval(student.map_at_k, seed, perUser[bestBaseline]!.map_at_k),
  };
}
