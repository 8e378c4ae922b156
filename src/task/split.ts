/**
 * Anchor times of a task, as RelBench lays them out. Everything is measured on the task's **target
 * table** (the table the target aggregates, or the fact table): its newest time, rounded up to midnight
 * for whole-day windows, is the end of the data, and the last label window ends there, never at an
 * unrelated table's future-dated rows (a calendar of scheduled races, a price list valid next year).
 *
 * Entity tasks: `test_anchors` test anchors step forward one window at a time from `test_timestamp`,
 * `val_anchors` validation anchors step forward from `val_timestamp` with their windows ending by the
 * test timestamp, and `train_anchors` (or "all") training anchors step back from `val_timestamp` so the
 * newest training label window ends where validation starts (and none starts before `train_from`).
 * Fact-row tasks split rows by their own time at the val and test timestamps (training rows from
 * `train_from` on).
 */
import { DataError } from '../core/errors.js';
import { isoSeconds } from '../core/duration.js';
import { parseIsoTime, TIME_HINT } from '../core/time.js';
import type { TaskDefinition } from './task_spec.js';
import { targetWindow } from './pql.js';

const DAY = 86400;
const FACT_WINDOW = 7 * DAY;
/** `test_anchors: auto` asks for this many test anchors (RelBench evaluates its entity tasks over up to 40). */
export const AUTO_TEST_ANCHORS = 20;
/** The most validation anchors `val_anchors: auto` picks (train/validation.ts); fit_until must precede all of them. */
export const AUTO_VAL_ANCHORS_MAX = 4;

export interface TaskSplit {
  /** anchor spacing in seconds */
  window: number;
  /** the table whose times set the anchors (the target's table) */
  table: string;
  /** the target table's newest time (epoch seconds) */
  dataEnd: number;
  /** entity tasks: training anchors, oldest first (empty for fact tasks) */
  trainAnchors: number[];
  /** training rows/anchors start here (`split.train_from`), null: from the start of the data */
  trainFrom: number | null;
  /** entity tasks: the newest val anchor; fact tasks: rows with val < t ≤ test are validation */
  valAnchor: number;
  /** entity tasks: every validation anchor, oldest first (the first is `val_timestamp`); fact tasks: [valAnchor] */
  valAnchors: number[];
  /** entity tasks: the first test anchor (`test_timestamp`); fact tasks: rows with t > test are test */
  testAnchor: number;
  /** entity tasks: every test anchor, oldest first, one window apart; fact tasks: [testAnchor] */
  testAnchors: number[];
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

/** The table whose rows define the task's labels: the aggregated table (entity tasks) or the fact table. */
export function targetTable(task: TaskDefinition): string {
  const t = task.query.target;
  return t.kind === 'fact' ? t.column.table : t.aggregate.table;
}

/** The target table's time range (epoch seconds), from the per-table ranges a graph manifest records. */
export function targetTimeRange(task: TaskDefinition, tables: Record<string, { time_range: [number, number] | null } | undefined>): { min: number; max: number; table: string } {
  const table = targetTable(task);
  const range = tables[table]?.time_range;
  if (!range) {
    throw new DataError(`task ${task.name}: its target table ${table} has no time column, so there are no anchor times to split at`, {
      where: `tasks.${task.name}.query`,
      hint: `declare data.tables.${table}.time_column`,
    });
  }
  return { min: range[0], max: range[1], table };
}

/** A configured time of the split (`val_timestamp` or its older name `val_anchor`), in epoch seconds. */
function configuredTime(task: TaskDefinition, key: 'test' | 'val'): number | null {
  const s = task.split;
  const [text, name] = key === 'test' ? [s.test_timestamp ?? s.test_anchor, s.test_timestamp ? 'test_timestamp' : 'test_anchor'] : [s.val_timestamp ?? s.val_anchor, s.val_timestamp ? 'val_timestamp' : 'val_anchor'];
  return text ? parseTime(text, `tasks.${task.name}.split.${name}`) : null;
}

/**
 * Anchors of a task over its target table's time range `range`. `valAnchorCount` overrides
 * `split.val_anchors` ("auto" is decided by the trainer from the validation set's size; 1 until then).
 */
export function taskSplit(task: TaskDefinition, range: { min: number; max: number; table?: string }, opts: { valAnchorCount?: number } = {}): TaskSplit {
  const where = `tasks.${task.name}.split`;
  const table = range.table ?? targetTable(task);
  const window = task.split.window ?? targetWindow(task.query) ?? FACT_WINDOW;
  const end = alignedEnd(range.max, window);
  const trainFrom = task.split.train_from ? parseTime(task.split.train_from, `${where}.train_from`) : null;
  const lastTime = `${table}'s last time is ${isoSeconds(range.max)}`;
  const entity = task.query.target.kind === 'entity';
  const valCount = entity ? (opts.valAnchorCount ?? (typeof task.split.val_anchors === 'number' ? task.split.val_anchors : 1)) : 1;
  const testSetting = task.split.test_anchors ?? 'auto';
  const explicitTest = configuredTime(task, 'test');
  const explicitVal = configuredTime(task, 'val');

  let testAnchor: number;
  if (explicitTest !== null) testAnchor = explicitTest;
  else if (explicitVal !== null) testAnchor = explicitVal + valCount * window;
  else if (!entity) testAnchor = end - window;
  else {
    // Leave room for the most validation anchors "auto" may pick and a sixth of the data's windows (at least
    // three) for training. The test period does not depend on the validation count the trainer measures, so
    // the deep run, its distillation and `evaluate` share it.
    const windows = Math.floor((end - range.min) / window);
    const valRoom = typeof task.split.val_anchors === 'number' ? task.split.val_anchors : AUTO_VAL_ANCHORS_MAX;
    const count = testSetting === 'auto' ? Math.max(1, Math.min(AUTO_TEST_ANCHORS, windows - valRoom - Math.max(3, Math.ceil(windows / 6)))) : testSetting;
    testAnchor = end - count * window;
  }
  const valAnchor0 = explicitVal ?? testAnchor - valCount * window;
  if (!(valAnchor0 < testAnchor)) {
    throw new DataError(`val timestamp ${isoSeconds(valAnchor0)} is not before the test timestamp ${isoSeconds(testAnchor)}`, { where, hint: 'set val_timestamp earlier than test_timestamp' });
  }
  if (valAnchor0 <= range.min) {
    throw new DataError(`the data of ${table} (${isoSeconds(range.min)} … ${isoSeconds(range.max)}) is too short for a ${window / DAY}-day window: the val timestamp ${isoSeconds(valAnchor0)} precedes all of it`, {
      where,
      hint: 'use more data, a shorter split.window, or fewer test_anchors / val_anchors',
    });
  }
  if (!entity) {
    if (trainFrom !== null && trainFrom >= valAnchor0) {
      throw new DataError(`train_from ${isoSeconds(trainFrom)} is not before the val timestamp ${isoSeconds(valAnchor0)}`, { where: `${where}.train_from`, hint: 'set train_from earlier, or leave it out' });
    }
    return { window, table, dataEnd: range.max, trainAnchors: [], trainFrom, valAnchor: valAnchor0, valAnchors: [valAnchor0], testAnchor, testAnchors: [testAnchor] };
  }

  // Test anchors one window apart while the window ends by the end of the target data (at least the first).
  const testAnchors = [testAnchor];
  const testCount = testSetting === 'auto' ? AUTO_TEST_ANCHORS : testSetting;
  while (testAnchors.length < testCount && testAnchors[testAnchors.length - 1]! + 2 * window <= end) testAnchors.push(testAnchors[testAnchors.length - 1]! + window);
  // Validation anchors: their label windows end by the test timestamp, so model choice never sees the test period.
  const valAnchors = [valAnchor0];
  while (valAnchors.length < valCount && valAnchors[valAnchors.length - 1]! + 2 * window <= testAnchor) valAnchors.push(valAnchors[valAnchors.length - 1]! + window);

  const trainAnchors: number[] = [];
  const wanted = task.split.train_anchors === 'all' ? Number.POSITIVE_INFINITY : task.split.train_anchors;
  for (let a = valAnchor0 - window; trainAnchors.length < wanted; a -= window) {
    if (a <= range.min || (trainFrom !== null && a < trainFrom)) break;
    trainAnchors.unshift(a);
  }
  if (trainAnchors.length === 0) {
    throw new DataError(`no training anchor fits between ${trainFrom !== null ? `train_from ${isoSeconds(trainFrom)}` : `the start of ${table} (${isoSeconds(range.min)})`} and the val timestamp ${isoSeconds(valAnchor0)} (${lastTime})`, {
      where,
      hint: `use fewer test_anchors / val_anchors${trainFrom !== null ? ', an earlier train_from' : ''}, more data or a shorter split.window`,
    });
  }
  return { window, table, dataEnd: range.max, trainAnchors, trainFrom, valAnchor: valAnchors[valAnchors.length - 1]!, valAnchors, testAnchor, testAnchors };
}
