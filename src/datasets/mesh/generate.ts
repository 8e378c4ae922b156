/**
 * `gnnctl datasets synth-mesh`: a synthetic Kubernetes service mesh with labelled incidents, so the
 * anomaly detector's figures can be reproduced from a seed.
 *
 * Each snapshot (every `step` seconds) the simulator pushes diurnal external load through the call graph
 * (tier order), derives utilisation, latency and errors (reverse tier order: a caller's latency includes
 * its callees'), runs a horizontal-pod-autoscaler, and writes
 *
 * - `metrics.csv`  (ts, service, request_rate, error_rate, p50_latency_ms, p99_latency_ms, cpu, memory_mb, active_connections, pods)
 * - `calls.csv`    (ts, source, destination, requests_per_second, latency_ms, error_rate)
 * - `events.csv`   (ts, service, kind): planned changes — pod_added / pod_terminating (autoscaling),
 *                  deploy, service_added / service_terminating (planned scale-out and scale-in)
 * - `incidents.csv` (incident_id, kind, start, end, root_service, services): the labels
 * - `config.yaml`  an `anomaly:` config over these files, and `manifest.json`.
 *
 * Incidents start only after `normal_hours` (the period a user fits on) and never overlap each other:
 * - retry_storm: the root fails a share of requests; its callers retry, multiplying the calls into it
 *   and its load, cpu and latency;
 * - latency_injection: the root's own handling time grows (a fault-injection rule); callers inherit it;
 * - partial_partition: half of the root's callers cannot reach it: their calls to it fail fast, their
 *   error rate and latency rise, the root's traffic drops;
 * - dependency_drift: a service starts sending a large share of its calls to a service it never called
 *   (a misrouted config); per-service metrics barely move, the call graph does.
 */
import { mkdirSync, renameSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { assertUnreachable, DataError } from '../../core/errors.js';
import { writeFileAtomic, writeJsonAtomic, tempSibling } from '../../core/atomic.js';
import { isoSeconds } from '../../core/duration.js';
import { info } from '../../core/log.js';
import { Rng } from '../../core/rng.js';
import { CsvSink } from '../csv.js';
import { buildTopology, tierOrder, type Service } from './topology.js';

export const INCIDENT_KINDS = ['retry_storm', 'latency_injection', 'partial_partition', 'dependency_drift'] as const;
export type IncidentKind = (typeof INCIDENT_KINDS)[number];
export const EVENT_KINDS = ['pod_added', 'pod_terminating', 'deploy', 'service_added', 'service_terminating'] as const;

export interface MeshOptions {
  out: string;
  services?: number;
  hours?: number;
  /** seconds between snapshots (default 300) */
  step?: number;
  seed?: number;
  /** hours at the start without incidents (default: a third of the span, at least 12 when it fits) */
  normalHours?: number;
  /** first snapshot, ISO (default 2026-01-05T00:00:00Z, a Monday) */
  start?: string;
}

export interface MeshIncident {
  incident_id: number;
  kind: IncidentKind;
  start: string;
  end: string;
  root_service: string;
  services: string[];
}

export interface MeshResult {
  out: string;
  seed: number;
  services: number;
  hours: number;
  step_seconds: number;
  snapshots: number;
  first_ts: string;
  last_ts: string;
  normal_until: string;
  files: Record<'metrics' | 'calls' | 'events' | 'incidents' | 'config', string>;
  rows: Record<'metrics' | 'calls' | 'events', number>;
  incidents: Record<IncidentKind, number>;
  planned_scale_outs: number;
  seconds: number;
}

interface Incident {
  kind: IncidentKind;
  start: number;
  end: number;
  root: number;
  services: Set<number>;
  severity: number;
  /** dependency_drift: the caller and its new destination */
  caller?: number;
  target?: number;
  savedOut?: Map<number, number>;
  /** partial_partition: callers cut off from the root */
  cut?: Set<number>;
}

interface ScaleOut {
  /** the original service whose callers shift traffic to the clone */
  original: number;
  clone: number;
  start: number;
  /** step of the planned scale-in (the clone terminates), or -1 */
  end: number;
  saved: Map<number, Map<number, number>>;
}

export function generateMesh(opts: MeshOptions): MeshResult {
  const t0 = performance.now();
  const n = opts.services ?? 200;
  const hours = opts.hours ?? 72;
  const step = opts.step ?? 300;
  const seed = opts.seed ?? 0;
  const startSec = Date.parse(opts.start ?? '2026-01-05T00:00:00Z') / 1000;
  const steps = Math.floor((hours * 3600) / step);
  const normalHours = opts.normalHours ?? Math.max(Math.min(12, hours / 2), hours / 3);
  const normalSteps = Math.floor((normalHours * 3600) / step);
  const out = resolve(opts.out);
  try {
    mkdirSync(out, { recursive: true });
  } catch (e) {
    throw new DataError('cannot create the output folder', { where: out, value: (e as Error).message, hint: 'pass a writable --out folder' });
  }

  const root = new Rng(seed);
  const services = buildTopology(root.fork(1), n);
  const rngNoise = root.fork(2);
  const rngPlan = root.fork(3);
  const rngInc = root.fork(4);
  const baseCount = services.length;

  // Planned scale-outs: a clone of a mid/backend service takes half of its callers' traffic; some are
  // scaled in again two hours later. Clones exist from the start (not alive) so indices stay fixed.
  const scaleOuts: ScaleOut[] = [];
  const nScale = Math.max(2, Math.round(hours / 18));
  for (let k = 0; k < nScale; k++) {
    const candidates = services.slice(0, baseCount).map((s, i) => [s, i] as const).filter(([s]) => s.tier === 2 || s.tier === 3);
    const [orig, oi] = candidates[rngPlan.int(candidates.length)]!;
    const clone: Service = { ...orig, name: `${orig.name}-v${k + 2}`, out: new Map(orig.out), alive: false, pods: 2 };
    services.push(clone);
    const start = Math.floor(((k + 0.5) / nScale) * steps);
    scaleOuts.push({ original: oi, clone: services.length - 1, start, end: rngPlan.next() < 0.5 ? Math.min(steps - 1, start + Math.round(7200 / step)) : -1, saved: new Map() });
  }
  const deploysPerStep = (n / 100) * (step / 3600) * 0.5;

  // Incidents after the normal period, separated by quiet gaps, kinds in a shuffled round robin.
  const incidents: Incident[] = [];
  const gap = Math.max(2, Math.round(3600 / step));
  let cursor = normalSteps + gap;
  let kinds = [...INCIDENT_KINDS];
  while (cursor < steps - 2) {
    if (incidents.length % INCIDENT_KINDS.length === 0) kinds = rngInc.shuffle([...INCIDENT_KINDS]);
    const kind = kinds[incidents.length % INCIDENT_KINDS.length]!;
    const duration = Math.max(2, Math.round((1200 + rngInc.next() * 1800) / step));
    const end = Math.min(steps, cursor + duration);
    const tooCloseToPlan = scaleOuts.some((p) => Math.abs(p.start - cursor) < gap || (p.end >= 0 && Math.abs(p.end - cursor) < gap));
    if (!tooCloseToPlan) {
      const inc = planIncident(rngInc, services, baseCount, kind, cursor, end);
      if (inc) incidents.push(inc);
    }
    cursor = end + gap + rngInc.int(gap * 2);
  }

  const files = {
    metrics: join(out, 'metrics.csv'),
    calls: join(out, 'calls.csv'),
    events: join(out, 'events.csv'),
    incidents: join(out, 'incidents.csv'),
    config: join(out, 'config.yaml'),
  };
  const temps = { metrics: tempSibling(files.metrics), calls: tempSibling(files.calls), events: tempSibling(files.events) };
  const sinks = { metrics: new CsvSink(temps.metrics), calls: new CsvSink(temps.calls), events: new CsvSink(temps.events) };
  const rows = { metrics: 0, calls: 0, events: 0 };
  try {
    sinks.metrics.write('ts,service,request_rate,error_rate,p50_latency_ms,p99_latency_ms,cpu,memory_mb,active_connections,pods\n');
    sinks.calls.write('ts,source,destination,requests_per_second,latency_ms,error_rate\n');
    sinks.events.write('ts,service,kind\n');
    info(`synth-mesh: ${n} services, ${steps} snapshots of ${step} s, ${incidents.length} incidents`);
    const order = tierOrder(services);
    const rps = new Float64Array(services.length);
    const p50 = new Float64Array(services.length);
    const err = new Float64Array(services.length);
    const deployLeft = new Int32Array(services.length);
    for (let t = 0; t < steps; t++) {
      const ts = isoSeconds(startSec + t * step).replace('T', ' ').replace('Z', '');
      const event = (s: number, kind: string): void => {
        sinks.events.write(`${ts},${services[s]!.name},${kind}\n`);
        rows.events++;
      };
      // Planned changes first: they are what the events table announces.
      for (const p of scaleOuts) {
        if (t === p.start) {
          services[p.clone]!.alive = true;
          for (const [ci, c] of services.entries()) {
            const share = c.out.get(p.original);
            if (!c.alive || share === undefined || ci === p.clone) continue;
            p.saved.set(ci, new Map(c.out));
            c.out.set(p.original, share / 2);
            c.out.set(p.clone, share / 2);
          }
          event(p.clone, 'service_added');
        }
        if (t === p.end) {
          services[p.clone]!.alive = false;
          for (const [ci, saved] of p.saved) services[ci]!.out = saved;
          event(p.clone, 'service_terminating');
        }
      }
      for (let d = rngPlan.next() < deploysPerStep ? 1 : 0; d > 0; d--) {
        const s = rngPlan.int(baseCount);
        deployLeft[s] = 2;
        event(s, 'deploy');
      }
      const active = incidents.filter((inc) => t >= inc.start && t < inc.end);
      for (const inc of incidents) {
        if (inc.kind === 'dependency_drift' && t === inc.start) {
          const c = services[inc.caller!]!;
          inc.savedOut = new Map(c.out);
          const scaled = new Map([...c.out].map(([k, v]) => [k, v * (1 - inc.severity)]));
          scaled.set(inc.target!, (scaled.get(inc.target!) ?? 0) + inc.severity);
          c.out = scaled;
        }
        if (inc.kind === 'dependency_drift' && t === inc.end && inc.savedOut) services[inc.caller!]!.out = inc.savedOut;
      }

      // Load, in tier order.
      const diurnal = 1 + 0.55 * Math.sin((2 * Math.PI * ((startSec + t * step) / 3600 - 9)) / 24);
      rps.fill(0);
      const edgeRps = new Map<string, number>();
      for (const i of order) {
        const s = services[i]!;
        if (!s.alive) continue;
        if (s.external > 0) rps[i]! += s.external * diurnal * (1 + 0.04 * rngNoise.normal());
        for (const inc of active) if (inc.kind === 'retry_storm' && inc.root === i) rps[i]! *= 1 + 0.5 * inc.severity;
        for (const [d, share] of s.out) {
          if (!services[d]!.alive) continue;
          let r = rps[i]! * s.fanout * share * (1 + 0.03 * rngNoise.normal());
          for (const inc of active) {
            if (inc.kind === 'retry_storm' && inc.root === d) r *= 1 + 2.5 * inc.severity;
            if (inc.kind === 'partial_partition' && inc.root === d && inc.cut!.has(i)) r *= 0.15;
          }
          r = Math.max(0, r);
          edgeRps.set(`${i}>${d}`, r);
          rps[d]! += r;
        }
      }
      // Autoscaling: one pod at a time toward 60% utilisation, with hysteresis.
      for (let i = 0; i < services.length; i++) {
        const s = services[i]!;
        if (!s.alive) continue;
        const desired = Math.max(1, Math.ceil(rps[i]! / (s.podCapacity * 0.6)));
        // The first snapshot (and a new clone) starts at its steady state: no churn from a cold start.
        if (t === 0 || (services.length > baseCount && scaleOuts.some((p) => p.clone === i && p.start === t))) s.pods = desired;
        else if (desired > s.pods + 0.5) {
          s.pods++;
          event(i, 'pod_added');
        } else if (desired < s.pods - 1) {
          s.pods--;
          event(i, 'pod_terminating');
        }
      }
      // Latency and errors, in reverse tier order (callees first).
      for (let k = order.length - 1; k >= 0; k--) {
        const i = order[k]!;
        const s = services[i]!;
        if (!s.alive) continue;
        const util = Math.min(1.5, rps[i]! / (s.pods * s.podCapacity));
        let own = s.baseLatency * (1 + 0.6 * util * util) * (1 + 0.05 * rngNoise.normal());
        let e = s.baseError * (1 + 0.3 * Math.abs(rngNoise.normal()));
        if (deployLeft[i]! > 0) {
          own *= 1.3;
          e += 0.01;
        }
        for (const inc of active) {
          if (inc.root !== i) continue;
          if (inc.kind === 'latency_injection') own += 40 + 160 * inc.severity;
          if (inc.kind === 'retry_storm') {
            e += 0.1 + 0.3 * inc.severity;
            own *= 1.5;
          }
        }
        let down = 0;
        for (const [d, share] of s.out) {
          if (!services[d]!.alive) continue;
          let edgeLat = p50[d]! + 0.5;
          let edgeErr = err[d]!;
          for (const inc of active) {
            if (inc.kind === 'partial_partition' && inc.root === d && inc.cut!.has(i)) {
              edgeErr = 0.9;
              edgeLat = 250 * inc.severity + 20;
            }
          }
          down += share * edgeLat;
          e += share * edgeErr * 0.5;
          const r = edgeRps.get(`${i}>${d}`)!;
          sinks.calls.write(`${ts},${s.name},${services[d]!.name},${r.toFixed(3)},${edgeLat.toFixed(3)},${Math.min(1, edgeErr).toFixed(5)}\n`);
          rows.calls++;
        }
        p50[i] = own + 0.8 * down;
        err[i] = Math.min(1, e);
        const p99 = p50[i]! * (2.4 + 0.25 * Math.abs(rngNoise.normal()) + 0.6 * util);
        const cpu = Math.min(100, 100 * util * (1 + 0.05 * rngNoise.normal()));
        const mem = s.baseMemory + 40 * s.pods + 0.2 * rps[i]! + 10 * rngNoise.normal();
        const conns = (rps[i]! * p50[i]!) / 1000 + s.pods * 2;
        sinks.metrics.write(
          `${ts},${s.name},${rps[i]!.toFixed(3)},${err[i]!.toFixed(5)},${p50[i]!.toFixed(3)},${p99.toFixed(3)},${cpu.toFixed(2)},${mem.toFixed(1)},${conns.toFixed(2)},${s.pods}\n`,
        );
        rows.metrics++;
        if (deployLeft[i]! > 0) deployLeft[i]!--;
      }
    }
    for (const k of ['metrics', 'calls', 'events'] as const) sinks[k].close();
    for (const k of ['metrics', 'calls', 'events'] as const) renameSync(temps[k], files[k]);
  } catch (e) {
    for (const k of ['metrics', 'calls', 'events'] as const) {
      try {
        sinks[k].close();
      } catch {
        /* already failing */
      }
      rmSync(temps[k], { force: true });
    }
    throw e;
  }

  const iso = (s: number): string => isoSeconds(startSec + s * step);
  const labels: MeshIncident[] = incidents.map((inc, k) => ({
    incident_id: k + 1,
    kind: inc.kind,
    start: iso(inc.start),
    end: iso(inc.end),
    root_service: services[inc.root]!.name,
    services: [...inc.services].map((i) => services[i]!.name).sort(),
  }));
  writeFileAtomic(
    files.incidents,
    `incident_id,kind,start,end,root_service,services\n${labels.map((l) => `${l.incident_id},${l.kind},${l.start},${l.end},${l.root_service},${l.services.join(';')}`).join('\n')}\n`,
  );
  const normalUntil = iso(normalSteps);
  writeFileAtomic(files.config, meshConfig(normalUntil));
  const counts = Object.fromEntries(INCIDENT_KINDS.map((k) => [k, labels.filter((l) => l.kind === k).length])) as Record<IncidentKind, number>;
  const result: MeshResult = {
    out,
    seed,
    services: n,
    hours,
    step_seconds: step,
    snapshots: steps,
    first_ts: iso(0),
    last_ts: iso(steps - 1),
    normal_until: normalUntil,
    files,
    rows,
    incidents: counts,
    planned_scale_outs: scaleOuts.length,
    seconds: Math.round((performance.now() - t0) / 100) / 10,
  };
  writeJsonAtomic(join(out, 'manifest.json'), { kind: 'synth_mesh', ...result, seconds: undefined, incident_labels: labels });
  return result;
}

function planIncident(rng: Rng, services: Service[], baseCount: number, kind: IncidentKind, start: number, end: number): Incident | null {
  const severity = 0.35 + 0.65 * rng.next();
  const pick = (pred: (s: Service) => boolean): number => {
    const pool = services.slice(0, baseCount).map((s, i) => [s, i] as const).filter(([s]) => pred(s));
    return pool[rng.int(pool.length)]![1];
  };
  const callersOf = (d: number): number[] => services.slice(0, baseCount).flatMap((s, i) => (s.out.has(d) ? [i] : []));
  switch (kind) {
    case 'retry_storm':
    case 'latency_injection': {
      const r = pick((s) => s.tier >= 1 && s.tier <= 3);
      return { kind, start, end, root: r, severity, services: new Set([r, ...callersOf(r)]) };
    }
    case 'partial_partition': {
      const r = pick((s) => s.tier >= 2 && callersOf(services.indexOf(s)).length >= 2);
      const callers = rng.shuffle(callersOf(r));
      const cut = new Set(callers.slice(0, Math.max(1, Math.floor(callers.length / 2))));
      return { kind, start, end, root: r, severity, cut, services: new Set([r, ...cut]) };
    }
    case 'dependency_drift': {
      const c = pick((s) => s.tier >= 1 && s.tier <= 3);
      const tier = services[c]!.tier;
      const candidates = services.slice(0, baseCount).map((s, i) => [s, i] as const).filter(([s, i]) => s.tier > tier && !services[c]!.out.has(i));
      if (candidates.length === 0) return null;
      const target = candidates[rng.int(candidates.length)]![1];
      return { kind, start, end, root: c, caller: c, target, severity: 0.3 + 0.3 * rng.next(), services: new Set([c, target]) };
    }
    default:
      return assertUnreachable(kind);
  }
}

/** The `anomaly:` config the generator writes beside the tables; fit it with `--until normal_until`. */
function meshConfig(normalUntil: string): string {
  return `# Written by gnnctl datasets synth-mesh. Fit on the incident-free period, then score the rest:
#   gnnctl anomaly fit --config config.yaml
#   gnnctl anomaly score --config config.yaml --run <run id>
name: mesh
anomaly:
  metrics: { path: metrics.csv }
  calls: { path: calls.csv }
  # Autoscaling churn (pod_added / pod_terminating) is normal behaviour the model learns; deploys and
  # planned scale-outs/-ins suppress the scores of the services they touch.
  events: { path: events.csv, kinds: [deploy, service_added, service_terminating] }
  labels: { path: incidents.csv }
  fit_until: "${normalUntil}"
`;
}

