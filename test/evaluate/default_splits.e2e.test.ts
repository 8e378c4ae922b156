/**
 * The default split on the bundled data and on each realism preset (tiny): every task's validation and
 * test sets are non-empty and come from its target table, and entity tasks get many test anchors — 20 on
 * the weekly retail data (29 whole weeks), 8 on the 14-day presets (15 windows), where the data allows no
 * more while leaving room for validation and a sixth of it for training.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load.js';
import { setQuiet } from '../../src/core/log.js';
import { buildGraph } from '../../src/graph/build.js';
import { Graph } from '../../src/graph/graph.js';
import { taskSplit, targetTimeRange } from '../../src/task/split.js';
import { buildTrainingTables } from '../../src/train/examples.js';

const ROOT = join(import.meta.dirname, '..', '..');
const BIN = join(ROOT, 'bin', 'gnnctl.js');
const root = mkdtempSync(join(tmpdir(), 'gnnctl-splits-'));
setQuiet(true);
afterAll(() => {
  rmSync(root, { recursive: true, force: true });
  setQuiet(false);
});

/** A config of configs/ pointed at `data` (a preset synthesized there, or the bundled folder). */
function configFor(file: string, folder: string, data: string): string {
  const text = readFileSync(join(ROOT, 'configs', file), 'utf8').replaceAll(`datasets/${folder}/`, `${data}/`);
  const path = join(root, `${folder}.yaml`);
  writeFileSync(path, text);
  return path;
}

const cases = [
  { name: 'bundled retail (small)', file: 'retail.yaml', folder: 'retail', preset: null, testAnchors: 20 },
  { name: 'retail preset (tiny)', file: 'retail.yaml', folder: 'retail', preset: 'retail', testAnchors: 20 },
  { name: 'retail-dates preset (tiny)', file: 'retail_dates.yaml', folder: 'retail_dates', preset: 'retail-dates', testAnchors: 20 },
  { name: 'bursty preset (tiny)', file: 'bursty.yaml', folder: 'bursty', preset: 'bursty', testAnchors: 8 },
  { name: 'ratings preset (tiny)', file: 'ratings.yaml', folder: 'ratings', preset: 'ratings', testAnchors: 8 },
];

describe.each(cases)('$name: default splits', ({ file, folder, preset, testAnchors }) => {
  it('every task has validation and test examples from its target table; entity tasks have the test anchors the data allows', async () => {
    // The bundled data is what the README's first command generates (a clean checkout has none of it).
    const data = join(root, preset ?? 'bundled');
    const synth = preset ? ['--preset', preset, '--size', 'tiny'] : ['--size', 'small'];
    const r = spawnSync(process.execPath, [BIN, 'datasets', 'synth', ...synth, '--out', data, '--quiet'], { encoding: 'utf8', timeout: 240_000 });
    expect(r.status, r.stderr).toBe(0);
    const cfg = loadConfig(configFor(file, folder, data), { cwd: root, artifacts: join(root, 'artifacts') });
    const built = await buildGraph(cfg);
    const graph = Graph.load(built.dir);
    for (const task of Object.values(cfg.taskSpecs)) {
      const range = targetTimeRange(task, graph.manifest.tables);
      const split = taskSplit(task, range);
      const tables = await buildTrainingTables(built.dir, graph.manifest, task, split, { seed: 0 });
      expect(tables.val.nodes.length, `${task.name} val`).toBeGreaterThan(0);
      expect(tables.test.nodes.length, `${task.name} test`).toBeGreaterThan(0);
      expect(tables.train.nodes.length, `${task.name} train`).toBeGreaterThan(0);
      if (task.query.target.kind === 'entity') {
        expect(split.testAnchors.length, `${task.name} test anchors`).toBe(testAnchors);
        expect(split.testAnchors[split.testAnchors.length - 1]! + split.window).toBeLessThanOrEqual(Math.ceil(range.max / 86400) * 86400);
        expect(new Set(Array.from(tables.test.anchors)).size, `${task.name}: anchors with examples`).toBe(testAnchors - (tables.empty_anchors?.test.length ?? 0));
      }
    }
  }, 300_000);
});
