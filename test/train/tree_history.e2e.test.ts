/**
 * The trees read the target's history, never its future (src/train/tree_features.ts, "target history").
 *
 * Entity task on generated data: every entity has one event a week and the label is the value of next
 * week's event (`SUM(events.value, 0, 7, days) > 0`), a deterministic function of one row after the anchor.
 * - values drawn afresh every week: the past says nothing, so trees that never read a row at or after
 *   the anchor score chance (measured: test AUROC 0.49); the control copies each event a week early into another table (a leak the
 *   aggregates do read) and the same trees learn it (1.00), so the chance result is no artefact of weak trees;
 * - values repeating a hidden per-entity bit (85% of weeks): the history aggregates carry the label
 *   (0.85, the Bayes rate; with the column left out of the trees, 0.59).
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load.js';
import { setQuiet } from '../../src/core/log.js';
import { Rng } from '../../src/core/rng.js';
import { buildGraph } from '../../src/graph/build.js';
import { taskSplit } from '../../src/task/split.js';
import { trainTreeModel } from '../../src/train/tree_model.js';
import { treeFeatureListing } from '../../src/train/tree_features.js';

const DAY = 86400;
const START = Date.parse('2021-01-04T00:00:00Z') / 1000; // a Monday: anchors fall on week boundaries
const ENTITIES = 300;
const WEEKS = 24;

const CONFIG = (leak: boolean) => `name: tree_history
seed: 0
data:
  tables:
    entities: { path: entities.csv, primary_key: entity_id }
    events:
      path: events.csv
      primary_key: event_id
      time_column: t
      foreign_keys: { entity_id: entities }
      columns: { value: numerical }
${leak ? '    leaked: { path: leaked.csv, time_column: t, foreign_keys: { entity_id: entities }, columns: { peek: numerical } }\n' : ''}tasks:
  next_value:
    query: PREDICT SUM(events.value, 0, 7, days) > 0 FOR EACH entities.entity_id
    split: { window: 7 days, train_anchors: 12, val_anchors: 2, test_anchors: 4 }
`;

let root: string;
beforeAll(() => {
  setQuiet(true);
  root = mkdtempSync(join(tmpdir(), 'gnnctl-tree-history-'));
});
afterAll(() => {
  rmSync(root, { recursive: true, force: true });
  setQuiet(false);
});

/** Writes the data (`value(entity, week)`; `leak`: each event's value also dated a week early), builds the graph. */
async function build(name: string, value: (entity: number, week: number) => number, leak = false) {
  const dir = join(root, name);
  mkdirSync(join(dir, 'artifacts'), { recursive: true });
  writeFileSync(join(dir, 'entities.csv'), `entity_id\n${Array.from({ length: ENTITIES }, (_, i) => `e${i}`).join('\n')}\n`);
  const rows = ['event_id,t,entity_id,value'];
  const early = ['t,entity_id,peek'];
  let id = 0;
  for (let w = 0; w < WEEKS; w++) {
    for (let e = 0; e < ENTITIES; e++) {
      const t = START + w * 7 * DAY + (1 + (e % 6)) * DAY + (e % 24) * 3600;
      rows.push(`${id++},${new Date(t * 1000).toISOString()},e${e},${value(e, w)}`);
      early.push(`${new Date((t - 7 * DAY) * 1000).toISOString()},e${e},${value(e, w)}`);
    }
  }
  writeFileSync(join(dir, 'events.csv'), `${rows.join('\n')}\n`);
  if (leak) writeFileSync(join(dir, 'leaked.csv'), `${early.join('\n')}\n`);
  writeFileSync(join(dir, 'config.yaml'), CONFIG(leak));
  const cfg = loadConfig(join(dir, 'config.yaml'), { cwd: dir, artifacts: join(dir, 'artifacts') });
  const built = await buildGraph(cfg);
  return { cfg, built, task: cfg.taskSpecs.next_value! };
}

async function fit(b: Awaited<ReturnType<typeof build>>) {
  const range = b.built.manifest.time_range!;
  return trainTreeModel({ graphDir: b.built.dir, manifest: b.built.manifest, task: b.task, split: taskSplit(b.task, { min: range[0], max: range[1] }), gbdt: { max_iter: 60 } });
}

describe('tree features: the target column before the anchor is history, after it never', () => {
  it('label = a future row\'s value, drawn afresh each week: the trees score chance; the same label leaked a week early is learned', async () => {
    const rng = new Rng(21);
    const values = Array.from({ length: ENTITIES * WEEKS }, () => (rng.next() < 0.5 ? 1 : 0));
    const b = await build('future', (e, w) => values[w * ENTITIES + e]!);
    const listing = treeFeatureListing(b.built.manifest, b.task);
    const history = listing.aggregates.filter((a) => a.column === 'events.value');
    // the last value, the last-5/10 means and the windowed summaries, each saying why
    expect(history.map((a) => a.name)).toEqual(expect.arrayContaining(['events.entity_id:value_last', 'events.entity_id:value_mean_last5', 'events.entity_id:value_mean_last10', 'events.entity_id:value_mean_30d', 'events.entity_id:value_max_all']));
    for (const a of history) expect(a.reason).toMatch(/^target history: /);
    const r = await fit(b);
    expect(r.feature_names).toContain('events.entity_id:value_mean_last5');
    // 1,200 test examples: chance ± ~0.035 (two standard errors); reading the label row would give 1
    expect(Math.abs(r.main_metric.test - 0.5)).toBeLessThan(0.07);

    const leaked = await fit(await build('future-leaked', (e, w) => values[w * ENTITIES + e]!, true));
    expect(leaked.feature_names).toContain('leaked.entity_id:peek_last');
    expect(leaked.main_metric.test).toBeGreaterThan(0.9);
  }, 300_000);

  it('label repeats the entity\'s past values (a hidden bit, 85% of weeks): the trees find it', async () => {
    const rng = new Rng(22);
    const bit = Array.from({ length: ENTITIES }, () => (rng.next() < 0.5 ? 1 : 0));
    const values = Array.from({ length: ENTITIES * WEEKS }, (_, i) => (rng.next() < 0.85 ? bit[i % ENTITIES]! : 1 - bit[i % ENTITIES]!));
    const r = await fit(await build('past', (e, w) => values[w * ENTITIES + e]!));
    // the Bayes AUROC knowing the bit is 0.85; 1,200 test examples
    expect(r.main_metric.test).toBeGreaterThan(0.75);
  }, 300_000);
});
