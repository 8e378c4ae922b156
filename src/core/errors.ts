/**
 * Typed errors and the exit codes they map to. Code deep in the pipeline throws one of these; only
 * `cli/main.ts` turns them into an exit code and a message, so every command behaves the same in CI.
 *
 * | code | meaning                                                        |
 * |------|----------------------------------------------------------------|
 * | 0    | success                                                        |
 * | 1    | internal error (a bug: the stack is printed)                   |
 * | 2    | config or usage error (bad YAML, unknown key, bad flag)        |
 * | 3    | data error (missing file, bad column, duplicate keys, …)       |
 * | 4    | quality gate failed (`--fail-under`) or `check` found a problem |
 * | 5    | artifact error (missing or incompatible run, schema skew)      |
 * | 130  | interrupted (Ctrl-C); any checkpoint written so far is usable  |
 */
export const ExitCode = {
  ok: 0,
  internal: 1,
  config: 2,
  data: 3,
  qualityGate: 4,
  artifact: 5,
  interrupted: 130,
} as const;
export type ExitCode = (typeof ExitCode)[keyof typeof ExitCode];

export interface ErrorDetails {
  /** The offending value, quoted in the message as "(got X)". */
  value?: unknown;
  /** What the user can do about it. */
  hint?: string;
  /** Where: a file, a config path like `data.tables.customers.primary_key`, a table or column. */
  where?: string;
}

export abstract class GnnctlError extends Error {
  abstract readonly exitCode: ExitCode;
  readonly hint?: string;
  readonly where?: string;
  readonly value?: unknown;

  constructor(message: string, details: ErrorDetails = {}) {
    super(message);
    this.name = new.target.name;
    this.hint = details.hint;
    this.where = details.where;
    this.value = details.value;
  }

  /** The message as a person reads it: where, what, the value received and how to fix it. */
  describe(): string {
    const head = this.where ? `${this.where}: ${this.message}` : this.message;
    const got = this.value === undefined ? '' : ` (got ${formatValue(this.value)})`;
    return this.hint ? `${head}${got}\n  hint: ${this.hint}` : `${head}${got}`;
  }

  toJSON(): Record<string, unknown> {
    return { error: this.name, message: this.message, where: this.where, value: this.value, hint: this.hint };
  }
}

/** One problem found while validating a config; a ConfigError carries all of them. */
export interface ConfigProblem {
  /** Dotted path in the config file, e.g. `model.num_neighbors`. */
  path: string;
  message: string;
  hint?: string;
  /** 1-based line and column in the YAML file when known. */
  line?: number;
  col?: number;
}

export class ConfigError extends GnnctlError {
  readonly exitCode = ExitCode.config;
  readonly problems: ConfigProblem[];

  constructor(message: string, problems: ConfigProblem[] = [], details: ErrorDetails = {}) {
    super(message, details);
    this.problems = problems;
  }

  override describe(): string {
    if (this.problems.length === 0) return super.describe();
    const lines = this.problems.map((p) => {
      const at = p.line ? ` (line ${p.line}, col ${p.col})` : '';
      return `  - ${p.path || '<root>'}${at}: ${p.message}${p.hint ? `\n      fix: ${p.hint}` : ''}`;
    });
    const head = this.where ? `${this.where}: ${this.message}` : this.message;
    return `${head}\n${lines.join('\n')}`;
  }

  override toJSON(): Record<string, unknown> {
    return { ...super.toJSON(), problems: this.problems };
  }
}

/** Usage errors (a bad flag value) share the config exit code: the invocation, not the data, is wrong. */
export class UsageError extends GnnctlError {
  readonly exitCode = ExitCode.config;
}

export class DataError extends GnnctlError {
  readonly exitCode = ExitCode.data;
}

export class ArtifactError extends GnnctlError {
  readonly exitCode = ExitCode.artifact;
}

export class QualityGateError extends GnnctlError {
  readonly exitCode = ExitCode.qualityGate;
  /** The result the gate judged, so `--json` still prints it. */
  readonly result?: unknown;

  constructor(message: string, details: ErrorDetails & { result?: unknown } = {}) {
    super(message, details);
    this.result = details.result;
  }
}

export class InterruptedError extends GnnctlError {
  readonly exitCode = ExitCode.interrupted;
}

/** Thrown for a feature the config may name but gnnctl does not implement: says so instead of faking it. */
export class NotImplementedError extends GnnctlError {
  readonly exitCode = ExitCode.config;
}

export function formatValue(v: unknown): string {
  if (typeof v === 'string') return JSON.stringify(v);
  if (typeof v === 'bigint') return `${v}`;
  try {
    const s = JSON.stringify(v);
    return s === undefined ? String(v) : s.length > 200 ? `${s.slice(0, 197)}...` : s;
  } catch {
    return String(v);
  }
}

/** For exhaustive switches: the compiler proves this is never reached. */
export function assertUnreachable(x: never): never {
  throw new Error(`unreachable: ${formatValue(x)}`);
}

/** The closest candidates to `name` by edit distance, for "did you mean" hints. */
export function closest(name: string, candidates: Iterable<string>, max = 3): string[] {
  const scored: [number, string][] = [];
  const lower = name.toLowerCase();
  for (const c of candidates) scored.push([editDistance(lower, c.toLowerCase()), c]);
  scored.sort((a, b) => a[0] - b[0] || a[1].localeCompare(b[1]));
  const limit = Math.max(2, Math.ceil(name.length / 2));
  return scored.filter(([d]) => d <= limit).slice(0, max).map(([, c]) => c);
}

/** "did you mean X?" or a list of valid names when nothing is close. */
export function suggest(name: string, candidates: readonly string[]): string {
  const near = closest(name, candidates);
  if (near.length > 0) return `did you mean ${near.map((n) => `"${n}"`).join(' or ')}?`;
  return `valid names: ${candidates.map((c) => `"${c}"`).join(', ') || '(none)'}`;
}

export function editDistance(a: string, b: string): number {
  const m = a.length;
  const n = b.length;
  let prev = new Array<number>(n + 1);
  let cur = new Array<number>(n + 1);
  for (let j = 0; j <= n; j++) prev[j] = j;
  for (let i = 1; i <= m; i++) {
    cur[0] = i;
    for (let j = 1; j <= n; j++) {
      const cost = a.charCodeAt(i - 1) === b.charCodeAt(j - 1) ? 0 : 1;
      cur[j] = Math.min(prev[j]! + 1, cur[j - 1]! + 1, prev[j - 1]! + cost);
    }
    [prev, cur] = [cur, prev];
  }
  return prev[n]!;
}
