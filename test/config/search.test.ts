/**
 * The config side of issue 13's items 3 and 4: `model: auto` (top level and per task), model.search /
 * search_budget, model.val_smoothing and split.val_anchors, with clear errors naming the field.
 */
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config/load.js';
import { ConfigError, type ConfigProblem } from '../../src/core/errors.js';

const base = (model: string, task = ''): string => `name: shop
data:
  tables:
    customers: { path: customers.csv, primary_key: customer_id }
    transactions:
      path: transactions.csv
      time_column: t_dat
      foreign_keys: { customer_id: customers }
tasks:
  churn:
    query: PREDICT COUNT(transactions.*, 0, 7, days) = 0 FOR EACH customers.customer_id
${task}
${model}
`;

const parse = (text: string) => parseConfig(text, '/configs/shop.yaml', { cwd: '/data' });

function problemsOf(text: string): ConfigProblem[] {
  try {
    parse(text);
  } catch (e) {
    expect(e).toBeInstanceOf(ConfigError);
    return (e as ConfigError).problems;
  }
  throw new Error('the config loaded, but a ConfigError was expected');
}

describe('model: auto and model.search', () => {
  it('defaults: no search, a 10-minute budget, auto validation, 16 steps an epoch at least', () => {
    const m = parse(base('model: { epochs: 2 }')).taskSpecs.churn!.model;
    expect(m.search).toBe(false);
    expect(m.search_budget).toBe(600);
    expect(m.val_smoothing).toBe('auto');
    expect(m.min_steps_per_epoch).toBe(16);
    expect(parse(base('')).taskSpecs.churn!.split.val_anchors).toBe('auto');
  });

  it('top-level model: auto is the default model block with search on', () => {
    const m = parse(base('model: auto')).taskSpecs.churn!.model;
    expect(m.search).toBe(true);
    expect(m.encoder).toBe('sage');
    expect(m.layers).toBe(2);
  });

  it('tasks.<name>.model: auto keeps the top-level settings and turns search on', () => {
    const m = parse(base('model: { channels: 32, num_neighbors: [6, 3], epochs: 3 }', '    model: auto')).taskSpecs.churn!.model;
    expect(m.search).toBe(true);
    expect(m.channels).toBe(32);
    expect(m.num_neighbors).toEqual([6, 3]);
  });

  it('search_budget takes a duration', () => {
    expect(parse(base('model: { search: true, search_budget: 90 seconds }')).taskSpecs.churn!.model.search_budget).toBe(90);
    expect(parse(base('model: { search: true, search_budget: 2h }')).taskSpecs.churn!.model.search_budget).toBe(7200);
  });

  it('a bad search_budget, a misspelt auto and an even val_smoothing are refused naming the field', () => {
    const p1 = problemsOf(base('model: { search: true, search_budget: soon }'));
    expect(p1.map((p) => p.path)).toContain('model.search_budget');
    expect(p1.find((p) => p.path === 'model.search_budget')!.message).toMatch(/duration/);
    const p0 = problemsOf(base('model: { search_budget: 0 }'));
    expect(p0.find((p) => p.path === 'model.search_budget')!.message).toMatch(/positive/);
    const p2 = problemsOf(base('model: automatic'));
    expect(p2.some((p) => p.path.startsWith('model'))).toBe(true);
    const p3 = problemsOf(base('model: { val_smoothing: 4 }'));
    expect(p3.find((p) => p.path === 'model.val_smoothing')!.message).toMatch(/odd/);
  });

  it('split.val_anchors: a count from 1 to 14 or auto', () => {
    expect(parse(base('', '    split: { val_anchors: 3 }')).taskSpecs.churn!.split.val_anchors).toBe(3);
    const p = problemsOf(base('', '    split: { val_anchors: 0 }'));
    expect(p.map((x) => x.path)).toContain('tasks.churn.split.val_anchors');
  });
});
