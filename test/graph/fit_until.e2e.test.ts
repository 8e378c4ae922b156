/**
 * Each run's feature statistics are fitted up to its own task's earliest validation anchor
 * (graph/fit_until.ts): never on rows after it, and another task's split never moves it. Tiny synthetic
 * data, a churn task with its default twenty weekly test anchors beside a fact-row fraud task.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig, type Config } from '../../src/config/load.js';
import { buildGraph, type BuildResult } from '../../src/graph/build.js';
import { firstValAnchor, runFit } from '../../src/graph/fit_until.js';
import { duckRows } from '../helpers/graph.js';
import { CHURN, FRAUD } from '../helpers/pipeline.js';
import { synthConfig, tinySynth, type SynthFixture } from '../helpers/synth.js';

const BOTH = synthConfig(`tasks:\n  churn:\n    query: ${CHURN}\n  fraud:\n    query: ${FRAUD}\n`);
const FRAUD_ONLY = synthConfig(`tasks:\n  fraud:\n    query: ${FRAUD}\n`);
/** rows after the fraud task's first validation anchor that carry a sales channel no earlier row has */
const LATE_CHANNEL = '9';

let fx: SynthFixture;
let cfg: Config;
let fraud: BuildResult;
let churn: BuildResult;
let fraudCut: number;
let churnCut: number;

const iso = (t: number): string => new Date(t * 1000).toISOString().replace('T', ' ').slice(0, 19);

beforeAll(async () => {
  fx = await tinySynth(BOTH);
  cfg = loadConfig(fx.config, { cwd: fx.dir, artifacts: fx.artifacts });
  // The cut-offs from the data's own time range, as the split computes them.
  const range = (await duckRows(`SELECT epoch(min(t_dat::TIMESTAMP)) AS lo, epoch(max(t_dat::TIMESTAMP)) AS hi FROM '${join(fx.dir, 'transactions.csv')}'`))[0]!;
  const ranges = { transactions: { time_range: [Number(range.lo), Number(range.hi)] as [number, number] } };
  fraudCut = firstValAnchor(cfg.taskSpecs.fraud!, ranges)!;
  churnCut = firstValAnchor(cfg.taskSpecs.churn!, ranges)!;
  // A few rows after the fraud cut-off get a channel value the data never had before it.
  const path = join(fx.dir, 'transactions.csv');
  const lines = readFileSync(path, 'utf8').trimEnd().split('\n');
  const header = lines[0]!.split(',');
  const [t, ch] = [header.indexOf('t_dat'), header.indexOf('sales_channel_id')];
  let marked = 0;
  const out = lines.map((l, i) => {
    const f = l.split(',');
    if (i === 0 || marked >= 5 || Date.parse(`${f[t]!.replace(' ', 'T')}Z`) / 1000 <= fraudCut) return l;
    marked++;
    f[ch] = LATE_CHANNEL;
    return f.join(',');
  });
  writeFileSync(path, `${out.join('\n')}\n`);
  expect(marked).toBe(5);
  cfg = loadConfig(fx.config, { cwd: fx.dir, artifacts: fx.artifacts });
  fraud = await buildGraph(cfg, { fit: { task: 'fraud' } });
  churn = await buildGraph(cfg, { fit: { task: 'churn' } });
}, 120_000);

afterAll(() => fx?.cleanup());

describe('fit_until per run', () => {
  it("each task's graph is fitted up to its own first validation anchor; churn's twenty test anchors put its cut-off months earlier", () => {
    expect(fraud.manifest.fit_until).toBe(fraudCut);
    expect(churn.manifest.fit_until).toBe(churnCut);
    expect(fraudCut - churnCut).toBeGreaterThan(90 * 86400);
    expect(churn.dir).not.toBe(fraud.dir);
  });

  it('a build without a task takes the latest cut-off of all tasks (every run\'s vocabulary is in it), sharing the build of the task that set it', async () => {
    const all = await buildGraph(cfg);
    expect(all.manifest.fit_until).toBe(fraudCut);
    expect(all.dir).toBe(fraud.dir);
    expect(all.cached).toBe(true);
  });

  it('another task in the config does not move a task\'s cut-off: the fraud-only config reuses the same build', async () => {
    writeFileSync(fx.config, FRAUD_ONLY);
    try {
      const alone = await buildGraph(loadConfig(fx.config, { cwd: fx.dir, artifacts: fx.artifacts }), { fit: { task: 'fraud' } });
      expect(alone.manifest.fit_until).toBe(fraudCut);
      expect(alone.dir).toBe(fraud.dir);
      expect(alone.cached).toBe(true);
    } finally {
      writeFileSync(fx.config, BOTH);
    }
  });

  it('the statistics see no row after the cut-off: price mean/std are those of the rows up to it, which differ from all rows', async () => {
    const csv = `'${join(fx.dir, 'transactions.csv')}'`;
    for (const [g, cut] of [[fraud, fraudCut], [churn, churnCut]] as const) {
      const fitted = g.manifest.tables.transactions!.numeric.find((c) => c.name === 'price')!;
      const [upTo, all] = await duckRows(
        `SELECT avg(price) AS mean, stddev_pop(price) AS std FROM ${csv} WHERE t_dat::TIMESTAMP <= '${iso(cut)}' UNION ALL SELECT avg(price), stddev_pop(price) FROM ${csv}`,
      );
      expect(fitted.mean).toBeCloseTo(Number(upTo!.mean), 9);
      expect(fitted.std).toBeCloseTo(Number(upTo!.std), 9);
      expect(Math.abs(Number(all!.mean) - fitted.mean)).toBeGreaterThan(1e-6);
    }
  });

  it('a categorical value first seen after the cut-off is out of vocabulary', () => {
    const channel = fraud.manifest.tables.transactions!.categorical.find((c) => c.name === 'sales_channel_id')!;
    expect(channel.vocab.length).toBeGreaterThan(0);
    expect(channel.vocab).not.toContain(LATE_CHANNEL);
  });

  it("a run's later stages rebuild at the fit_until it recorded, which is the run's own graph", async () => {
    const pinned = await buildGraph(cfg, { fit: runFit(fx.dir, { task: 'fraud', graph: { fit_until: fraudCut } }) });
    expect(pinned.dir).toBe(fraud.dir);
    expect(pinned.cached).toBe(true);
  });
});
