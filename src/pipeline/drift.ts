/**
 * Feature drift between what a run was fitted on and today's data, per column the run reads: the
 * population stability index of the current window against the run's reference distribution (deciles
 * for numeric columns; each vocabulary value, out-of-vocabulary and null for categorical ones), and the
 * share of out-of-vocabulary values. Reported by `gnnctl check` (exit 4 above the threshold) and by
 * `gnnctl refresh --json`, never absorbed: the run's encoders stay as they were fitted.
 */
import { categoricalShares, numericShares, psi } from '../graph/distribution.js';
import type { Graph } from '../graph/graph.js';
import { remapCodes, type FeatureSpec } from '../model/features.js';
import { round } from '../core/number.js';

export interface DriftOptions {
  /** seconds of data before the newest time that count as "current" (time-stamped tables) */
  window: number;
  /** PSI above which a feature counts as drifted */
  threshold: number;
}

export interface FeatureDrift {
  table: string;
  column: string;
  kind: 'numerical' | 'categorical';
  psi: number;
  /** categorical: share of current values outside the run's vocabulary, and the same on the fit window */
  oov_share?: number;
  reference_oov_share?: number;
  rows: number;
  drifted: boolean;
}

export interface DriftReport {
  window: { from: string | null; to: string | null; seconds: number };
  threshold: number;
  features: FeatureDrift[];
  /** columns whose run records no reference (runs from gnnctl 0.1) */
  unmeasured: string[];
  max_psi: number;
  ok: boolean;
}

export const DEFAULT_DRIFT: DriftOptions = { window: 30 * 86400, threshold: 0.25 };

export function driftReport(graph: Graph, spec: FeatureSpec, opts: DriftOptions = DEFAULT_DRIFT): DriftReport {
  const features: FeatureDrift[] = [];
  const unmeasured: string[] = [];
  const end = graph.manifest.time_range?.[1] ?? null;
  for (const [name, t] of Object.entries(spec.tables)) {
    if (!graph.tables[name]) continue;
    const table = graph.table(name);
    // Time-stamped tables: the rows of the last `window`; tables without time: every row.
    let rows: Uint8Array | null = null;
    let count = table.rows;
    if (table.time && end !== null) {
      rows = new Uint8Array(table.rows);
      count = 0;
      for (let i = 0; i < table.rows; i++) if (table.time[i]! > end - opts.window) (rows[i] = 1), count++;
    }
    for (const c of t.numeric) {
      const col = table.numeric.find((x) => x.meta.name === c.name);
      if (!col || !c.reference || c.reference.shares.length === 0) {
        if (!c.reference) unmeasured.push(`${name}.${c.name}`);
        continue;
      }
      const p = psi(numericShares(col.values, rows, c.reference.edges), c.reference.shares);
      features.push({ table: name, column: c.name, kind: 'numerical', psi: round(p, 4), rows: count, drifted: p > opts.threshold });
    }
    for (const c of t.categorical) {
      const col = table.categorical.find((x) => x.meta.name === c.name);
      if (!col || !c.reference) {
        if (!c.reference) unmeasured.push(`${name}.${c.name}`);
        continue;
      }
      const size = c.vocab.length + 2;
      const current = categoricalShares(remapCodes(col.codes, col.meta.vocab, c.vocab), size, rows);
      // Fine-tuning may have grown the vocabulary: codes the reference never had start at share 0.
      const reference = Array.from({ length: size }, (_, i) => c.reference!.shares[i] ?? 0);
      const p = psi(current, reference);
      features.push({
        table: name,
        column: c.name,
        kind: 'categorical',
        psi: round(p, 4),
        oov_share: round(current[1]!, 4),
        reference_oov_share: round(reference[1]!, 4),
        rows: count,
        drifted: p > opts.threshold,
      });
    }
  }
  features.sort((a, b) => b.psi - a.psi);
  const iso = (t: number | null): string | null => (t === null ? null : new Date(t * 1000).toISOString());
  return {
    window: { from: iso(end === null ? null : end - opts.window), to: iso(end), seconds: opts.window },
    threshold: opts.threshold,
    features,
    unmeasured,
    max_psi: features.length ? features[0]!.psi : 0,
    ok: features.every((f) => !f.drifted),
  };
}
