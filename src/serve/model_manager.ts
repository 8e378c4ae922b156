/**
 * The models being served, kept in step with the repository folder.
 *
 * Every poll (and once at start) the manager rescans the repository. Per model it reads `config.pbtxt`
 * when it changed, picks the versions to serve with the version policy among the complete version
 * folders, loads the ones not loaded yet (session, checks, warm-up), and then swaps the model's version
 * table in one assignment: a request resolves against either the old table or the new one, never a mix.
 * Versions that left the table retire: in-flight and queued requests finish on them, then their sessions
 * are released.
 *
 * A version or config that fails to load is refused with a log line and remembered by fingerprint, so
 * it is retried only once its files change; the version policy then chooses among the rest, so a broken
 * new export leaves the previous version serving. A version already loaded whose files break in place
 * stays a candidate and keeps serving from memory (`damagedVersions()`, `gnnctl_model_files_damaged`):
 * the policy, not the damage, decides what serves. Polls never overlap.
 */
import { readFile } from 'node:fs/promises';
import { GnnctlError, suggest } from '../core/errors.js';
import { parseModelConfig } from '../artifacts/triton/pbtxt.js';
import { HttpError, notFound, unavailable, badRequest } from './http_error.js';
import { modelSpecFromConfig, selectVersions, type ServedModelSpec } from './model_spec.js';
import { loadModelVersion, type ModelVersion } from './model_version.js';
import { parseRollout, TrafficSplit, type Rollout } from './rollout.js';
import { scanModelFolders, scanVersionFolders, type ModelFolder, type SkippedEntry, type VersionFolder } from './repository.js';
import type { ServerMetrics } from './server_metrics.js';
import type { SessionHost, SessionOptions } from './session_host.js';

export interface ModelManagerOptions {
  root: string;
  host: SessionHost;
  metrics: ServerMetrics;
  sessionOptions?: SessionOptions;
  /** Milliseconds between repository scans; 0 disables polling (load once). */
  pollIntervalMs?: number;
  /** One line per event: loads and unloads at `info`, refusals and errors at `warn`. */
  log?: (line: string, level: 'info' | 'warn') => void;
}

interface ModelEntry {
  name: string;
  folder: ModelFolder;
  spec: ServedModelSpec;
  /** Replaced as a whole, never mutated: the table requests resolve against. */
  versions: ReadonlyMap<number, ModelVersion>;
  /** What a request without a version gets (the rollout's stable version, else the newest). */
  latest: ModelVersion | undefined;
  /** The rollout in force (`rollout.ts`), if the model folder has one that could be read. */
  rollout?: Rollout;
  /** The canary, when the rollout names one and it loaded, with the split that sends it its share. */
  canary?: { version: ModelVersion; split: TrafficSplit };
}

/** A model or version as `POST /v2/repository/index` lists it. */
export interface IndexEntry {
  name: string;
  version?: string;
  state: 'READY' | 'UNAVAILABLE';
  reason?: string;
}

export class ModelManager {
  private readonly opts: ModelManagerOptions;
  private readonly log: (line: string, level?: 'info' | 'warn') => void;
  private models = new Map<string, ModelEntry>();
  /** `<model>` (config) or `<model>/<version>` → the fingerprint that was refused, and why. */
  private readonly refused = new Map<string, { fingerprint: string; reason: string }>();
  /** `<model>/<version>` of loaded versions whose files no longer load → the file and why. */
  private readonly damaged = new Map<string, string>();
  private readonly skippedLogged = new Set<string>();
  private readonly retiring = new Set<Promise<void>>();
  private timer: NodeJS.Timeout | undefined;
  private polling: Promise<void> | undefined;
  private stopped = false;

  constructor(options: ModelManagerOptions) {
    this.opts = options;
    this.log = (line, level = 'info') => options.log?.(line, level);
  }

  /** Loads the repository once and starts polling. */
  async start(): Promise<void> {
    await this.poll();
    this.scheduleNextPoll();
  }

  /** Names of the models with at least one ready version. */
  readyModels(): string[] {
    return [...this.models.values()].filter((m) => m.latest).map((m) => m.name);
  }

  /** All model names the manager knows (ready or not). */
  modelNames(): string[] {
    return [...this.models.keys()];
  }

  /**
   * The model entry for metadata and readiness; throws 404 for an unknown model or version, 400 for a
   * malformed version.
   */
  lookup(name: string, version?: string): { spec: ServedModelSpec; versions: ModelVersion[]; version?: ModelVersion } {
    const m = this.models.get(name);
    if (!m) throw notFound(`unknown model "${name}"; ${suggest(name, this.modelNames())}`);
    const versions = [...m.versions.values()].sort((a, b) => a.version - b.version);
    if (version === undefined || version === '') return { spec: m.spec, versions, version: m.latest };
    if (!/^[0-9]+$/.test(version)) throw badRequest(`model version must be a positive integer (got "${version}")`);
    const v = m.versions.get(Number(version));
    if (!v) throw notFound(`model "${name}" has no version ${version} loaded (ready versions: ${versions.map((x) => x.version).join(', ') || 'none'})`);
    return { spec: m.spec, versions, version: v };
  }

  /** Throws what `lookup` throws for an unknown model or version, without building anything. */
  check(name: string, version?: string): void {
    const m = this.models.get(name);
    if (!m || (version !== undefined && version !== '' && !(/^[0-9]+$/.test(version) && m.versions.has(Number(version))))) this.lookup(name, version);
  }

  /**
   * The version a request runs on, with a reference taken (give it back with `release()`): the given
   * version, or the latest loaded one.
   */
  acquire(name: string, version?: string): ModelVersion {
    for (;;) {
      let v: ModelVersion | undefined;
      const m = this.models.get(name);
      // Without a version, a canary takes its share of requests.
      if ((version === undefined || version === '') && m?.canary?.split.next()) v = m.canary.version;
      else v = this.lookup(name, version).version;
      if (!v) throw unavailable(`model "${name}" has no version ready`);
      if (v.acquire()) return v;
      // Retiring: the table has already been swapped, so looking again finds its successor (or 404).
      if (this.models.get(name)?.versions.get(v.version) === v) throw unavailable(`model "${name}" version ${v.version} is shutting down`);
    }
  }

  /** Requests waiting in each loaded version's batcher (Triton's pending request count). */
  pending(): { model: string; version: number; count: number }[] {
    return [...this.models.values()].flatMap((m) => [...m.versions.values()].map((v) => ({ model: m.name, version: v.version, count: v.queued })));
  }

  /** The repository index: every model and loaded version, and refused ones with the reason. */
  index(): IndexEntry[] {
    const out: IndexEntry[] = [];
    for (const m of this.models.values()) {
      for (const v of m.versions.values()) {
        const damage = this.damaged.get(`${m.name}/${v.version}`);
        out.push({ name: m.name, version: String(v.version), state: 'READY', ...(damage ? { reason: `serving from memory; files damaged: ${damage}` } : {}) });
      }
      if (m.versions.size === 0) out.push({ name: m.name, state: 'UNAVAILABLE', reason: 'no version loaded' });
    }
    for (const [key, r] of this.refused) {
      if (key.endsWith('#rollout') || this.damaged.has(key)) continue;
      const [name, version] = key.split('/');
      out.push({ name: name!, ...(version ? { version } : {}), state: 'UNAVAILABLE', reason: r.reason });
    }
    return out.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : Number(a.version ?? 0) - Number(b.version ?? 0)));
  }

  /**
   * Loaded versions whose files no longer load (they keep serving from memory): `{model, version, file}`
   * where `file` names the model file and the load error.
   */
  damagedVersions(): { model: string; version: number; file: string }[] {
    return [...this.damaged].map(([key, file]) => {
      const slash = key.lastIndexOf('/');
      return { model: key.slice(0, slash), version: Number(key.slice(slash + 1)), file };
    });
  }

  /** Rescans the repository now (also what the timer calls). Concurrent calls share one scan. */
  poll(): Promise<void> {
    this.polling ??= this.scan().finally(() => (this.polling = undefined));
    return this.polling;
  }

  /** Shutdown: every batcher runs what it holds at once instead of waiting for its queue delay. */
  flushQueues(): void {
    for (const m of this.models.values()) for (const v of m.versions.values()) v.flush();
  }

  /** Stops polling, retires every version (in-flight requests finish) and waits for that. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    await this.polling;
    const all = [...this.models.values()].flatMap((m) => [...m.versions.values()]);
    this.models = new Map();
    await Promise.all([...all.map((v) => v.retire()), ...this.retiring]);
    for (const v of all) {
      this.opts.metrics.trafficWeight.remove({ model: v.name, version: String(v.version) });
      this.opts.metrics.modelInfo.remove(infoLabels(v, this.opts.host.kind));
      this.opts.metrics.removeEmbeddingAnchors(v.name, String(v.version));
      this.setDamaged(v.name, v.version, undefined);
    }
  }

  private scheduleNextPoll(): void {
    const every = this.opts.pollIntervalMs ?? 0;
    if (this.stopped || every <= 0) return;
    this.timer = setTimeout(() => {
      this.poll().finally(() => this.scheduleNextPoll());
    }, every);
    this.timer.unref();
  }

  private async scan(): Promise<void> {
    const skipped: SkippedEntry[] = [];
    let folders: ModelFolder[];
    try {
      folders = await scanModelFolders(this.opts.root, skipped);
    } catch (e) {
      // A transient read error must not unload everything: keep serving what is loaded.
      this.log(`cannot read the model repository ${this.opts.root}: ${(e as Error).message}`, 'warn');
      return;
    }
    const seen = new Set<string>();
    for (const folder of folders) {
      if (this.stopped) return;
      seen.add(folder.name);
      try {
        await this.syncModel(folder, skipped);
      } catch (e) {
        this.log(`model "${folder.name}": ${(e as Error).message}`, 'warn');
      }
    }
    for (const s of skipped) {
      const key = `${s.path}: ${s.reason}`;
      if (!this.skippedLogged.has(key)) {
        this.skippedLogged.add(key);
        this.log(`skipping ${key}`);
      }
    }
    for (const [name, entry] of this.models) {
      if (seen.has(name)) continue;
      this.log(`model "${name}" is gone from the repository; unloading it`);
      this.models.delete(name);
      for (const v of entry.versions.values()) {
        this.setDamaged(name, v.version, undefined);
        this.retireVersion(v);
      }
    }
    for (const key of [...this.refused.keys()]) if (!seen.has(key.split(/[/#]/)[0]!)) this.refused.delete(key);
  }

  private async syncModel(folder: ModelFolder, skipped: SkippedEntry[]): Promise<void> {
    const { name } = folder;
    const current = this.models.get(name);
    const configChanged = !current || current.folder.configFingerprint !== folder.configFingerprint;
    const spec = configChanged ? await this.readSpec(folder, current) : current.spec;
    if (!spec) return;
    const rolloutChanged = !current || current.folder.rolloutFingerprint !== folder.rolloutFingerprint;
    const rollout = rolloutChanged ? await this.readRollout(folder, current) : current.rollout;
    const folders = await scanVersionFolders(folder.dir, spec.modelFilename, skipped);
    const next = await this.loadWanted({ folder, spec, rollout, current, configChanged, folders });
    if (configChanged && current && current.versions.size > 0 && next.size === 0) {
      // Nothing loads under the new config: refuse the config as a whole, keep serving the old one.
      const reason = 'no version of the model loads with this config (see the refusals above)';
      this.refused.set(name, { fingerprint: folder.configFingerprint, reason });
      this.log(`model "${name}": refusing the new config.pbtxt: ${reason}; the loaded versions keep serving with the previous config`, 'warn');
      return;
    }
    if (rollout && current && current.versions.size > 0 && !next.has(rollout.stable)) {
      // Never leave a canary (or nothing) serving all traffic because the stable version is missing.
      this.log(`model "${name}": the rollout's stable version ${rollout.stable} is not available; the current versions keep serving`, 'warn');
      this.retireUnused(next, current);
      return;
    }
    if (this.stopped) {
      // Shut down while loading: what was just loaded never serves.
      this.retireUnused(next, current);
      return;
    }
    const unchanged =
      current !== undefined && !configChanged && !rolloutChanged && current.versions.size === next.size && [...next].every(([v, mv]) => current.versions.get(v) === mv);
    if (!unchanged) this.swap({ folder, spec, rollout, current, configChanged, rolloutChanged, next });
  }

  /** The model's spec from its (changed) config.pbtxt, or undefined when it is refused. */
  private async readSpec(folder: ModelFolder, current: ModelEntry | undefined): Promise<ServedModelSpec | undefined> {
    const { name } = folder;
    if (this.refused.get(name)?.fingerprint === folder.configFingerprint) return undefined;
    try {
      const text = await readFile(folder.configPath, 'utf8');
      const spec = modelSpecFromConfig(parseModelConfig(text, { file: folder.configPath }), name, folder.configPath);
      this.refused.delete(name);
      return spec;
    } catch (e) {
      const reason = describe(e);
      this.refused.set(name, { fingerprint: folder.configFingerprint, reason });
      this.opts.metrics.modelLoads.inc({ model: name, outcome: 'refused' });
      this.log(`model "${name}": refusing config.pbtxt (${current ? 'the loaded versions keep serving with the previous config' : 'the model is not loaded'}):\n${indent(reason)}`, 'warn');
      return undefined;
    }
  }

  /** The rollout of a model whose `rollout.json` changed; a refused file keeps the one in force. */
  private async readRollout(folder: ModelFolder, current: ModelEntry | undefined): Promise<Rollout | undefined> {
    const { name } = folder;
    const key = `${name}#rollout`;
    if (folder.rolloutFingerprint === '') {
      this.refused.delete(key);
      return undefined;
    }
    if (this.refused.get(key)?.fingerprint === folder.rolloutFingerprint) return current?.rollout;
    try {
      const rollout = parseRollout(await readFile(folder.rolloutPath, 'utf8'), folder.rolloutPath);
      this.refused.delete(key);
      return rollout;
    } catch (e) {
      const reason = describe(e);
      this.refused.set(key, { fingerprint: folder.rolloutFingerprint, reason });
      this.log(`model "${name}": refusing ${folder.rolloutPath}, ${current ? 'the current versions keep serving' : 'serving by the version policy'}:\n${indent(reason)}`, 'warn');
      return current?.rollout;
    }
  }

  /**
   * Chooses the versions to serve (the rollout, else the version policy), loads the ones not loaded
   * yet, and chooses again without the ones that failed, until every chosen version is loaded.
   *
   * A loaded version stays a candidate even when its files no longer load (damaged in place: a killed
   * copy, a full disk): it keeps serving from memory and is reported, so the version policy, not the
   * damage, decides what serves, and an older version never silently takes over.
   */
  private async loadWanted(args: { folder: ModelFolder; spec: ServedModelSpec; rollout: Rollout | undefined; current: ModelEntry | undefined; configChanged: boolean; folders: VersionFolder[] }): Promise<Map<number, ModelVersion>> {
    const { folder, spec, rollout, current, configChanged, folders } = args;
    const { name } = folder;
    const byVersion = new Map(folders.map((f) => [f.version, f]));
    const next = new Map<number, ModelVersion>();
    const refusedKey = (f: VersionFolder) => `${f.fingerprint}#${folder.configFingerprint}`;
    const keptFromMemory = (f: VersionFolder) => !configChanged && current?.versions.has(f.version) === true;
    for (;;) {
      const candidates = folders.filter((f) => keptFromMemory(f) || this.refused.get(`${name}/${f.version}`)?.fingerprint !== refusedKey(f)).map((f) => f.version);
      // A rollout pins the versions served: its stable one and its canary, whatever the policy says.
      const wanted = rollout ? [rollout.stable, ...(rollout.canary !== undefined ? [rollout.canary] : [])].filter((v) => candidates.includes(v)) : selectVersions(spec.versionPolicy, candidates);
      let failed = false;
      for (const v of wanted) {
        if (next.has(v)) continue;
        const f = byVersion.get(v)!;
        const existing = configChanged ? undefined : current?.versions.get(v);
        if (existing && (existing.folder.fingerprint === f.fingerprint || this.refused.get(`${name}/${v}`)?.fingerprint === refusedKey(f))) {
          next.set(v, existing);
          continue;
        }
        try {
          const mv = await loadModelVersion(this.opts.host, spec, f, {
            sessionOptions: this.opts.sessionOptions,
            observer: this.opts.metrics.batcherObserver(name, v),
            observeDuration: this.opts.metrics.requestDuration.child({ model: name, version: String(v) }),
          });
          next.set(v, mv);
          this.refused.delete(`${name}/${v}`);
          this.setDamaged(name, v, undefined);
          this.opts.metrics.modelLoads.inc({ model: name, outcome: 'loaded' });
          this.log(`loaded model "${name}" version ${v} in ${mv.loadMs.toFixed(0)} ms (${f.dir})`);
        } catch (e) {
          const reason = describe(e);
          this.refused.set(`${name}/${v}`, { fingerprint: refusedKey(f), reason });
          this.opts.metrics.modelLoads.inc({ model: name, outcome: 'refused' });
          if (existing) {
            // Never under a new config (`existing` is unset then), which would serve one version under two.
            next.set(v, existing);
            this.setDamaged(name, v, reason.includes(f.modelPath) ? reason : `${f.modelPath}: ${reason}`);
            this.log(`model "${name}" version ${v}: files damaged, the loaded version keeps serving from memory until its files load again:\n${indent(reason)}`, 'warn');
          } else {
            this.log(`model "${name}" version ${v}: refused, ${current?.latest ? 'the loaded versions keep serving' : 'nothing to serve yet'}:\n${indent(reason)}`, 'warn');
          }
          failed = true;
        }
      }
      if (!failed) return next;
    }
  }

  /** Installs the model's new version table (one assignment) and retires the versions that left it. */
  private swap(args: { folder: ModelFolder; spec: ServedModelSpec; rollout: Rollout | undefined; current: ModelEntry | undefined; configChanged: boolean; rolloutChanged: boolean; next: Map<number, ModelVersion> }): void {
    const { folder, spec, rollout, current, next } = args;
    const { name } = folder;
    let latest: ModelVersion | undefined;
    for (const mv of next.values()) if (!latest || mv.version > latest.version) latest = mv;
    let canary: ModelEntry['canary'];
    if (rollout) {
      latest = next.get(rollout.stable) ?? latest;
      const c = rollout.canary === undefined ? undefined : next.get(rollout.canary);
      if (c) canary = { version: c, split: new TrafficSplit(rollout.canary_weight ?? 0) };
      else if (rollout.canary !== undefined) this.log(`model "${name}": the rollout's canary version ${rollout.canary} is not available; version ${latest?.version} takes all traffic`, 'warn');
    }
    if ((args.rolloutChanged || args.configChanged) && current) {
      const desc = rollout ? `rollout: version ${latest?.version} stable${canary ? `, version ${canary.version.version} canary at ${+(canary.split.weight * 100).toFixed(2)}%` : ' (pinned)'}` : 'versions chosen by the version policy';
      this.log(`model "${name}": ${desc}`);
    }
    this.models.set(name, { name, folder, spec, versions: next, latest, rollout, canary });
    this.setTrafficWeights(name, next, latest, canary, current);
    for (const mv of next.values()) {
      this.opts.metrics.modelInfo.set(infoLabels(mv, this.opts.host.kind), 1);
      this.opts.metrics.setEmbeddingAnchors(name, String(mv.version), mv.embeddingAnchors);
    }
    for (const old of current?.versions.values() ?? []) {
      if (next.get(old.version) === old) continue;
      this.log(`model "${name}" version ${old.version}: ${next.has(old.version) ? 'replaced' : 'unloading'} (${old.inFlight} requests in flight finish first)`);
      if (!next.has(old.version)) this.setDamaged(name, old.version, undefined);
      this.retireVersion(old);
    }
  }

  /** Retires what `loadWanted` loaded that will not serve. */
  private retireUnused(next: ReadonlyMap<number, ModelVersion>, current: ModelEntry | undefined): void {
    for (const mv of next.values()) if (current?.versions.get(mv.version) !== mv) this.retireVersion(mv);
  }

  /** Records (or clears, with `what` undefined) that a loaded version's files no longer load. */
  private setDamaged(name: string, version: number, what: string | undefined): void {
    const key = `${name}/${version}`;
    if (what === undefined) {
      if (this.damaged.delete(key)) this.opts.metrics.filesDamaged.remove({ model: name, version: String(version) });
      return;
    }
    this.damaged.set(key, what);
    this.opts.metrics.filesDamaged.set({ model: name, version: String(version) }, 1);
  }

  /** `gnnctl_model_traffic_weight`: the share of unversioned requests each loaded version gets. */
  private setTrafficWeights(name: string, next: ReadonlyMap<number, ModelVersion>, latest: ModelVersion | undefined, canary: ModelEntry['canary'], previous: ModelEntry | undefined): void {
    const g = this.opts.metrics.trafficWeight;
    for (const v of previous?.versions.keys() ?? []) if (!next.has(v)) g.remove({ model: name, version: String(v) });
    const w = canary?.split.weight ?? 0;
    for (const mv of next.values()) {
      g.set({ model: name, version: String(mv.version) }, mv === canary?.version ? w : mv === latest ? 1 - w : 0);
    }
  }

  private retireVersion(v: ModelVersion): void {
    const p = v
      .retire()
      .then(() => {
        const successor = this.models.get(v.name)?.versions.get(v.version);
        if (!successor || successor === v) {
          this.opts.metrics.modelInfo.remove(infoLabels(v, this.opts.host.kind));
          this.opts.metrics.removeEmbeddingAnchors(v.name, String(v.version));
        }
      })
      .catch((e) => this.log(`model "${v.name}" version ${v.version}: releasing the session failed: ${(e as Error).message}`, 'warn'))
      .finally(() => this.retiring.delete(p));
    this.retiring.add(p);
  }
}

function infoLabels(v: ModelVersion, thread: string): Record<string, string> {
  return { model: v.name, version: String(v.version), platform: v.spec.platform, thread };
}

function describe(e: unknown): string {
  if (e instanceof GnnctlError) return e.describe();
  if (e instanceof HttpError) return e.message;
  return e instanceof Error ? e.message : String(e);
}

function indent(text: string): string {
  return text
    .split('\n')
    .map((l) => `    ${l}`)
    .join('\n');
}
