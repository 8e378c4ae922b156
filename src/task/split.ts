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
  /** entity tasks: the newest val anchor; fact tasks: rows with val < t ≤ test are validation */
  valAnchor: number;
  /**
   * entity tasks: every validation anchor, oldest first, ending with `valAnchor` (one unless
   * `val_anchors` asks for more); fact tasks: [valAnchor]
   */
  valAnchors: number[];
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

/**
 * Spacing of extra validation anchors: the window split in `count` steps, whole days when the window is
 * whole days (so date-only data keeps its anchors on midnights, see the tie handling in docs/quality.md).
 */
export function valAnchorStride(window: number, count: number): number {
  if (count <= 1) return window;
  const step = window / count;
  return window % DAY === 0 ? Math.max(DAY, Math.floor(step / DAY) * DAY) : step;
}

/**
 * Anchors of a task. `valAnchorCount` > 1 (entity tasks) adds validation anchors stepping back from the
 * val anchor by `valAnchorStride`, and moves the training anchors back so that the newest training label
 * window ends at the oldest validation anchor: no training label overlaps a validation label window, and
 * no validation label window reaches past the test anchor (so model choice never sees the test period).
 */
export function taskSplit(task: TaskDefinition, timeRange: { min: number; max: number }, opts: { valAnchorCount?: number } = {}): TaskSplit {
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
  const valAnchors = [valAnchor];
  if (task.query.target.kind === 'entity') {
    const count = opts.valAnchorCount ?? 1;
    const stride = valAnchorStride(window, count);
    for (let k = 1; k < count; k++) {
      const a = valAnchor - k * stride;
      if (a <= timeRange.min) break;
      valAnchors.unshift(a);
    }
    for (let k = 1; k <= task.split.train_anchors; k++) {
      const a = valAnchors[0]! - k * window;
      if (a <= timeRange.min) break;
      trainAnchors.unshift(a);
    }
    if (trainAnchors.length === 0) {
      throw new DataError(`no training anchor fits in the data before the val anchor ${isoSeconds(valAnchors[0]!)}`, {
        where,
        hint: valAnchors.length > 1 ? `use fewer val_anchors (${valAnchors.length} move the training anchors back), more data or a shorter split.window` : 'use more data or a shorter split.window',
      });
    }
  }
  return { window, trainAnchors, valAnchor, valAnchors, testAnchor };
}
