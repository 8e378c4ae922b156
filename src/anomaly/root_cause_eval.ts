/**
 * Root-cause rankings of every method beside each other, judged against labels that name the root-cause
 * service. Per method, each snapshot gives per-service evidence; over an incident's window the evidence is
 * summed per service (a service anomalous throughout outranks one that flickers once) and ranked.
 *
 * Methods: `tagae` (TAGAE's relative errors), `flat` (the flat autoencoder's), `static` (ratio to the
 * static thresholds), `zscore` (largest robust |z| of the service's metrics), `telemetry` (that z plus the
 * largest z of the calls it receives: latency and caller-to-callee gap, from spans), and each of those
 * propagated through the call graph (`*_graph`, root_cause.ts), `signals` (each signal family's
 * deviation turned into shares across services over the window, shares summed: signal_share.ts) and
 * `signals_learned` (the shares weighted per family, signal_weights.ts). Its weights are fitted on
 * validation faults only: a test fault is ranked with weights fitted on all validation faults, a
 * validation fault with weights fitted on the other half of them — so no fault is ranked by weights
 * that saw it.
 *
 * The recommended method is chosen on the validation incidents only — the earlier half, in time — by
 * AC@1 (then AC@3, then Avg@5), the simpler one on a tie; the later half is the test its figures are
 * quoted on (`test`), so the choice is never made on the incidents it is judged by. `methods` covers
 * every labelled incident, with 95% intervals.
 */
import { propagate, rankServices, rootCauseQuality, type RankedIncident, type RootCauseQuality } from './root_cause.js';
import { familyShares, familySums, shareScores } from './signal_share.js';
import { fitFamilyWeights, weightedScores, type WeightedExample } from './signal_weights.js';
import type { Incident, Snapshot } from './source.js';

/** Cheapest first: a tie goes to the earlier one. */
export const RANKING_METHODS = ['static', 'zscore', 'telemetry', 'signals', 'signals_learned', 'flat', 'tagae', 'zscore_graph', 'telemetry_graph', 'flat_graph', 'tagae_graph'] as const;
export type RankingMethod = (typeof RANKING_METHODS)[number];
export type BaseMethod = 'static' | 'zscore' | 'telemetry' | 'flat' | 'tagae';

/** With fewer labelled incidents than this, there is no held-out half: all of them validate and test. */
const MIN_SPLIT_INCIDENTS = 6;

export interface RootCauseReport {
  incidents: number;
  methods: Partial<Record<RankingMethod, RootCauseQuality>>;
  /** the method with the best AC@1 on the validation incidents */
  recommended_method: RankingMethod | null;
  /** the earlier incidents (the recommendation is chosen on them) and the later ones (its figures are quoted on them) */
  selection: { validation_incidents: number; test_incidents: number; validation: Partial<Record<RankingMethod, RootCauseQuality>>; test: Partial<Record<RankingMethod, RootCauseQuality>> };
  /** per labelled incident: each method's first five services */
  rankings: { start: number; kind: string; root_cause: string; top: Partial<Record<RankingMethod, string[]>> }[];
}

/**
 * Per snapshot (aligned with `snaps`), per base method, per-service evidence; `signals` holds the
 * snapshot's per-family deviations [families][services] (signal_share.ts), shared out over a window.
 */
export type Evidence = (Partial<Record<BaseMethod, Float64Array>> & { signals?: Float64Array[] })[];

/** One snapshot's ranking under a method, with scores: the list every alert carries. */
export function snapshotRanking(s: Snapshot, evidence: Float64Array, graph: boolean, k: number): { service: string; score: number }[] {
  const score = graph ? propagate({ services: s.services, evidence, src: s.src, dst: s.dst }) : evidence;
  return rankServices(s.services, score)
    .slice(0, k)
    .map((service) => ({ service, score: score[s.services.indexOf(service)] ?? 0 }));
}

export function evaluateRootCause(snaps: Snapshot[], evidence: Evidence, incidents: Incident[]): RootCauseReport | null {
  const labelled = incidents.filter((i) => i.root_cause !== undefined && snaps.some((s) => s.ts >= i.start && s.ts < i.end)).sort((x, y) => x.start - y.start);
  if (labelled.length === 0) return null;
  const hasSignals = evidence.some((e) => e.signals !== undefined);
  const available = RANKING_METHODS.filter((m) => (m === 'signals' || m === 'signals_learned' ? hasSignals : evidence.some((e) => e[m.replace(/_graph$/, '') as BaseMethod] !== undefined)));
  const nValidation = labelled.length < MIN_SPLIT_INCIDENTS ? labelled.length : Math.ceil(labelled.length / 2);
  const learned = hasSignals ? learnedRankings(snaps, evidence, labelled, nValidation) : [];
  const perMethod = new Map<RankingMethod, RankedIncident[]>();
  const rankings: RootCauseReport['rankings'] = [];
  labelled.forEach((inc, k) => {
    const top: RootCauseReport['rankings'][number]['top'] = {};
    for (const m of available) {
      const ranking = m === 'signals_learned' ? learned[k]! : windowRanking(m, snaps, evidence, inc);
      const list = perMethod.get(m) ?? [];
      list.push({ kind: inc.kind, root_cause: inc.root_cause!, ranking });
      perMethod.set(m, list);
      top[m] = ranking.slice(0, 5);
    }
    rankings.push({ start: inc.start, kind: inc.kind, root_cause: inc.root_cause!, top });
  });
  const quality = (part: (list: RankedIncident[]) => RankedIncident[]): Partial<Record<RankingMethod, RootCauseQuality>> => {
    const out: Partial<Record<RankingMethod, RootCauseQuality>> = {};
    for (const [m, list] of perMethod) out[m] = rootCauseQuality(part(list));
    return out;
  };
  const methods = quality((l) => l);
  const validation = quality((l) => l.slice(0, nValidation));
  const test = quality((l) => (nValidation === l.length ? l : l.slice(nValidation)));
  let best: RankingMethod | null = null;
  for (const m of available) {
    const q = validation[m]!;
    const b = best ? validation[best]! : null;
    if (!b || q.ac_at_1 > b.ac_at_1 || (q.ac_at_1 === b.ac_at_1 && (q.ac_at_3 > b.ac_at_3 || (q.ac_at_3 === b.ac_at_3 && q.avg_at_5 > b.avg_at_5)))) best = m;
  }
  const testCount = nValidation === labelled.length ? labelled.length : labelled.length - nValidation;
  return { incidents: labelled.length, methods, recommended_method: best, selection: { validation_incidents: nValidation, test_incidents: testCount, validation, test }, rankings };
}

/** An incident's per-family shares over its window ([families][services], each family summing to 1 or 0). */
function windowShares(snaps: Snapshot[], evidence: Evidence, inc: Incident): { names: string[]; shares: Float64Array[] } {
  const inWindow: { services: string[]; deviations: Float64Array[] }[] = [];
  snaps.forEach((s, k) => {
    const deviations = evidence[k]?.signals;
    if (deviations && s.ts >= inc.start && s.ts < inc.end) inWindow.push({ services: s.services, deviations });
  });
  const { services, rows } = familySums(inWindow);
  return { names: services, shares: familyShares(rows) };
}

/**
 * `signals_learned` rankings of the labelled incidents (in time order): test incidents with weights fitted
 * on every validation incident, each validation half with weights fitted on the other half.
 */
function learnedRankings(snaps: Snapshot[], evidence: Evidence, labelled: Incident[], nValidation: number): string[][] {
  const windows = labelled.map((inc) => windowShares(snaps, evidence, inc));
  const families = Math.max(0, ...windows.map((w) => w.shares.length));
  const example = (k: number): WeightedExample => ({ shares: windows[k]!.shares, target: windows[k]!.names.indexOf(labelled[k]!.root_cause!) });
  const fit = (idx: number[]): Float64Array => fitFamilyWeights(idx.map(example), families);
  const range = (a: number, b: number): number[] => Array.from({ length: Math.max(0, b - a) }, (_, i) => a + i);
  const half = Math.ceil(nValidation / 2);
  const weights = new Array<Float64Array>(labelled.length);
  const first = fit(range(half, nValidation));
  const second = fit(range(0, half));
  const all = fit(range(0, nValidation));
  labelled.forEach((_, k) => (weights[k] = k < half ? first : k < nValidation ? second : all));
  return windows.map((w, k) => rankServices(w.names, weightedScores(w.shares, weights[k]!, w.names.length)));
}

/** One method's ranking of an incident: evidence summed per service over the window (signals: shared out per family). */
function windowRanking(m: RankingMethod, snaps: Snapshot[], evidence: Evidence, inc: Incident): string[] {
  if (m === 'signals') {
    const { names, shares } = windowShares(snaps, evidence, inc);
    return rankServices(names, shareScores(shares, names.length));
  }
  const acc = new Map<string, number>();
  const base = m.replace(/_graph$/, '') as BaseMethod;
  const graph = m.endsWith('_graph');
  snaps.forEach((s, k) => {
    if (s.ts < inc.start || s.ts >= inc.end) return;
    const e = evidence[k]?.[base];
    if (!e) return;
    const score = graph ? propagate({ services: s.services, evidence: e, src: s.src, dst: s.dst }) : e;
    s.services.forEach((name, i) => acc.set(name, (acc.get(name) ?? 0) + (score[i] ?? 0)));
  });
  const names = [...acc.keys()];
  return rankServices(names, names.map((n) => acc.get(n)!));
}
