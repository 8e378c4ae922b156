/**
 * `gnnctl train --search` / `model: auto` through the real binary on the tiny `bursty` preset (issue 13,
 * items 3 and 4): every variant's validation and test figures in --json, metrics.json and the HTML report,
 * the chosen variant's model as the run's model, seeds and validation recorded, and bad values refused.
 */
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '..', '..');
const BIN = join(ROOT, 'bin', 'gnnctl.js');
const cwd = mkdtempSync(join(tmpdir(), 'gnnctl-search-'));

function gnnctl(args: string[]): { code: number | null; stderr: string; json: Record<string, any> } {
  const r = spawnSync(process.execPath, [BIN, ...args], { cwd, encoding: 'utf8', timeout: 300_000, env: { ...process.env, NO_COLOR: '1' } });
  let json: Record<string, any> = {};
  try {
    json = JSON.parse(r.stdout.trim().split('\n').pop() ?? '') as Record<string, any>;
  } catch {
    // the assertions on `code` say what went wrong
  }
  return { code: r.status, stderr: r.stderr, json };
}

beforeAll(() => {
  const s = gnnctl(['datasets', 'synth', '--preset', 'bursty', '--size', 'tiny', '--out', 'datasets/bursty', '--json']);
  expect(s.code, s.stderr).toBe(0);
  mkdirSync(join(cwd, 'configs'));
  copyFileSync(join(ROOT, 'configs', 'bursty.yaml'), join(cwd, 'configs', 'bursty.yaml'));
  // the same data with `model: auto`: the default model block with the search on
  const text = readFileSync(join(ROOT, 'configs', 'bursty.yaml'), 'utf8').replace(/^model: .*$/m, 'model: auto');
  writeFileSync(join(cwd, 'configs', 'bursty_auto.yaml'), text);
}, 120_000);
afterAll(() => rmSync(cwd, { recursive: true, force: true }));

describe('gnnctl train --search', () => {
  it('tries the variant set, keeps the best on validation, reports every variant (--json, metrics.json, report)', () => {
    const r = gnnctl(['train', '--config', 'configs/bursty.yaml', '--task', 'churn', '--search', '--search-budget', '10m', '--epochs', '1', '--backend', 'wasm', '--json']);
    expect(r.code, r.stderr).toBe(0);
    const s = r.json.search;
    expect(s.budget_seconds).toBe(600);
    const names = s.variants.map((v: { name: string }) => v.name);
    expect(names).toEqual(['sage-2-last', 'sage-2-uniform', 'sage-1-last', 'sage-1-uniform', 'gat-2-last', 'gat-2-uniform', 'gat-1-last', 'gat-1-uniform']);
    const trained = s.variants.filter((v: { status: string }) => v.status === 'trained');
    expect(trained.length).toBeGreaterThanOrEqual(1);
    for (const v of trained) {
      expect(v.val).toBeGreaterThan(0);
      expect(v.test).toBeGreaterThan(0);
    }
    for (const v of s.variants.filter((x: { status: string }) => x.status === 'skipped')) expect(v.reason).toMatch(/budget/);
    // chosen by validation: the best validation figure among the trained (ties: the earlier)
    const bestVal = Math.max(...trained.map((v: { val: number }) => v.val));
    expect(s.chosen).toBe(trained.find((v: { val: number }) => v.val === bestVal).name);
    // the run's model is the chosen variant's: its figures are the run's, and so is spec.json
    const chosen = trained.find((v: { name: string }) => v.name === s.chosen);
    expect(r.json.metrics.val.auroc).toBe(chosen.val);
    expect(r.json.metrics.test.auroc).toBe(chosen.test);
    const spec = JSON.parse(readFileSync(join(r.json.run_dir, 'model', 'spec.json'), 'utf8'));
    const [encoder, layers, sampling] = s.chosen.split('-');
    expect({ encoder: spec.encoder, layers: spec.layers, sampling: spec.sampling }).toEqual({ encoder, layers: Number(layers), sampling });
    // small validation set: several anchors, smoothing, seeds recorded
    expect(r.json.validation.anchors).toHaveLength(4);
    expect(r.json.validation.small).toBe(true);
    expect(r.json.seeds).toEqual({ model: 0, evaluation: 1234 });
    const metrics = JSON.parse(readFileSync(join(r.json.run_dir, 'metrics.json'), 'utf8'));
    expect(metrics.search.chosen).toBe(s.chosen);
    expect(metrics.search.variants.filter((v: { status: string }) => v.status === 'trained').every((v: { val: { auroc: number }; test: { auroc: number } }) => v.val.auroc > 0 && v.test.auroc > 0)).toBe(true);
    expect(metrics.validation.anchors).toHaveLength(4);

    const rep = gnnctl(['report', r.json.run_id, '--config', 'configs/bursty.yaml', '--json']);
    expect(rep.code, rep.stderr).toBe(0);
    const html = readFileSync(rep.json.path ?? rep.json.out ?? join(r.json.run_dir, 'report.html'), 'utf8');
    expect(html).toContain('id="search-table"');
    for (const v of s.variants) expect(html).toContain(`data-variant="${v.name}"`);
    expect(html).toContain('data-metric="search.chosen"');
    expect(html).toContain('data-anchor="val_anchors"');
    expect(html).toContain('data-metric="seeds.model"');
  }, 600_000);

  it('model: auto in the config searches too; a 1-second budget still trains the configured model', () => {
    const r = gnnctl(['train', '--config', 'configs/bursty_auto.yaml', '--task', 'churn', '--search-budget', '1s', '--epochs', '1', '--backend', 'wasm', '--json']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.json.search.budget_seconds).toBe(1);
    expect(r.json.search.variants[0]).toMatchObject({ name: 'sage-2-last', status: 'trained' });
    for (const v of r.json.search.variants.slice(1)) if (v.status === 'skipped') expect(v.reason).toMatch(/budget/);
  }, 600_000);

  it('without --search or model: auto there is no search', () => {
    const r = gnnctl(['train', '--config', 'configs/bursty.yaml', '--task', 'churn', '--epochs', '1', '--backend', 'wasm', '--json']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.json.search).toBeNull();
  }, 300_000);

  it('a bad --search-budget exits 2 naming the flag, before any work', () => {
    for (const bad of ['soon', '0', '-5m']) {
      const r = gnnctl(['train', '--config', 'configs/bursty.yaml', '--task', 'churn', '--search-budget', bad, '--json']);
      expect(r.code, r.stderr).toBe(2);
      expect(r.stderr).toContain('--search-budget');
      expect(r.json).toMatchObject({ error: 'UsageError', exit_code: 2 });
    }
  });

  it('--search with --init-from is refused: variants train from scratch', () => {
    const r = gnnctl(['train', '--config', 'configs/bursty.yaml', '--task', 'churn', '--search', '--init-from', 'latest:churn', '--json']);
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr).toMatch(/cannot fine-tune/);
  }, 300_000);
});
