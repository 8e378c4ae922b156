/**
 * `<run dir>/score_report.json`: what `gnnctl anomaly score` found, kept beside the run so `gnnctl report`
 * can draw it without re-scoring. Its schema is src/artifacts/anomaly_score_record.ts (report and anomaly
 * sit in the same layer and never import each other; both read the contract from artifacts).
 */
import { join } from 'node:path';
import { writeJsonAtomic } from '../core/atomic.js';
import { isoSeconds } from '../core/duration.js';
import { SCORE_RECORD_FILE, type AlertGraph, type AnomalyScoreRecord } from '../artifacts/anomaly_score_record.js';
import type { Incident, Snapshot } from './source.js';
import type { ScoreRow } from './writer.js';

/** `score`'s result (score.ts: ScoreReport, taken structurally: score.ts imports this file) plus what the schema adds. */
export type ScoreRecord = Pick<AnomalyScoreRecord, 'kind' | 'scores_path' | 'incidents' | 'alert_graph'>;

/** Neighbours beyond this are left out of the drawing: a hub's 40 callers would be unreadable. */
const MAX_NEIGHBOURS = 12;

export function writeScoreRecord(runDir: string, report: { out: string }, incidents: Incident[] | null, snaps: Snapshot[], rows: ScoreRow[]): string {
  const first = snaps[0]?.ts ?? 0;
  const last = snaps[snaps.length - 1]?.ts ?? 0;
  const record: ScoreRecord & { out: string } = {
    kind: 'anomaly_score_report',
    ...report,
    scores_path: report.out,
    incidents: (incidents ?? [])
      .filter((i) => i.end > first && i.start <= last)
      .map((i) => ({ start: isoSeconds(i.start), end: isoSeconds(i.end), kind: i.kind, root_cause: i.root_cause ?? null })),
    alert_graph: alertGraph(snaps, rows),
  };
  const path = join(runDir, SCORE_RECORD_FILE);
  writeJsonAtomic(path, record);
  return path;
}

/** The graph around the highest-scoring alerting snapshot's first root cause (no alert: null). */
export type { AlertGraph };

export function alertGraph(snaps: Snapshot[], rows: ScoreRow[]): AlertGraph | null {
  let best = -1;
  rows.forEach((r, k) => {
    if (r.alert && (best < 0 || r.score > rows[best]!.score)) best = k;
  });
  const row = rows[best];
  const snap = snaps[best];
  const centre = row?.root_causes?.[0];
  if (!row || !snap || centre === undefined) return null;
  const c = snap.services.indexOf(centre);
  const touching: number[] = [];
  for (let e = 0; e < snap.src.length; e++) if (snap.src[e] === c || snap.dst[e] === c) touching.push(e);
  // busiest calls first, so the neighbours kept are the ones that carry the traffic
  touching.sort((x, y) => (snap.rate[y] ?? 0) - (snap.rate[x] ?? 0));
  const keep = new Set<number>([c]);
  for (const e of touching) {
    if (keep.size > MAX_NEIGHBOURS) break;
    keep.add(snap.src[e] === c ? snap.dst[e]! : snap.src[e]!);
  }
  const edges: AlertGraph['edges'] = [];
  for (let e = 0; e < snap.src.length; e++) {
    if (keep.has(snap.src[e]!) && keep.has(snap.dst[e]!) && snap.src[e] !== snap.dst[e]) {
      edges.push({ source: snap.services[snap.src[e]!]!, destination: snap.services[snap.dst[e]!]!, rate: snap.rate[e] ?? 0 });
    }
  }
  const ranks = row.root_causes ?? [];
  const nodes = [...keep].map((i) => snap.services[i]!).map((service) => ({ service, rank: ranks.includes(service) ? ranks.indexOf(service) + 1 : null }));
  return { ts: isoSeconds(row.ts), score: row.score, threshold: Number.isFinite(row.threshold) ? row.threshold : null, service: centre, nodes, edges };
}
