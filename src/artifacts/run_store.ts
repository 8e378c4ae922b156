/**
 * Run folders: `artifacts/runs/<run-id>/` with `manifest.json`, `metrics.json` and `model/`. A run is
 * written while it trains (status `running`), its best checkpoint replaced atomically on every
 * improvement, so Ctrl-C or a crash leaves a usable model; the manifest's `status` says how it ended.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { isAbsolute, join, resolve } from 'node:path';
import { ArtifactError, suggest } from '../core/errors.js';
import { writeFileAtomic, writeJsonAtomic } from '../core/atomic.js';

/** One weight in a run's `weights.bin`: its name, shape and float offset. */
export interface WeightIndexEntry {
  name: string;
  shape: number[];
  offset: number;
}

export type RunStatus = 'running' | 'complete' | 'interrupted' | 'failed';

export interface RunManifestBase {
  kind: 'train' | 'distill';
  id: string;
  task: string;
  status: RunStatus;
  gnnctl: string;
  created_at: string;
  finished_at?: string;
  /** the graph the run was trained on; later stages rebuild it at its fit_until (absent in older runs) */
  graph: { dir: string; fingerprint: string; schema_fingerprint: string; fit_until?: number | null };
  backend: string;
  seed: number;
  /** the resolved config (what `tasks`, `model` and `data` said when the run started) */
  config: unknown;
  timings: Record<string, number>;
  /** headline metrics (the full set is in metrics.json) */
  metrics?: unknown;
  [key: string]: unknown;
}

export function runsDir(artifactsDir: string): string {
  return join(artifactsDir, 'runs');
}

export function newRunId(task: string): string {
  const d = new Date();
  const p = (n: number, w = 2): string => String(n).padStart(w, '0');
  const stamp = `${d.getUTCFullYear()}${p(d.getUTCMonth() + 1)}${p(d.getUTCDate())}-${p(d.getUTCHours())}${p(d.getUTCMinutes())}${p(d.getUTCSeconds())}`;
  return `${task}-${stamp}-${randomBytes(2).toString('hex')}`;
}

export function createRunDir(artifactsDir: string, id: string): string {
  const dir = join(runsDir(artifactsDir), id);
  mkdirSync(join(dir, 'model'), { recursive: true });
  return dir;
}

export function writeManifest(dir: string, manifest: RunManifestBase): void {
  writeJsonAtomic(join(dir, 'manifest.json'), manifest);
}

export function readManifest<T extends RunManifestBase = RunManifestBase>(dir: string): T {
  const p = join(dir, 'manifest.json');
  if (!existsSync(p)) throw new ArtifactError(`not a run folder: ${dir} (no manifest.json)`, { hint: 'pass a run id from `gnnctl runs list` or a run folder' });
  const manifest = JSON.parse(readFileSync(p, 'utf8')) as T;
  // gnnctl 0.1 wrote camelCase keys (createdAt, runKey, …); its runs cannot be read by field name.
  const raw = manifest as Record<string, unknown>;
  if (!('created_at' in raw) && 'createdAt' in raw) {
    throw new ArtifactError(`run ${dir} was written by gnnctl ${String(raw.gnnctl)} (camelCase manifest keys), which this version cannot read`, { hint: 'retrain it with this version (artifact keys are snake_case since 0.2.0)' });
  }
  return manifest;
}

/** Saves weights atomically: `weights.bin` (float32) and its index `weights.json`. */
export function saveWeights(dir: string, index: WeightIndexEntry[], blob: Float32Array): void {
  writeFileAtomic(join(dir, 'model', 'weights.bin'), new Uint8Array(blob.buffer, blob.byteOffset, blob.byteLength));
  writeJsonAtomic(join(dir, 'model', 'weights.json'), index);
}

export function loadWeights(dir: string): { index: WeightIndexEntry[]; blob: Float32Array } {
  const wj = join(dir, 'model', 'weights.json');
  const wb = join(dir, 'model', 'weights.bin');
  if (!existsSync(wj) || !existsSync(wb)) {
    throw new ArtifactError(`run ${dir} has no saved weights yet`, { hint: 'the run was stopped before its first checkpoint; train again' });
  }
  const buf = readFileSync(wb);
  const blob = new Float32Array(buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.byteLength));
  return { index: JSON.parse(readFileSync(wj, 'utf8')) as WeightIndexEntry[], blob };
}

/** A run's saved weights by parameter name (views into one blob). */
export function loadWeightMap(dir: string): Map<string, Float32Array> {
  return weightMap(loadWeights(dir));
}

/** Saved weights (index + blob) by parameter name, each a view into the blob. */
export function weightMap(w: { index: WeightIndexEntry[]; blob: Float32Array }): Map<string, Float32Array> {
  return new Map(w.index.map((e) => [e.name, w.blob.subarray(e.offset, e.offset + e.shape.reduce((a, b) => a * b, 1))]));
}

export function writeModelJson(dir: string, name: string, value: unknown): void {
  writeJsonAtomic(join(dir, 'model', name), value);
}

export function readModelJson<T>(dir: string, name: string): T {
  const p = join(dir, 'model', name);
  if (!existsSync(p)) throw new ArtifactError(`run ${dir} lacks model/${name}`, { hint: 'the run folder is incomplete; train again' });
  return JSON.parse(readFileSync(p, 'utf8')) as T;
}

export interface RunListing {
  id: string;
  dir: string;
  manifest: RunManifestBase;
}

export function listRuns(artifactsDir: string): RunListing[] {
  const root = runsDir(artifactsDir);
  if (!existsSync(root)) return [];
  const out: RunListing[] = [];
  for (const id of readdirSync(root)) {
    const dir = join(root, id);
    if (id.startsWith('.') || !statSync(dir).isDirectory() || !existsSync(join(dir, 'manifest.json'))) continue;
    out.push({ id, dir, manifest: readManifest(dir) });
  }
  return out.sort((a, b) => a.manifest.created_at.localeCompare(b.manifest.created_at) || a.id.localeCompare(b.id));
}

/**
 * Resolves a run reference: a run id, a path to a run folder, or `latest` / `latest:<task>` (the newest
 * usable run, optionally of a task and kind).
 */
export function resolveRun(artifactsDir: string, ref: string, opts: { kind?: 'train' | 'distill'; cwd?: string } = {}): RunListing {
  const m = /^latest(?::(.+))?$/.exec(ref);
  if (m) {
    const task = m[1];
    const runs = listRuns(artifactsDir).filter(
      (r) => (r.manifest.status === 'complete' || r.manifest.status === 'interrupted') && (!task || r.manifest.task === task) && (!opts.kind || r.manifest.kind === opts.kind),
    );
    const last = runs[runs.length - 1];
    if (!last) throw new ArtifactError(`no usable ${opts.kind ?? ''} run${task ? ` of task "${task}"` : ''} in ${runsDir(artifactsDir)}`.replace('  ', ' '), { hint: 'train one first (`gnnctl train`)' });
    return last;
  }
  const asPath = isAbsolute(ref) ? ref : resolve(opts.cwd ?? process.cwd(), ref);
  if (existsSync(join(asPath, 'manifest.json'))) return { id: readManifest(asPath).id, dir: asPath, manifest: readManifest(asPath) };
  const dir = join(runsDir(artifactsDir), ref);
  if (existsSync(join(dir, 'manifest.json'))) return { id: ref, dir, manifest: readManifest(dir) };
  const ids = listRuns(artifactsDir).map((r) => r.id);
  throw new ArtifactError(`run "${ref}" not found in ${runsDir(artifactsDir)}`, { hint: ids.length ? suggest(ref, ids) : 'no runs yet: train one first (`gnnctl train`)' });
}
