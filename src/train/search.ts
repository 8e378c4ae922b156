/**
 * Variant search (`model: auto`, `model.search: true`, `gnnctl train --search`): a small documented set
 * of model variants trained on the same examples, chosen by validation. The set is the configured model
 * first, then sampling last/uniform × layers 2/1 × encoder sage/gat with every other setting (channels,
 * fanouts, epochs, …) as configured. Issue 13 found variants that differ by 0.35 AUROC on one dataset and
 * no single variant best everywhere; the run's validation set decides, never the test set.
 *
 * The budget is wall-clock for the whole search. The configured model always trains; a further variant
 * starts only when the slowest variant so far would still finish inside the budget, and a variant still
 * training when the budget runs out ends after its current epoch (its best epoch so far is evaluated).
 */
import type { ModelConfig } from '../config/schema.js';

export interface Variant {
  /** e.g. "sage-2-last" */
  name: string;
  encoder: 'sage' | 'gat';
  layers: number;
  sampling: 'last' | 'uniform';
  num_neighbors: ModelConfig['num_neighbors'];
  /** the configured model itself */
  configured: boolean;
}

/** The documented grid, in training order: the most informative changes first, the slow GAT last. */
export const SEARCH_GRID: readonly { encoder: 'sage' | 'gat'; layers: number; sampling: 'last' | 'uniform' }[] = [
  { encoder: 'sage', layers: 2, sampling: 'last' },
  { encoder: 'sage', layers: 2, sampling: 'uniform' },
  { encoder: 'sage', layers: 1, sampling: 'last' },
  { encoder: 'sage', layers: 1, sampling: 'uniform' },
  { encoder: 'gat', layers: 2, sampling: 'last' },
  { encoder: 'gat', layers: 2, sampling: 'uniform' },
  { encoder: 'gat', layers: 1, sampling: 'last' },
  { encoder: 'gat', layers: 1, sampling: 'uniform' },
];

export function variantName(v: { encoder: string; layers: number; sampling: string }): string {
  return `${v.encoder}-${v.layers}-${v.sampling}`;
}

/** Fanouts for `layers` hops from the configured ones: a prefix, or the last hop's fanout halved per extra hop. */
export function fanoutsFor(configured: ModelConfig['num_neighbors'], layers: number): ModelConfig['num_neighbors'] {
  const out = configured.slice(0, layers);
  while (out.length < layers) {
    const last = out[out.length - 1]!;
    out.push(typeof last === 'number' ? Math.max(1, Math.floor(last / 2)) : last);
  }
  return out;
}

export interface SkippedVariant {
  name: string;
  reason: string;
}

/** The variants to try for a model block, and those of the grid that cannot run with it (with why). */
export function searchVariants(mc: ModelConfig): { variants: Variant[]; skipped: SkippedVariant[] } {
  const configured: Variant = { name: variantName(mc), encoder: mc.encoder, layers: mc.layers, sampling: mc.sampling, num_neighbors: mc.num_neighbors, configured: true };
  const variants = [configured];
  const skipped: SkippedVariant[] = [];
  for (const g of SEARCH_GRID) {
    const name = variantName(g);
    if (name === configured.name) continue;
    if (g.encoder === 'gat' && mc.channels % mc.heads !== 0) {
      skipped.push({ name, reason: `GAT splits channels over heads: channels ${mc.channels} is not divisible by heads ${mc.heads}` });
      continue;
    }
    variants.push({ name, ...g, num_neighbors: fanoutsFor(mc.num_neighbors, g.layers), configured: false });
  }
  return { variants, skipped };
}

/**
 * Whether another variant may start: the configured one always; then only if the slowest variant so far
 * would still end inside the budget (variants differ in cost: GAT and depth 2 are slower).
 */
export function fitsBudget(elapsedSeconds: number, durations: readonly number[], budgetSeconds: number): boolean {
  if (durations.length === 0) return true;
  return elapsedSeconds + Math.max(...durations) <= budgetSeconds;
}

/**
 * The chosen variant: the best validation score (the objective's, higher is better); ties go to the
 * earlier variant (the configured model first), so a search never moves away from the configuration
 * without a validation reason.
 */
export function chooseVariant(scores: readonly (number | null)[]): number {
  let best = -1;
  for (let i = 0; i < scores.length; i++) {
    const s = scores[i];
    if (s === null || s === undefined || Number.isNaN(s)) continue;
    if (best < 0 || s > scores[best]! + 1e-9) best = i;
  }
  return best;
}
