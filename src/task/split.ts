/**
 * Anchor times of a task. Entity tasks are trained at a sequence of anchors: test = newest time − window,
 * val = test − window, and `train_anchors` more stepping back from val by the window (as RelBench does).
 * Fact-row tasks split rows by their own time at the same val and test boundaries.
 */
import { DataError } from '../core/errors.js';
import { isoSeconds } from '../core/duration.js';
import { parseIsoTime, TIME_HINT } from '../core/time.js';
import type { TaskDefinition } from './task_spec.js';
import { targetWindow } from './pql.js';

const DAY = 86400;
const FACT_WINDOW = 7 * DAY;

export interface TaskSplit {
  /** anchor spacing in seconds */
  window: number;
  /** entity tasks: training anchors, oldest first (empty for fact tasks) */
  trainAnchors: number[];
  /** entity tasks: the val anchor; fact tasks: rows with val < t ≤ test are validation */
  valAnchor: number;
  /** entity tasks: the test anchor; fact tasks: rows with t > test are test */
  testAnchor: number;
}

/** Newest time rounded up to midnight when the window is whole days, so windows cover whole days. */
export function alignedEnd(maxTime: number, window: number): number {
  return window % DAY === 0 ? Math.ceil(maxTime / DAY) * DAY : maxTime;
}

/** Epoch seconds of an ISO time from a config value or flag; a DataError naming `where` when it is not one. */
export function parseTime(text: string, where: string): number {
  const t = parseIsoTime(text);
  if (t === null) throw new DataError(`not a time: "${text}"`, { where, hint: TIME_HINT });
  return t;
}

export function taskSplit(task: TaskDefinition, timeRange: { min: number; max: number }): TaskSplit {
  const where = `tasks.${task.name}.split`;
  const window = task.split.window ?? targetWindow(task.query) ?? FACT_WINDOW;
  const end = alignedEnd(timeRange.max, window);
  const testAnchor = task.split.test_anchor ? parseTime(task.split.test_anchor, `${where}.test_anchor`) : end - window;
  const valAnchor = task.split.val_anchor ? parseTime(task.split.val_anchor, `${where}.val_anchor`) : testAnchor - window;
  if (!(valAnchor < testAnchor)) {
    throw new DataError(`val anchor ${isoSeconds(valAnchor)} is not before the test anchor ${isoSeconds(testAnchor)}`, { where, hint: 'set val_anchor earlier than test_anchor' });
  }
  if (valAnchor <= timeRange.min) {
    throw new DataError(`the data span ${isoSeconds(timeRange.min)} … ${isoSeconds(timeRange.max)} is too short for a ${window / DAY}-day window: the val anchor ${isoSeconds(valAnchor)} precedes all data`, {
      where,
      hint: 'use more data or a shorter split.window',
    });
  }
  const trainAnchors: number[] = [];
  if (task.query.target.kind === 'entity') {
    for (let k = 1; k <= task.split.train_anchors; k++) {
      const a = valAnchor - k * window;
      if (a <= timeRange.min) break;
      trainAnchors.unshift(a);
    }
    if (trainAnchors.length === 0) {
      throw new DataError(`no training anchor fits in the data before the val anchor ${isoSeconds(valAnchor)}`, { where, hint: 'use more data or a shorter split.window' });
    }
  }
  return { window, trainAnchors, valAnchor, testAnchor };
}
