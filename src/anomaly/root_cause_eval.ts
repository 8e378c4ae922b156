/**
 * Root-cause rankings of every method beside each other, judged against labels that name the root-cause
 * service. Per method, each snapshot gives per-service evidence; over an incident's window the evidence is
 * summed per service (a service anomalous throughout outranks one that flickers once) and ranked.
 *
 * Methods: `tagae` (TAGAE's relative errors), `flat` (the flat autoencoder's), `static` (ratio to the
 * static thresholds), `zscore` (largest robust |z| of the service's metrics), `telemetry` (that z plus the
 * largest z of the calls it receives: latency and caller-to-callee gap, from spans), and each of those
 * propagated through the call graph (`*_graph`, root_cause.ts). The recommended method is the one with the
 * best AC@1 (then AC@3, then Avg@5), the simpler one on a tie.
 */
import { propagate, rankServices, rootCauseQuality, type RankedIncident, type RootCauseQuality } from './root_cause.js';
import type { Incident, Snapshot } from './source.js';

/** Cheapest first: a tie goes to the earlier one. */
export const RANKING_METHODS = ['static', 'zscore', 'telemetry', 'flat', 'tagae', 'zscore_graph', 'telemetry_graph', 'flat_graph', 'tagae_graph'] as const;
export type RankingMethod = (typeof RANKING_METHODS)[number];
export type BaseMethod = 'static' | 'zscore' | 'telemetry' | 'flat' | 'tagae';

export interface RootCauseReport {
  incidents: number;
  methods: Partial<Record<RankingMethod, RootCauseQuality>>;
  recommended_method: RankingMethod | null;
  /** per labelled incident: each method's first five services */
  rankings: { start: number; kind: string; root_cause: string; top: Partial<Record<RankingMethod, string[]>> }[];
}

/** Per snapshot (aligned with `snaps`), per base method, per-service evidence. */
export type Evidence = Partial<Record<BaseMethod, Float64Array>>[];

/** One snapshot's ranking under a method, with scores: the list every alert carries. */
export function snapshotRanking(s: Snapshot, evidence: Float64Array, graph: boolean, k: number): { service: string; score: number }[] {
  const score = graph ? propagate({ services: s.services, evidence, src: s.src, dst: s.dst }) : evidence;
  return rankServices(s.services, score)
    .slice(0, k)
    .map((service) => ({ service, score: score[s.services.indexOf(service)] ?? 0 }));
}

export function evaluateRootCause(snaps: Snapshot[], evidence: Evidence, incidents: Incident[]): RootCauseReport | null {
  const labelled = incidents.filter((i) => i.root_cause !== undefined && snaps.some((s) => s.ts >= i.start && s.ts < i.end));
  if (labelled.length === 0) return null;
  const available = RANKING_METHODS.filter((m) => evidence.some((e) => e[m.replace(/_graph$/, '') as BaseMethod] !== undefined));
  const perMethod = new Map<RankingMethod, RankedIncident[]>();
  const rankings: RootCauseReport['rankings'] = [];
  for (const inc of labelled) {
    const top: RootCauseReport['rankings'][number]['top'] = {};
    for (const m of available) {
      const base = m.replace(/_graph$/, '') as BaseMethod;
      const graph = m.endsWith('_graph');
      const acc = new Map<string, number>();
      snaps.forEach((s, k) => {
        if (s.ts < inc.start || s.ts >= inc.end) return;
        const e = evidence[k]?.[base];
        if (!e) return;
        const score = graph ? propagate({ services: s.services, evidence: e, src: s.src, dst: s.dst }) : e;
        s.services.forEach((name, i) => acc.set(name, (acc.get(name) ?? 0) + (score[i] ?? 0)));
      });
      const names = [...acc.keys()];
      const ranking = rankServices(names, names.map((n) => acc.get(n)!));
      const list = perMethod.get(m) ?? [];
      list.push({ kind: inc.kind, root_cause: inc.root_cause!, ranking });
      perMethod.set(m, list);
      top[m] = ranking.slice(0, 5);
    }
    rankings.push({ start: inc.start, kind: inc.kind, root_cause: inc.root_cause!, top });
  }
  const methods: RootCauseReport['methods'] = {};
  for (const [m, list] of perMethod) methods[m] = rootCauseQuality(list);
  let best: RankingMethod | null = null;
  for (const m of available) {
    const q = methods[m]!;
    const b = best ? methods[best]! : null;
    if (!b || q.ac_at_1 > b.ac_at_1 || (q.ac_at_1 === b.ac_at_1 && (q.ac_at_3 > b.ac_at_3 || (q.ac_at_3 === b.ac_at_3 && q.avg_at_5 > b.avg_at_5)))) best = m;
  }
  return { incidents: labelled.length, methods, recommended_method: best, rankings };
}
