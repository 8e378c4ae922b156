import { describe, expect, it } from 'vitest';
import type { TaskSpec } from '../../src/config/load.js';
import { modelSchema, taskSchema } from '../../src/config/schema.js';
import { DataError } from '../../src/core/errors.js';
import { parseQuery } from '../../src/task/pql.js';
import { taskSplit } from '../../src/task/split.js';
import { checkSplits, splitWarnings, testFigures } from '../../src/train/split_figures.js';
import type { TrainingTables } from '../../src/train/examples.js';

const t = (iso: string): number => Date.parse(iso) / 1000;
const DNF = 'PREDICT COUNT(results.*, 0, 30, days) > 0 FOR EACH drivers.driver_id';
const task = (split: Record<string, unknown> = {}): TaskSpec => ({ name: 'dnf', query: parseQuery(DNF), split: taskSchema.shape.split.parse(split), model: modelSchema.parse({}) });
const RANGE = { min: t('2000-01-01T00:00:00Z'), max: t('2022-07-31T00:00:00Z'), table: 'results' };

function examples(anchors: number[], labels: number[]) {
  return { nodes: Int32Array.from(anchors, (_, i) => i), anchors: Float64Array.from(anchors), labels: Float32Array.from(labels) };
}

describe('checkSplits', () => {
  it('an empty test split names the target table, its last time, the empty anchors and the setting to move', () => {
    const tk = task({ test_anchors: 3 });
    const split = taskSplit(tk, RANGE);
    const tables: TrainingTables = {
      train: examples([split.trainAnchors[0]!], [1]),
      val: examples([split.valAnchor], [0]),
      test: examples([], []),
      empty_anchors: { train: [], val: [], test: split.testAnchors },
    };
    let err: unknown = null;
    try {
      checkSplits(tk, tables, split);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(DataError);
    expect((err as DataError).message).toMatch(/task dnf has no test examples \(3 anchor\(s\) .*, 3 with no results row in their window\); results's last time is 2022-07-31T00:00:00Z/);
    expect((err as DataError).hint).toMatch(/tasks\.dnf\.split\.test_timestamp \/ test_anchors/);
  });

  it('anchors with empty windows are only counted (a warning) while every split has examples', () => {
    const tk = task({ test_anchors: 2 });
    const split = taskSplit(tk, RANGE);
    const labels = Array.from({ length: 200 }, (_, i) => i % 2);
    const tables: TrainingTables = {
      train: examples(Array(200).fill(split.trainAnchors[0]!), labels),
      val: examples(Array(200).fill(split.valAnchor), labels),
      test: examples(Array(200).fill(split.testAnchors[1]!), labels),
      empty_anchors: { train: [], val: [], test: [split.testAnchors[0]!] },
    };
    expect(() => checkSplits(tk, tables, split)).not.toThrow();
    const w = splitWarnings(tk, tables);
    expect(w).toContain('task dnf: 1 anchor(s) have no row of the target table in their label window and contribute no examples (train 0, val 0, test 1)');
    expect(w.join('\n')).toMatch(/only 200 training examples/);
    const f = testFigures(tk, tables, Float32Array.from(labels, (y, i) => (y ? 0.6 : 0.4) + (i % 7) / 100), null, 1);
    expect(f.test_by_anchor.map((a) => a.n)).toEqual([200]);
    expect(f.empty_anchors.test).toHaveLength(1);
    expect(f.intervals.lift).toBeNull();
    expect(f.intervals.test.auroc).toEqual([1, 1]);
  });
});
