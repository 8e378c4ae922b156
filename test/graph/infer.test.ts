/**
 * Column-role inference for integer columns: codes (by name, by few repeated values, by gaps in their
 * range) are categorical, quantities numerical, identifiers ignored; each with the reason `graph inspect`
 * prints.
 */
import { describe, expect, it } from 'vitest';
import { dataSchema } from '../../src/config/schema.js';
import { inferColumnRole, snakeName, type ColumnStats } from '../../src/graph/infer.js';

const data = dataSchema.parse({ tables: {} });
const role = (name: string, stats: ColumnStats, type = 'BIGINT') => inferColumnRole({ name, type }, stats, data);

describe('integer columns', () => {
  it('camelCase and snake_case names read alike', () => {
    expect(snakeName('statusId')).toBe('status_id');
    expect(snakeName('raceID')).toBe('race_id');
    expect(snakeName('positionOrder')).toBe('position_order');
    expect(snakeName('sales_channel_id')).toBe('sales_channel_id');
  });

  it('statusId (F1 results: ~137 codes, nearly contiguous) is a code by its name, and says so', () => {
    const r = role('statusId', { distinct: 137, nonNull: 26_000, avgLength: null, min: 1, max: 141 });
    expect(r.role).toBe('categorical');
    expect(r.reason).toBe('integer code: the name statusId reads as an id/code/status, ~137 distinct in 26000 values');
    // the same values under a quantity's name fill their range: a quantity
    expect(role('laps', { distinct: 137, nonNull: 26_000, avgLength: null, min: 1, max: 141 }).role).toBe('numerical');
  });

  it('an unnamed column with few values leaving most of their range empty is a code', () => {
    const r = role('outcome', { distinct: 30, nonNull: 5_000, avgLength: null, min: 1, max: 900 });
    expect(r).toEqual({ role: 'categorical', reason: 'integer code: ~30 distinct values with gaps over 1…900 (non-ordinal), 5000 values' });
    // a contiguous range (an age, a grid position) is a quantity
    expect(role('grid', { distinct: 30, nonNull: 5_000, avgLength: null, min: 0, max: 29 })).toEqual({ role: 'numerical', reason: 'integer (~30 distinct over 0…29)' });
    // gaps among too few rows are no evidence
    expect(role('outcome', { distinct: 30, nonNull: 200, avgLength: null, min: 1, max: 900 }).role).toBe('numerical');
    // many values with gaps are a quantity (prices in cents)
    expect(role('price_cents', { distinct: 500, nonNull: 100_000, avgLength: null, min: 100, max: 90_000 }).role).toBe('numerical');
  });

  it('few repeated values are categories, two are a flag', () => {
    expect(role('rating', { distinct: 5, nonNull: 1_000, avgLength: null, min: 1, max: 5 }).role).toBe('categorical');
    expect(role('fraud', { distinct: 2, nonNull: 1_000, avgLength: null, min: 0, max: 1 })).toEqual({ role: 'numerical', reason: 'integer flag (2 distinct)' });
  });

  it('a code name on values that do not repeat is an identifier, left out', () => {
    const r = role('orderId', { distinct: 9_800, nonNull: 10_000, avgLength: null, min: 1, max: 10_000 });
    expect(r.role).toBe('ignore');
    expect(r.reason).toContain('id-like integer');
    expect(r.reason).toContain('columns.orderId');
  });

  it('non-integer types are untouched by the integer rules', () => {
    expect(role('statusId', { distinct: 3, nonNull: 100, avgLength: null }, 'DOUBLE')).toEqual({ role: 'numerical', reason: 'floating point' });
  });
});
