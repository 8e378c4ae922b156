/**
 * The target column's history is an input, its future never is (docs/tasks.md "Target history").
 *
 * Entity task on generated data: every entity has exactly one event a week, and the label is the value of
 * the next week's event (`SUM(events.value, 0, 7, days) > 0`), a deterministic function of one future row.
 * - values drawn afresh every week: the past says nothing, so a model that never sees the future scores
 *   chance (measured: test AUROC 0.51); the control copies the label rows a week early, a leak, and the
 *   same model learns them (0.98);
 * - values that follow a hidden per-entity bit: the past values predict the label, and the GNN reads them
 *   (0.85, the Bayes rate; with the column left out of every input it scored 0.56).
 * Fact-row task: another row's label is visible at t only once its time + label_delay ≤ t; the row's
 * own label never.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { selectBackend } from '../../src/compute/backend.js';
import { loadConfig } from '../../src/config/load.js';
import type { ConfigError } from '../../src/core/errors.js';
import { setQuiet } from '../../src/core/log.js';
import { Rng } from '../../src/core/rng.js';
import { buildGraph } from '../../src/graph/build.js';
import { Graph } from '../../src/graph/graph.js';
import { bindFeatures, featureSpecFromGraph, leakedTargets } from '../../src/model/features.js';
import type { BinaryMetrics } from '../../src/task/metrics.js';
import { targetExclusions } from '../../src/task/task_spec.js';
import { train } from '../../src/train/trainer.js';

const DAY = 86400;
const START = Date.parse('2021-01-04T00:00:00Z') / 1000; // a Monday: anchors fall on week boundaries
const ENTITIES = 300;
const WEEKS = 24;

const CONFIG = (labelDelay = '', leak = false) => `name: history
seed: 0
data:
  tables:
    entities: { path: entities.csv, primary_key: entity_id }
    events:
      path: events.csv
      primary_key: event_id
      time_column: t
      foreign_keys: { entity_id: entities }
${leak ? '    leaked: { path: leaked.csv, time_column: t, foreign_keys: { entity_id: entities } }\n' : ''}tasks:
  next_value:
    query: PREDICT SUM(events.value, 0, 7, days) > 0 FOR EACH entities.entity_id
    split: { window: 7 days, train_anchors: 12, val_anchors: 2, test_anchors: 4 }
    model: { kind: gnn }
  value_row:
    query: PREDICT events.value = 1 FOR EACH events.event_id
${labelDelay ? `    label_delay: ${labelDelay}\n` : ''}model: { layers: 1, num_neighbors: [8], channels: 16, categorical_dim: 4, epochs: 4, batch_size: 128, patience: 4 }
`;

/**
 * One event per entity per week, at a fixed weekday and hour of the entity's; `value(entity, week)`.
 * `leak`: also a table holding each event's value dated a week early — the label row, visible before the
 * anchor, as a leak would make it.
 */
function writeData(dir: string, value: (entity: number, week: number) => number, labelDelay = '', leak = false): string {
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'entities.csv'), `entity_id\n${Array.from({ length: ENTITIES }, (_, i) => `e${i}`).join('\n')}\n`);
  const rows = ['event_id,t,entity_id,value'];
  let id = 0;
  for (let w = 0; w < WEEKS; w++) {
    for (let e = 0; e < ENTITIES; e++) {
      const t = START + w * 7 * DAY + (1 + (e % 6)) * DAY + (e % 24) * 3600;
      rows.push(`${id++},${new Date(t * 1000).toISOString()},e${e},${value(e, w)}`);
    }
  }
  writeFileSync(join(dir, 'events.csv'), `${rows.join('\n')}\n`);
  if (leak) {
    const early = rows.slice(1).map((r) => {
      const [, t, e, v] = r.split(',');
      return `${new Date(Date.parse(t!) - 7 * DAY * 1000).toISOString()},${e},${v}`;
    });
    writeFileSync(join(dir, 'leaked.csv'), `t,entity_id,peek\n${early.join('\n')}\n`);
  }
  const config = join(dir, 'config.yaml');
  writeFileSync(config, CONFIG(labelDelay, leak));
  mkdirSync(join(dir, 'artifacts'), { recursive: true });
  return config;
}

let root: string;
beforeAll(async () => {
  setQuiet(true);
  await selectBackend('wasm');
  root = mkdtempSync(join(tmpdir(), 'gnnctl-history-'));
});
afterAll(() => {
  rmSync(root, { recursive: true, force: true });
  setQuiet(false);
});

async function trainAuroc(name: string, value: (entity: number, week: number) => number, leak = false): Promise<{ val: number; test: number }> {
  const config = writeData(join(root, name), value, '', leak);
  const cfg = loadConfig(config, { cwd: join(root, name), artifacts: join(root, name, 'artifacts') });
  const r = await train({ cfg, task: 'next_value', backend: 'wasm', skip_baseline: true });
  return { val: (r.metrics.val as BinaryMetrics).auroc, test: (r.metrics.test as BinaryMetrics).auroc };
}

describe('entity task: the aggregated column before the anchor is an input, after it never', () => {
  it('the column is a plain input (and summed in the activity inputs), not excluded', async () => {
    const config = writeData(join(root, 'spec'), (e, w) => (e + w) % 2);
    const cfg = loadConfig(config, { cwd: join(root, 'spec'), artifacts: join(root, 'spec', 'artifacts') });
    const targets = targetExclusions(cfg.taskSpecs.next_value!);
    expect(targets).toEqual([{ table: 'events', column: 'value', reason: expect.stringContaining('values before the anchor are history'), history: true }]);
    const graph = Graph.load((await buildGraph(cfg)).dir);
    const spec = featureSpecFromGraph(graph, targets, 'entities');
    expect(spec.tables.events!.numeric.map((c) => c.name)).toEqual(['value']);
    expect(spec.tables.events!.numeric[0]!.label_delay).toBeUndefined();
    expect(spec.tables.entities!.activity![0]!.sums.map((s) => s.name)).toEqual(['value']);
    expect(spec.excluded).toEqual([]);
    // fine-tuning from a run that reads the history column is no leak
    expect(leakedTargets(spec, targets)).toEqual([]);
  }, 120_000);

  it('label = a future row\'s value, drawn afresh each week: the GNN scores chance', async () => {
    const rng = new Rng(11);
    const values = Array.from({ length: ENTITIES * WEEKS }, () => (rng.next() < 0.5 ? 1 : 0));
    const m = await trainAuroc('future', (e, w) => values[w * ENTITIES + e]!);
    // 1,200 test examples: chance ± ~0.035 (two standard errors); seeing the label row would give 1
    expect(Math.abs(m.test - 0.5)).toBeLessThan(0.07);
    expect(Math.abs(m.val - 0.5)).toBeLessThan(0.1);
    // the control: the same labels with their rows copied a week early (a leak) are learned
    const leaked = await trainAuroc('future-leaked', (e, w) => values[w * ENTITIES + e]!, true);
    expect(leaked.test).toBeGreaterThan(0.9);
  }, 600_000);

  it('label = a future row\'s value that follows the entity\'s past values: the GNN reads the history', async () => {
    const rng = new Rng(12);
    const bit = Array.from({ length: ENTITIES }, () => (rng.next() < 0.5 ? 1 : 0));
    const values = Array.from({ length: ENTITIES * WEEKS }, (_, i) => (rng.next() < 0.85 ? bit[i % ENTITIES]! : 1 - bit[i % ENTITIES]!));
    const m = await trainAuroc('past', (e, w) => values[w * ENTITIES + e]!);
    // the Bayes AUROC knowing the bit is 0.85; 1,200 test examples
    expect(m.test).toBeGreaterThan(0.75);
  }, 600_000);
});

describe('fact-row task: other rows\' labels after label_delay, the row\'s own never', () => {
  it('a label inside the delay is not visible; one past it is; the root\'s own never', async () => {
    const dir = join(root, 'fact');
    const config = writeData(dir, (e, w) => (e + w) % 2, '10 days');
    const cfg = loadConfig(config, { cwd: dir, artifacts: join(dir, 'artifacts') });
    const task = cfg.taskSpecs.value_row!;
    expect(task.label_delay).toBe(10 * DAY);
    const targets = targetExclusions(task);
    expect(targets).toEqual([{ table: 'events', column: 'value', reason: expect.stringContaining('10 days after their time'), label_delay: 10 * DAY }]);
    const graph = Graph.load((await buildGraph(cfg)).dir);
    const spec = featureSpecFromGraph(graph, targets, 'events');
    expect(spec.tables.events!.numeric).toEqual([expect.objectContaining({ name: 'value', label_delay: 10 * DAY })]);
    // a delayed label is no activity sum (those total every row up to the anchor)
    expect(spec.tables.entities!.activity).toBeUndefined();
    expect(spec.excluded).toEqual(targets);

    const events = bindFeatures(graph, spec).events!;
    const time = graph.table('events').time!;
    const values = graph.table('events').numeric.find((c) => c.meta.name === 'value')!.values;
    const v = 5 * ENTITIES; // a row of week 5, label 1 or 0
    const t = time[v]!;
    const read = (node: number, anchor: number): [number, number] => {
      const num = new Float32Array(events.num_dim);
      events.gather(Int32Array.of(node), () => anchor, null, num, new Int32Array(Math.max(1, events.catCount)));
      return [num[0]!, num[1]!]; // (standardized value, null flag)
    };
    const m = spec.tables.events!.numeric[0]!;
    const z = (values[v]! - m.mean) / m.std;
    expect(read(v, t)).toEqual([0, 1]); // the row itself, at its own time
    expect(read(v, t + 10 * DAY - 1)).toEqual([0, 1]); // another row's example one second inside the delay
    const [x, flag] = read(v, t + 10 * DAY); // exactly when it arrives
    expect(flag).toBe(0);
    expect(x).toBeCloseTo(z, 5);

    // without label_delay the column is left out entirely
    const never = targetExclusions({ ...task, label_delay: undefined });
    expect(featureSpecFromGraph(graph, never, 'events').tables.events!.numeric).toEqual([]);
    // fine-tuning: a spec reading the label plainly, or sooner, leaks; the same delay does not
    expect(leakedTargets(featureSpecFromGraph(graph, [], 'events'), targets)).toEqual(targets);
    expect(leakedTargets(featureSpecFromGraph(graph, [{ ...targets[0]!, label_delay: DAY }], 'events'), targets)).toEqual(targets);
    expect(leakedTargets(spec, targets)).toEqual([]);
  }, 120_000);

  it('label_delay must be positive and is for fact-row tasks only', () => {
    const dir = join(root, 'bad');
    const config = writeData(dir, () => 0, '0');
    const problems = (): string => {
      try {
        loadConfig(config, { cwd: dir });
      } catch (e) {
        return (e as ConfigError).describe();
      }
      return 'no error';
    };
    expect(problems()).toMatch(/tasks\.value_row\.label_delay.*label_delay must be positive/);
    writeFileSync(config, CONFIG().replace('    model: { kind: gnn }\n', '    model: { kind: gnn }\n    label_delay: 3 days\n'));
    expect(problems()).toMatch(/tasks\.next_value\.label_delay.*not a fact-row task, so label_delay does not apply/);
  });
});
