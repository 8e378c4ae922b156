/**
 * Predictive queries: the subset of Kumo's PQL that gnnctl trains on.
 *
 *   PREDICT <target> FOR EACH <table>.<primary key> [WHERE <condition>]
 *
 * - Entity targets: `COUNT(t.*, a, b, unit)`, `SUM|AVG|MIN|MAX(t.col, a, b, unit)`, `EXISTS(t.*, a, b, unit)`,
 *   optionally compared (`= 0`, `> 3`, …) → binary classification; a bare aggregate → regression. The window
 *   is `(anchor + a, anchor + b]` in `days|hours|minutes`.
 * - Fact targets: `t.col = value` (binary) or a bare `t.col` (regression), predicted for each row of a table
 *   with a time column, at the row's own time.
 * - WHERE filters entities at the anchor: comparisons of aggregates over past windows (b ≤ 0) or of the
 *   entity's own columns, joined with AND / OR / NOT and parentheses.
 *
 * - Ranking targets, as Kumo writes them: `LIST_DISTINCT(t.fk, a, b, unit) RANK TOP k` → the distinct items
 *   (the rows of the table `t.fk` points to) in the window after each anchor, to be predicted as a top-k list;
 *   seeds are the entities with at least one item in the window (and the WHERE).
 *
 * Errors carry the character position and what was expected, rendered with a caret under the query.
 */
import type { ObjectiveKind } from './objective/objective.js';
import { ConfigError, assertUnreachable } from '../core/errors.js';

export type AggregateFn = 'COUNT' | 'SUM' | 'AVG' | 'MIN' | 'MAX' | 'EXISTS' | 'LIST_DISTINCT';
export type CompareOp = '=' | '!=' | '<' | '<=' | '>' | '>=';
export type TimeUnit = 'days' | 'hours' | 'minutes';
export type Literal = number | string | boolean;

export interface Aggregate {
  kind: 'aggregate';
  fn: AggregateFn;
  table: string;
  /** null for `t.*` */
  column: string | null;
  /** window start and end relative to the anchor, in seconds: the window is (anchor + start, anchor + end] */
  start: number;
  end: number;
  unit: TimeUnit;
}

export interface ColumnRef {
  kind: 'column';
  table: string;
  column: string;
}

export interface Comparison {
  op: CompareOp;
  value: Literal;
}

export type Target =
  /** `top_k`: ranking targets (`LIST_DISTINCT(…) RANK TOP k`) only, else null */
  | { kind: 'entity'; aggregate: Aggregate; compare: Comparison | null; top_k: number | null }
  | { kind: 'fact'; column: ColumnRef; compare: Comparison | null };

export type Condition =
  | { kind: 'and' | 'or'; left: Condition; right: Condition }
  | { kind: 'not'; inner: Condition }
  | { kind: 'compare'; left: Aggregate | ColumnRef; op: CompareOp; value: Literal };

export interface PredictiveQuery {
  text: string;
  target: Target;
  entity: ColumnRef;
  where: Condition | null;
  /** ranking for LIST_DISTINCT … RANK TOP k, binary when the target is compared (or EXISTS), regression otherwise */
  taskType: ObjectiveKind;
}

const UNIT_SECONDS: Record<TimeUnit, number> = { days: 86400, hours: 3600, minutes: 60 };
const AGGREGATES = new Set<AggregateFn>(['COUNT', 'SUM', 'AVG', 'MIN', 'MAX', 'EXISTS', 'LIST_DISTINCT']);
/** The largest k of `RANK TOP k`: a batch job writes k rows per entity, and MAP@k beyond this means little. */
export const MAX_TOP_K = 1000;
const KEYWORDS = new Set(['PREDICT', 'FOR', 'EACH', 'WHERE', 'AND', 'OR', 'NOT', 'TRUE', 'FALSE', 'RANK', 'TOP']);

interface Token {
  kind: 'ident' | 'number' | 'string' | 'punct' | 'op' | 'eof';
  text: string;
  pos: number;
}

/** A query that does not parse: the position and what the parser expected there. */
export class PqlSyntaxError extends ConfigError {
  readonly position: number;
  readonly expected: string;

  constructor(query: string, position: number, expected: string, got: string) {
    const caret = `${' '.repeat(position)}^`;
    super(`invalid predictive query at position ${position + 1}: expected ${expected} (got ${got})\n    ${query}\n    ${caret}`);
    this.position = position;
    this.expected = expected;
  }
}

function tokenize(text: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  while (i < text.length) {
    const c = text[i]!;
    if (/\s/.test(c)) {
      i++;
      continue;
    }
    const start = i;
    if (/[A-Za-z_]/.test(c)) {
      // Column names may hold hyphens (real tables do); a hyphen followed by '>' is never part of a name.
      while (i < text.length && /[A-Za-z0-9_-]/.test(text[i]!) && !(text[i] === '-' && text[i + 1] === '>')) i++;
      tokens.push({ kind: 'ident', text: text.slice(start, i), pos: start });
    } else if (/[0-9]/.test(c) || ((c === '-' || c === '+') && /[0-9.]/.test(text[i + 1] ?? ''))) {
      i++;
      while (i < text.length && /[0-9.eE]/.test(text[i]!)) i++;
      tokens.push({ kind: 'number', text: text.slice(start, i), pos: start });
    } else if (c === "'" || c === '"') {
      i++;
      while (i < text.length && text[i] !== c) i++;
      if (i >= text.length) throw new PqlSyntaxError(text, start, 'a closing quote', 'end of query');
      i++;
      tokens.push({ kind: 'string', text: text.slice(start + 1, i - 1), pos: start });
    } else if ('<>!='.includes(c)) {
      const two = text.slice(i, i + 2);
      const op = ['<=', '>=', '!=', '<>', '=='].includes(two) ? two : c;
      if (op === '!') throw new PqlSyntaxError(text, start, 'an operator (= != < <= > >=)', '"!"');
      i += op.length;
      tokens.push({ kind: 'op', text: op, pos: start });
    } else if ('(),.*'.includes(c)) {
      i++;
      tokens.push({ kind: 'punct', text: c, pos: start });
    } else {
      throw new PqlSyntaxError(text, start, 'a name, number, operator or one of ( ) , . *', `"${c}"`);
    }
  }
  tokens.push({ kind: 'eof', text: '', pos: text.length });
  return tokens;
}

class Parser {
  private i = 0;
  constructor(private readonly text: string, private readonly tokens: Token[]) {}

  private peek(): Token {
    return this.tokens[this.i]!;
  }

  private next(): Token {
    return this.tokens[this.i++]!;
  }

  private describe(t: Token): string {
    return t.kind === 'eof' ? 'end of query' : `"${t.text}"`;
  }

  private fail(expected: string, t: Token = this.peek()): never {
    throw new PqlSyntaxError(this.text, t.pos, expected, this.describe(t));
  }

  private isKeyword(word: string): boolean {
    const t = this.peek();
    return t.kind === 'ident' && t.text.toUpperCase() === word;
  }

  private keyword(word: string): void {
    if (!this.isKeyword(word)) this.fail(word);
    this.next();
  }

  private punct(p: string): void {
    const t = this.peek();
    if (t.kind !== 'punct' || t.text !== p) this.fail(`"${p}"`);
    this.next();
  }

  private name(what: string): string {
    const t = this.peek();
    if (t.kind !== 'ident' || KEYWORDS.has(t.text.toUpperCase())) this.fail(what);
    return this.next().text;
  }

  private number(what: string): number {
    const t = this.peek();
    const v = Number(t.text);
    if (t.kind !== 'number' || !Number.isFinite(v)) this.fail(what);
    this.next();
    return v;
  }

  parse(): PredictiveQuery {
    this.keyword('PREDICT');
    const target = this.target();
    this.keyword('FOR');
    this.keyword('EACH');
    const eachTok = this.peek();
    const entity = this.columnRef('the entity as <table>.<primary key>');
    let where: Condition | null = null;
    if (this.isKeyword('WHERE')) {
      this.next();
      where = this.orCondition();
    }
    if (this.peek().kind !== 'eof') this.fail(where ? 'AND, OR or the end of the query' : 'WHERE or the end of the query');

    if (target.kind === 'fact' && target.column.table !== entity.table) {
      throw new PqlSyntaxError(this.text, eachTok.pos, `FOR EACH on the target's table "${target.column.table}"`, `"${entity.table}"`);
    }
    const taskType =
      target.kind === 'entity' && target.top_k !== null ? 'ranking' : target.compare !== null || (target.kind === 'entity' && target.aggregate.fn === 'EXISTS') ? 'binary' : 'regression';
    return { text: this.text, target, entity, where, taskType };
  }

  private target(): Target {
    const t = this.peek();
    if (t.kind === 'ident' && AGGREGATES.has(t.text.toUpperCase() as AggregateFn) && this.tokens[this.i + 1]?.text === '(') {
      const aggregate = this.aggregate();
      if (aggregate.end <= 0) {
        throw new PqlSyntaxError(this.text, t.pos, 'a target window that ends after the anchor (b > 0)', `(${aggregate.start / UNIT_SECONDS[aggregate.unit]}, ${aggregate.end / UNIT_SECONDS[aggregate.unit]})`);
      }
      if (aggregate.start < 0) {
        throw new PqlSyntaxError(this.text, t.pos, 'a target window that starts at or after the anchor (a ≥ 0): a label must come from the future', `a = ${aggregate.start / UNIT_SECONDS[aggregate.unit]}`);
      }
      if (aggregate.fn === 'LIST_DISTINCT') return { kind: 'entity', aggregate, compare: null, top_k: this.rankTop(aggregate) };
      if (this.isKeyword('RANK')) this.fail(`FOR after ${aggregate.fn}(…): RANK TOP k ranks the items of LIST_DISTINCT(<table>.<foreign key>, a, b, unit) only`);
      return { kind: 'entity', aggregate, compare: this.optionalComparison(), top_k: null };
    }
    const column = this.columnRef('a target: an aggregate like COUNT(t.*, 0, 7, days) or a column <table>.<column>');
    return { kind: 'fact', column, compare: this.optionalComparison() };
  }

  /** `RANK TOP k` after a LIST_DISTINCT target: required, k a positive integer. */
  private rankTop(aggregate: Aggregate): number {
    if (this.peek().kind === 'op') this.fail('RANK TOP k after LIST_DISTINCT(…): a list of items is ranked, not compared');
    if (!this.isKeyword('RANK')) this.fail(`RANK TOP k after LIST_DISTINCT(${aggregate.table}.${aggregate.column}, …), e.g. RANK TOP 12`);
    this.next();
    this.keyword('TOP');
    const t = this.peek();
    const k = this.number('the list length k of RANK TOP k (a positive integer, e.g. 12)');
    if (!Number.isInteger(k) || k < 1 || k > MAX_TOP_K) {
      throw new PqlSyntaxError(this.text, t.pos, `a whole number k with 1 ≤ k ≤ ${MAX_TOP_K} for RANK TOP k`, `${k}`);
    }
    return k;
  }

  private optionalComparison(): Comparison | null {
    if (this.peek().kind !== 'op') return null;
    const op = this.compareOp();
    return { op, value: this.literal() };
  }

  private compareOp(): CompareOp {
    const t = this.next();
    switch (t.text) {
      case '=':
      case '==':
        return '=';
      case '!=':
      case '<>':
        return '!=';
      case '<':
      case '<=':
      case '>':
      case '>=':
        return t.text;
      default:
        return this.fail('a comparison operator', t);
    }
  }

  private literal(): Literal {
    const t = this.peek();
    if (t.kind === 'number') return this.number('a number');
    if (t.kind === 'string') return this.next().text;
    if (this.isKeyword('TRUE')) {
      this.next();
      return true;
    }
    if (this.isKeyword('FALSE')) {
      this.next();
      return false;
    }
    return this.fail('a value (number, quoted string, TRUE or FALSE)');
  }

  private columnRef(what: string): ColumnRef {
    const table = this.name(what);
    this.punct('.');
    const column = this.name(`a column name after "${table}."`);
    return { kind: 'column', table, column };
  }

  private aggregate(): Aggregate {
    const fnTok = this.next();
    const fn = fnTok.text.toUpperCase() as AggregateFn;
    this.punct('(');
    const table = this.name('a table name');
    this.punct('.');
    let column: string | null = null;
    const colTok = this.peek();
    if (colTok.kind === 'punct' && colTok.text === '*') {
      this.next();
      if (fn === 'LIST_DISTINCT') throw new PqlSyntaxError(this.text, colTok.pos, `the item column for LIST_DISTINCT: a foreign key of ${table} to the items' table (e.g. ${table}.article_id)`, '"*"');
      if (fn !== 'COUNT' && fn !== 'EXISTS') throw new PqlSyntaxError(this.text, colTok.pos, `a column for ${fn} (only COUNT and EXISTS take "*")`, '"*"');
    } else {
      column = this.name(`a column name or "*" after "${table}."`);
    }
    this.punct(',');
    const startTok = this.peek();
    const a = this.number('the window start (a number)');
    this.punct(',');
    const b = this.number('the window end (a number)');
    this.punct(',');
    const unitTok = this.peek();
    const unitText = unitTok.kind === 'ident' ? unitTok.text.toLowerCase() : '';
    const unit = (['days', 'hours', 'minutes'] as const).find((u) => u === unitText || `${u.slice(0, -1)}` === unitText);
    if (!unit) this.fail('a time unit (days, hours or minutes)');
    this.next();
    this.punct(')');
    if (!(b > a)) throw new PqlSyntaxError(this.text, startTok.pos, 'a window with start < end', `(${a}, ${b})`);
    return { kind: 'aggregate', fn, table, column, start: a * UNIT_SECONDS[unit], end: b * UNIT_SECONDS[unit], unit };
  }

  private orCondition(): Condition {
    let left = this.andCondition();
    while (this.isKeyword('OR')) {
      this.next();
      left = { kind: 'or', left, right: this.andCondition() };
    }
    return left;
  }

  private andCondition(): Condition {
    let left = this.notCondition();
    while (this.isKeyword('AND')) {
      this.next();
      left = { kind: 'and', left, right: this.notCondition() };
    }
    return left;
  }

  private notCondition(): Condition {
    if (this.isKeyword('NOT')) {
      this.next();
      return { kind: 'not', inner: this.notCondition() };
    }
    const t = this.peek();
    if (t.kind === 'punct' && t.text === '(') {
      this.next();
      const inner = this.orCondition();
      this.punct(')');
      return inner;
    }
    let left: Aggregate | ColumnRef;
    if (t.kind === 'ident' && AGGREGATES.has(t.text.toUpperCase() as AggregateFn) && this.tokens[this.i + 1]?.text === '(') {
      left = this.aggregate();
      if (left.fn === 'LIST_DISTINCT') throw new PqlSyntaxError(this.text, t.pos, 'COUNT, SUM, AVG, MIN, MAX or EXISTS in WHERE (LIST_DISTINCT is a ranking target, not a filter)', '"LIST_DISTINCT"');
      if (left.end > 0) {
        throw new PqlSyntaxError(this.text, t.pos, 'a WHERE window in the past (end ≤ 0): filters may not look after the anchor', `end = ${left.end / UNIT_SECONDS[left.unit]}`);
      }
      if (left.fn === 'EXISTS' && this.peek().kind !== 'op') {
        return { kind: 'compare', left, op: '=', value: true };
      }
    } else {
      left = this.columnRef('a condition: an aggregate, a column <table>.<column>, NOT or "("');
    }
    if (this.peek().kind !== 'op') this.fail('a comparison operator (= != < <= > >=)');
    const op = this.compareOp();
    return { kind: 'compare', left, op, value: this.literal() };
  }
}

export function parseQuery(text: string): PredictiveQuery {
  return new Parser(text, tokenize(text)).parse();
}

/** The label window length of a task in seconds (entity tasks), used to space anchors. */
export function targetWindow(q: PredictiveQuery): number | null {
  return q.target.kind === 'entity' ? q.target.aggregate.end - q.target.aggregate.start : null;
}

/** Every aggregate in a condition tree. */
export function conditionAggregates(c: Condition | null): Aggregate[] {
  if (!c) return [];
  switch (c.kind) {
    case 'and':
    case 'or':
      return [...conditionAggregates(c.left), ...conditionAggregates(c.right)];
    case 'not':
      return conditionAggregates(c.inner);
    case 'compare':
      return c.left.kind === 'aggregate' ? [c.left] : [];
    default:
      return assertUnreachable(c);
  }
}

/** Every column a condition refers to directly. */
export function conditionColumns(c: Condition | null): ColumnRef[] {
  if (!c) return [];
  switch (c.kind) {
    case 'and':
    case 'or':
      return [...conditionColumns(c.left), ...conditionColumns(c.right)];
    case 'not':
      return conditionColumns(c.inner);
    case 'compare':
      return c.left.kind === 'column' ? [c.left] : [];
    default:
      return assertUnreachable(c);
  }
}
