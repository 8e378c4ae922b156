/** The variant set of `model: auto` / `--search`, the budget rule and the choice by validation. */
import { describe, expect, it } from 'vitest';
import { modelSchema } from '../../src/config/schema.js';
import { chooseVariant, fanoutsFor, fitsBudget, SEARCH_GRID, searchVariants } from '../../src/train/search.js';

describe('searchVariants', () => {
  it('the default model: the configured variant first, then the 7 other grid points', () => {
    const { variants, skipped } = searchVariants(modelSchema.parse({}));
    expect(variants.map((v) => v.name)).toEqual(['sage-2-last', 'sage-2-uniform', 'sage-1-last', 'sage-1-uniform', 'gat-2-last', 'gat-2-uniform', 'gat-1-last', 'gat-1-uniform']);
    expect(variants[0]!.configured).toBe(true);
    expect(variants.filter((v) => v.configured)).toHaveLength(1);
    expect(skipped).toEqual([]);
    expect(variants.find((v) => v.name === 'sage-1-last')!.num_neighbors).toEqual([16]);
  });

  it('a configured model outside the grid is tried first, then the whole grid', () => {
    const { variants } = searchVariants(modelSchema.parse({ layers: 3, num_neighbors: [10, 5, 3], sampling: 'uniform' }));
    expect(variants[0]).toMatchObject({ name: 'sage-3-uniform', configured: true, num_neighbors: [10, 5, 3] });
    expect(variants).toHaveLength(1 + SEARCH_GRID.length);
    expect(variants.find((v) => v.name === 'sage-2-last')!.num_neighbors).toEqual([10, 5]);
  });

  it('GAT variants that cannot split channels over heads are skipped with the reason', () => {
    const { variants, skipped } = searchVariants(modelSchema.parse({ channels: 30, heads: 4 }));
    expect(variants.every((v) => v.encoder === 'sage')).toBe(true);
    expect(skipped).toHaveLength(4);
    expect(skipped[0]!.reason).toMatch(/channels 30 is not divisible by heads 4/);
  });

  it('fanoutsFor: a prefix, or the last fanout halved for an extra hop; edge-type maps are kept', () => {
    expect(fanoutsFor([10], 2)).toEqual([10, 5]);
    expect(fanoutsFor([10, 5], 1)).toEqual([10]);
    expect(fanoutsFor([{ default: 8 }], 2)).toEqual([{ default: 8 }, { default: 8 }]);
  });
});

describe('fitsBudget', () => {
  it('the first variant always starts; later ones only if the slowest so far still fits', () => {
    expect(fitsBudget(10_000, [], 1)).toBe(true);
    expect(fitsBudget(100, [40, 90], 200)).toBe(true);
    expect(fitsBudget(120, [40, 90], 200)).toBe(false);
  });
});

describe('chooseVariant', () => {
  it('the best validation score; ties keep the earlier (configured) variant; NaN and skipped never win', () => {
    expect(chooseVariant([0.7, 0.75, 0.72])).toBe(1);
    expect(chooseVariant([0.75, 0.75])).toBe(0);
    expect(chooseVariant([Number.NaN, null, 0.6])).toBe(2);
    expect(chooseVariant([null, Number.NaN])).toBe(-1);
  });
});
