/**
 * `check`: the health of a model repository — the staleness and version-skew failures production GNN
 * serving suffers. For the latest version of each model:
 *
 * - embedding age: reference time − embedding anchor must not exceed `max_embedding_offset` (the oldest
 *   embedding the model was trained to accept). The reference time is the newest time in the current data
 *   when a config is given (so a backfill over old data is judged against that data), else the clock;
 * - schema: the model's graph fingerprint and the one written into each embedding file must agree, and
 *   (with a config) the base run must be able to read the current data (model/compatibility.ts);
 * - drift (with a config): per feature the base run reads, the population stability index of the current
 *   window against the run's fitted reference must stay under the threshold (pipeline/drift.ts);
 * - integrity: every file listed in the version manifest exists and has the recorded hash.
 *
 * Any failed check makes the command exit non-zero (4).
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Config } from '../config/load.js';
import { lit, queryRows, withDuck } from '../data/duck.js';
import { ArtifactError } from '../core/errors.js';
import { buildGraph, dataTimeRange } from '../graph/build.js';
import { runFit, type FitFor } from '../graph/fit_until.js';
import { formatDuration } from '../core/duration.js';
import { hashFile } from '../core/hash.js';
import { latestVersion } from './refresh.js';
import { DEFAULT_DRIFT, driftReport, type DriftOptions, type DriftReport } from './drift.js';
import { Graph } from '../graph/graph.js';
import { compatibility } from '../model/compatibility.js';
import type { FeatureSpec } from '../model/features.js';
import type { GraphSchema } from '../artifacts/graph_manifest.js';
import { readManifest, readModelJson, resolveRun } from '../artifacts/run_store.js';

export interface CheckItem {
  model: string;
  version: number;
  check: 'embedding_age' | 'schema' | 'drift' | 'integrity';
  ok: boolean;
  detail: string;
}

export interface CheckResult {
  ok: boolean;
  reference_time: string;
  reference: 'data' | 'clock';
  checks: CheckItem[];
  /** per model (with a config): the base run's feature drift on the current data */
  drift?: Record<string, DriftReport>;
}

interface ExportManifest {
  model: string;
  version: number;
  graph_fingerprint: string;
  base_run: string;
  max_embedding_offset_seconds: number | null;
  embeddings: { table: string; anchor_time: string }[];
  files: Record<string, string>;
}

export async function checkRepository(repo: string, cfg?: Config, now?: number, driftOptions: DriftOptions = DEFAULT_DRIFT): Promise<CheckResult> {
  if (!existsSync(repo)) throw new ArtifactError(`model repository not found: ${repo}`, { hint: 'pass --model-repository DIR (e.g. artifacts/model_repository)' });
  let reference = now ?? Date.now() / 1000;
  let referenceKind: CheckResult['reference'] = 'clock';
  if (cfg && now === undefined) {
    const range = await dataTimeRange(cfg);
    if (range) {
      reference = range[1];
      referenceKind = 'data';
    }
  }
  const drift: Record<string, DriftReport> = {};
  const checks: CheckItem[] = [];
  const models = readdirSync(repo).filter((d) => !d.startsWith('.') && existsSync(join(repo, d, 'config.pbtxt')));
  if (models.length === 0) throw new ArtifactError(`no models in ${repo} (no <name>/config.pbtxt)`, { hint: 'export one first' });
  for (const model of models) {
    const version = latestVersion(join(repo, model));
    if (version === null) {
      checks.push({ model, version: 0, check: 'integrity', ok: false, detail: 'no complete version folder' });
      continue;
    }
    const dir = join(repo, model, String(version));
    const m = JSON.parse(readFileSync(join(dir, 'manifest.json'), 'utf8')) as ExportManifest;
    const add = (check: CheckItem['check'], ok: boolean, detail: string): void => {
      checks.push({ model, version, check, ok, detail });
    };

    const maxAge = m.max_embedding_offset_seconds;
    for (const e of m.embeddings) {
      const age = reference - Date.parse(e.anchor_time) / 1000;
      if (maxAge === null) add('embedding_age', true, `${e.table}: anchor ${e.anchor_time} (no max_embedding_offset recorded)`);
      else add('embedding_age', age <= maxAge, `${e.table}: embeddings are ${formatAge(age)} old at ${new Date(reference * 1000).toISOString()}; the model accepts at most ${formatDuration(maxAge)}${age > maxAge ? ' — run `gnnctl refresh`' : ''}`);
    }

    for (const f of Object.keys(m.files).filter((x) => /^embeddings\..*\.parquet$/.test(x))) {
      const fp = await embeddingFingerprint(join(dir, f));
      add('schema', fp === m.graph_fingerprint, `${f}: graph fingerprint ${fp ?? 'missing'} vs model ${m.graph_fingerprint}`);
    }
    if (cfg) {
      const base = baseRun(cfg, m);
      if (base) {
        // The current data encoded as the base run was fitted: its graph rebuilt at the run's own fit_until.
        const graph = Graph.load((await buildGraph(cfg, { fit: base.fit })).dir);
        const { breaking, notes } = compatibility(base.schema, base.spec, graph.manifest.schema);
        add('schema', breaking.length === 0, breaking.length ? `current data: ${breaking.join('; ')} — retrain and export` : `current data: base run ${m.base_run} reads it${notes.length ? ` (${notes.join('; ')})` : ''}`);
        const r = driftReport(graph, base.spec, driftOptions);
        drift[model] = r;
        const worst = r.features.filter((f) => f.drifted).map((f) => `${f.table}.${f.column} PSI ${f.psi}${f.oov_share !== undefined ? `, OOV ${(f.oov_share * 100).toFixed(1)}% (fit ${((f.reference_oov_share ?? 0) * 100).toFixed(1)}%)` : ''}`);
        add('drift', r.ok, r.ok ? `${r.features.length} features within PSI ${r.threshold} (max ${r.max_psi}) over ${r.window.from} … ${r.window.to}` : `${worst.join('; ')} above PSI ${r.threshold} — the data moved away from what the model was fitted on: retrain`);
      } else {
        add('schema', false, `current data: base run ${m.base_run} not found in ${cfg.artifactsDir}/runs, so its encoders cannot be checked`);
      }
    }

    const bad: string[] = [];
    for (const [f, h] of Object.entries(m.files)) {
      const p = join(dir, f);
      if (!existsSync(p)) bad.push(`${f} missing`);
      else if ((await hashFile(p)) !== h) bad.push(`${f} changed`);
    }
    add('integrity', bad.length === 0, bad.length ? bad.join(', ') : `${Object.keys(m.files).length} files match their recorded hashes`);
  }
  return { ok: checks.every((c) => c.ok), reference_time: new Date(reference * 1000).toISOString(), reference: referenceKind, checks, ...(cfg ? { drift } : {}) };
}

/** The base run of an exported version: its fitted encoders and the schema it was trained on. */
function baseRun(cfg: Config, m: ExportManifest): { schema: GraphSchema; spec: FeatureSpec; fit: FitFor } | null {
  try {
    const run = resolveRun(cfg.artifactsDir, m.base_run, { kind: 'train' });
    const manifest = readManifest(run.dir);
    return { schema: manifest.graph_schema as GraphSchema, spec: readModelJson<FeatureSpec>(run.dir, 'features.json'), fit: runFit(run.dir, manifest) };
  } catch (e) {
    if (e instanceof ArtifactError) return null;
    throw e;
  }
}

async function embeddingFingerprint(file: string): Promise<string | null> {
  return withDuck(async ({ conn }) => {
    const rows = await queryRows<{ v: string }>(conn, `SELECT decode(value) AS v FROM parquet_kv_metadata(${lit(file)}) WHERE decode(key) = 'graph_fingerprint'`);
    return rows[0]?.v ?? null;
  });
}

function formatAge(seconds: number): string {
  const d = seconds / 86400;
  return d >= 1 ? `${d.toFixed(1)} days` : `${(seconds / 3600).toFixed(1)} hours`;
}
