/**
 * Integer codes on an F1-shaped fixture: `results.statusId` (a code of a small status dimension the
 * config does not declare) is inferred categorical by its name, an unnamed code column by the gaps in
 * its range, `grid` stays a quantity; `graph inspect` says why for each, and `columns:` wins.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load.js';
import { buildGraph } from '../../src/graph/build.js';
import { Graph } from '../../src/graph/graph.js';
import { formatSummary, summarizeGraph } from '../../src/graph/inspect.js';
import { Rng } from '../../src/core/rng.js';

const STATUS = [1, 2, 3, 4, 5, 11, 12, 13, 20, 31, 104, 130];
/** 24 codes over 3…900: more values than a 'few repeated' column, most of the range empty */
const OUTCOME = Array.from({ length: 24 }, (_, i) => 3 + Math.round((i * 897) / 23));

let dir: string;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'gnnctl-codes-'));
  const rng = new Rng(5);
  const drivers = ['driverId,nationality', ...Array.from({ length: 20 }, (_, i) => `${i + 1},n${i % 4}`)];
  const results = ['resultId,date,driverId,statusId,outcome,grid'];
  for (let i = 0; i < 600; i++) {
    const day = String(1 + (i % 28)).padStart(2, '0');
    results.push(`${i + 1},2021-0${1 + (i % 9)}-${day},${1 + rng.int(20)},${STATUS[rng.int(STATUS.length)]},${OUTCOME[rng.int(OUTCOME.length)]},${1 + rng.int(24)}`);
  }
  writeFileSync(join(dir, 'drivers.csv'), `${drivers.join('\n')}\n`);
  writeFileSync(join(dir, 'results.csv'), `${results.join('\n')}\n`);
  mkdirSync(join(dir, 'artifacts'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function config(columns = ''): string {
  const path = join(dir, `config${columns ? '-override' : ''}.yaml`);
  writeFileSync(
    path,
    `name: f1
data:
  tables:
    drivers: { path: drivers.csv, primary_key: driverId }
    results:
      path: results.csv
      primary_key: resultId
      time_column: date
      foreign_keys: { driverId: drivers }
${columns ? `      columns: ${columns}\n` : ''}`,
  );
  return path;
}

async function build(path: string) {
  const cfg = loadConfig(path, { cwd: dir, artifacts: join(dir, 'artifacts') });
  return buildGraph(cfg);
}

describe('integer codes on an F1-shaped table', () => {
  it('statusId and a gapped code are categorical, grid numerical, each with its reason in graph inspect', async () => {
    const r = await build(config());
    const cols = Object.fromEntries(r.manifest.schema.tables.results!.columns.map((c) => [c.name, c]));
    expect(cols.statusId).toMatchObject({ role: 'categorical', reason: expect.stringContaining('the name statusId reads as an id/code/status') });
    expect(cols.outcome).toMatchObject({ role: 'categorical', reason: expect.stringContaining('gaps over 3…900') });
    // distinct counts are approximate (HyperLogLog): '~'
    expect(cols.grid).toMatchObject({ role: 'numerical', reason: expect.stringMatching(/^integer \(~2\d distinct over 1…24\)$/) });

    // the vocabulary holds the codes as values, not their order
    const g = Graph.load(r.dir);
    const status = g.table('results').categorical.find((c) => c.meta.name === 'statusId')!;
    expect([...status.meta.vocab].map(Number).sort((a, b) => a - b)).toEqual(STATUS);

    const summary = summarizeGraph(r.dir, r.manifest);
    expect(summary.tables.results!.columns.find((c) => c.name === 'statusId')!.reason).toBe(cols.statusId!.reason);
    const text = formatSummary(summary);
    expect(text).toMatch(/statusId .*vocabulary\(12 values.* — integer code: the name statusId reads as an id\/code\/status/);
    expect(text).toMatch(/grid .*standardize.* — integer \(~2\d distinct over 1…24\)/);
  });

  it('an explicit columns: override wins over the inference', async () => {
    const r = await build(config('{ statusId: numerical, grid: categorical }'));
    const cols = Object.fromEntries(r.manifest.schema.tables.results!.columns.map((c) => [c.name, c]));
    expect(cols.statusId).toMatchObject({ role: 'numerical', reason: 'config override' });
    expect(cols.grid).toMatchObject({ role: 'categorical', reason: 'config override' });
    expect(r.manifest.tables.results!.numeric.map((c) => c.name)).toContain('statusId');
  });
});
