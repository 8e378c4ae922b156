/**
 * Feature standardisation for the anomaly model, fitted on the normal period and saved with the run:
 * score and watch re-apply these statistics and never refit them on the data they score (a refit would
 * absorb the very shift an incident causes).
 *
 * Per column: heavy-tailed non-negative columns (rates, latencies, connection counts) are log1p-transformed
 * first — a gateway's request rate is 100× a datastore's, and without the log the busiest services would
 * dominate every error — then standardised, z = (v − mean) / std, and clipped to ±CLIP so one broken
 * scrape cannot produce an unbounded input. NaN (no value) becomes 0, the fitted mean.
 */
import type { Snapshot } from './source.js';

export const CLIP = 8;

export interface ColumnStats {
  name: string;
  /** log1p applied before standardising (the column was ≥ 0 throughout the fit window) */
  log: boolean;
  mean: number;
  std: number;
}

export interface FeatureStats {
  node: ColumnStats[];
  /** extra edge columns (the share of traffic needs none: it is already in [0, 1]) */
  edge: ColumnStats[];
}

function fitColumns(names: string[], get: (s: Snapshot) => Float32Array, snapshots: Snapshot[]): ColumnStats[] {
  const F = names.length;
  return names.map((name, f) => {
    let min = Infinity;
    for (const s of snapshots) {
      const v = get(s);
      for (let i = f; i < v.length; i += F) if (v[i]! < min) min = v[i]!;
    }
    const log = min >= 0;
    let n = 0;
    let sum = 0;
    let sq = 0;
    for (const s of snapshots) {
      const v = get(s);
      for (let i = f; i < v.length; i += F) {
        const x = v[i]!;
        if (Number.isNaN(x)) continue;
        const y = log ? Math.log1p(x) : x;
        n++;
        sum += y;
        sq += y * y;
      }
    }
    const mean = n ? sum / n : 0;
    const std = n ? Math.sqrt(Math.max(0, sq / n - mean * mean)) : 1;
    return { name, log, mean, std: std > 1e-9 ? std : 1 };
  });
}

export function fitFeatureStats(snapshots: Snapshot[], featureColumns: string[], edgeFeatureColumns: string[]): FeatureStats {
  return {
    node: fitColumns(featureColumns, (s) => s.features, snapshots),
    edge: fitColumns(edgeFeatureColumns, (s) => s.edgeFeatures, snapshots),
  };
}

/** Applies fitted statistics to a row-major [rows × columns] block (into `out`, zero-filled, when given). */
export function standardise(values: Float32Array, stats: ColumnStats[], out: Float32Array = new Float32Array(values.length)): Float32Array {
  const F = stats.length;
  // column by column, each column's statistics in locals
  for (let f = 0; f < F; f++) {
    const { log, mean, std } = stats[f]!;
    for (let i = f; i < values.length; i += F) {
      const x = values[i]!;
      if (Number.isNaN(x)) continue;
      const y = ((log ? Math.log1p(Math.max(0, x)) : x) - mean) / std;
      out[i] = Math.max(-CLIP, Math.min(CLIP, y));
    }
  }
  return out;
}
