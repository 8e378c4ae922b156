/**
 * What a predictive task is, independent of how the config file spells it: the parsed query, how its
 * anchors are split, and the training examples it produces. The config layer extends these with the
 * model block; every stage that needs "the task" reads these types.
 */
import { formatDuration } from '../core/duration.js';
import type { PredictiveQuery } from './pql.js';

/** How anchors are laid out (see `split.ts`); times are ISO strings as written in the config. */
export interface SplitSpec {
  /** anchor spacing in seconds */
  window?: number;
  /** the first test anchor (`test_anchor` is its older name) */
  test_timestamp?: string;
  test_anchor?: string;
  /** the first validation anchor (`val_anchor` is its older name) */
  val_timestamp?: string;
  val_anchor?: string;
  /** entity tasks: test anchors one window apart from the test timestamp ("auto": up to 20 where the data allows) */
  test_anchors?: number | 'auto';
  /** entity tasks: training anchors stepping back from the val timestamp ("all": back to the start of the data or train_from) */
  train_anchors: number | 'all';
  /** entity tasks: validation anchors one window apart (a count, or "auto": decided from the validation set's size) */
  val_anchors?: number | 'auto';
  /** no training anchor (entity tasks) or training row (fact tasks) before this time */
  train_from?: string;
  max_train_examples?: number;
}

export interface TaskDefinition {
  name: string;
  query: PredictiveQuery;
  split: SplitSpec;
  /**
   * fact-row tasks: seconds after a row's time at which its label is known (`tasks.<name>.label_delay`);
   * other rows' labels are inputs from then on. Absent: other rows' labels are never inputs.
   */
  label_delay?: number;
}

/**
 * A parsed RTI hop path `fact.fk->parent.pk->child.fk`: the child rows sharing the fact row's parent; or,
 * for entity tasks, `entity.pk->child.fk` (the entity's own child rows), stored with fact = parent.
 */
export interface HopPath {
  text: string;
  fact_table: string;
  fact_column: string;
  parent_table: string;
  parent_key: string;
  child_table: string;
  child_column: string;
  max_length: number;
}

/** Whether a hop path starts at an entity's own key (`<entity>.<primary key>-><child>.<fk>`). */
export function isEntityHopPath(hop: HopPath): boolean {
  return hop.fact_table === hop.parent_table && hop.fact_column === hop.parent_key;
}

/** Training examples of one split: the entity's node id, its anchor time (seconds) and its label. */
export interface Examples {
  nodes: Int32Array;
  anchors: Float64Array;
  /** ranking: the number of label items */
  labels: Float32Array;
  /** ranking only: each example's label items (node ids of the item table), ascending */
  label_items?: ItemLists;
}

/** Lists of item node ids in CSR form: example i's items are `items[offsets[i] .. offsets[i + 1])`. */
export interface ItemLists {
  offsets: Int32Array;
  items: Int32Array;
}

/**
 * A column a task's label is made of, and how much of it an input may read:
 * - `history` set (entity tasks): the aggregated column's values before the anchor are the entity's
 *   history and are inputs, as in RelBench; the label comes only from the window after the anchor, and the
 *   sampler never reaches a row with time > anchor.
 * - `label_delay` set (fact-row tasks): other rows' labels, once `time + label_delay ≤ anchor`; the row's
 *   own label (time = anchor) never, as label_delay > 0.
 * - neither: never an input.
 * Trees and the no-graph baseline leave every listed column out; the GNN's encoders read them as above.
 */
export interface TargetColumn {
  table: string;
  column: string;
  reason: string;
  history?: true;
  label_delay?: number;
}

/** The columns a task's label is made of: the fact target column, or the column its target aggregates. */
export function targetExclusions(task: TaskDefinition): TargetColumn[] {
  const t = task.query.target;
  if (t.kind === 'fact') {
    const { table, column } = t.column;
    if (task.label_delay === undefined) return [{ table, column, reason: `target of task ${task.name}` }];
    return [{ table, column, reason: `target of task ${task.name}: the row's own label never, other rows' labels ${formatDuration(task.label_delay)} after their time (label_delay)`, label_delay: task.label_delay }];
  }
  // A ranking target lists a foreign key: the purchase edges it defines are the graph itself (the sampler
  // sees only those before the anchor), not a column to leave out.
  if (t.top_k !== null) return [];
  if (t.aggregate.column) {
    // PQL refuses target windows starting before the anchor, so history and label never overlap.
    return [{ table: t.aggregate.table, column: t.aggregate.column, reason: `aggregated by the target of task ${task.name}: values before the anchor are history (inputs)`, history: true }];
  }
  return [];
}
