/**
 * gnnctl's friendly errors for `config.pbtxt`, layered on protobufjs' text-format reader.
 *
 * protobufjs decides whether a config is valid (it reads the text against Triton's own schema); when
 * it refuses one, its message names a line and no more, and it stops at the first problem. This layer
 * then re-reads the text only to explain: every problem at once, each with its field path
 * (`input[0].data_type`), line and column, and a "did you mean" for unknown field and enum names. It
 * builds no values and knows no field by name: everything comes from the protobufjs reflection of
 * `model_config.proto`. If it finds nothing to say, protobufjs' own message is used (see
 * `explainTextFormatError`).
 */
import type protobuf from 'protobufjs';
import { ConfigError, suggest, type ConfigProblem } from '../../core/errors.js';
import { fieldNames, fieldOf, integerProblem, isIntegerType, slotLabel, slotOf, type Slot } from './schema.js';

/** A message as the checker walks it: a schema message, or the `{ key value }` entry of a map field. */
interface Scope {
  name: string;
  slot(name: string): Slot | undefined;
  names(): string[];
}

function messageScope(type: protobuf.Type): Scope {
  return {
    name: type.name,
    slot: (n) => {
      const f = fieldOf(type, n);
      return f && slotOf(f);
    },
    names: () => fieldNames(type),
  };
}

function entryScope(map: Slot): Scope {
  const { key, value } = map.map!;
  return { name: `${map.name} entry`, slot: (n) => (n === 'key' ? key : n === 'value' ? value : undefined), names: () => ['key', 'value'] };
}

/** Builds the ConfigError for `problems` (the first one is in the message, all are in `problems`). */
export function configError(what: string, problems: ConfigProblem[], where: string): ConfigError {
  const first = problems[0]!;
  const at = first.line !== undefined ? `line ${first.line}${first.col !== undefined ? `, col ${first.col}` : ''}: ` : '';
  const more = problems.length > 1 ? ` (and ${problems.length - 1} more)` : '';
  return new ConfigError(`${what}: ${at}${first.path ? `${first.path}: ` : ''}${first.message}${more}`, problems, { where });
}

/**
 * The error to throw for a config.pbtxt that protobufjs refused (`cause`) or that holds values gnnctl
 * cannot carry (unknown enum numbers, 64-bit integers beyond 2^53; `cause` undefined).
 */
export function explainTextFormatError(type: protobuf.Type, text: string, file: string, cause?: unknown): ConfigError {
  const problems = diagnose(type, text);
  if (problems.length === 0) {
    // The checker found nothing protobufjs did not like: report protobufjs' own words and line.
    const message = cause instanceof Error ? cause.message : String(cause ?? 'a value gnnctl cannot carry (an enum number outside its enum, or an integer beyond 2^53)');
    const m = / \(line (\d+)\)$/.exec(message);
    problems.push(m ? { path: '', message: message.slice(0, m.index), line: Number(m[1]) } : { path: '', message });
  }
  return configError('invalid Triton model config', problems, file);
}

/** Every problem of `text` against `type`, each with path, line and column; empty when none is found. */
export function diagnose(type: protobuf.Type, text: string): ConfigProblem[] {
  const checker = new TextFormatChecker(text);
  try {
    checker.checkFields(messageScope(type), '', null);
  } catch (e) {
    if (!(e instanceof SyntaxStop)) throw e;
  }
  return checker.problems;
}

// ---------------------------------------------------------------------------------------------
// Tokens

type TokenKind = 'ident' | 'int' | 'float' | 'string' | 'punct' | 'eof';

interface Token {
  kind: TokenKind;
  /** Source text (for strings: the decoded value). */
  text: string;
  line: number;
  col: number;
}

const IDENT_RE = /[A-Za-z_][A-Za-z0-9_]*/y;
const NUMBER_RE = /0[xX][0-9A-Fa-f]+|(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?[fF]?/y;
const SIMPLE_ESCAPES: Record<string, number> = { n: 10, t: 9, r: 13, a: 7, b: 8, f: 12, v: 11, '\\': 92, "'": 39, '"': 34, '?': 63 };

/** Thrown to stop at a syntax error (recorded in `problems` first): after one, positions mean nothing. */
class SyntaxStop extends Error {}

/**
 * A recursive-descent walk over the text, driven by the schema: the field's declared type decides how
 * its value is read, so a value of the wrong kind is reported where it is, and the walk goes on after
 * schema problems (unknown fields are skipped as balanced blocks) to report them all.
 */
class TextFormatChecker {
  readonly problems: ConfigProblem[] = [];
  private pos = 0;
  private line = 1;
  private col = 1;
  private lookahead: Token | undefined;

  constructor(private readonly text: string) {}

  // -- scanning ------------------------------------------------------------------------------

  private peek(): Token {
    this.lookahead ??= this.scan();
    return this.lookahead;
  }

  private next(): Token {
    const t = this.peek();
    this.lookahead = undefined;
    return t;
  }

  private advance(n: number): void {
    for (let i = 0; i < n; i++) {
      if (this.text[this.pos] === '\n') {
        this.line++;
        this.col = 1;
      } else {
        this.col++;
      }
      this.pos++;
    }
  }

  private match(re: RegExp): string | undefined {
    re.lastIndex = this.pos;
    return re.exec(this.text)?.[0];
  }

  private scan(): Token {
    for (;;) {
      const c = this.text[this.pos];
      if (c === undefined) return { kind: 'eof', text: '', line: this.line, col: this.col };
      if (c === '#') while (this.pos < this.text.length && this.text[this.pos] !== '\n') this.advance(1);
      else if (/\s/.test(c)) this.advance(1);
      else break;
    }
    const { line, col } = this;
    const c = this.text[this.pos]!;
    if (/[A-Za-z_]/.test(c)) {
      const word = this.match(IDENT_RE)!;
      this.advance(word.length);
      return { kind: 'ident', text: word, line, col };
    }
    if (/[0-9]/.test(c) || (c === '.' && /[0-9]/.test(this.text[this.pos + 1] ?? ''))) {
      const num = this.match(NUMBER_RE)!;
      const after = this.text[this.pos + num.length];
      if (after !== undefined && /[A-Za-z0-9_.]/.test(after)) this.syntax(`malformed number "${num}${after}"`, line, col);
      if (/^0[0-9]+$/.test(num) && !/^0[0-7]+$/.test(num)) this.syntax(`malformed number "${num}" (a leading 0 makes it octal)`, line, col);
      this.advance(num.length);
      return { kind: /^(?:0[xX][0-9A-Fa-f]+|[0-9]+)$/.test(num) ? 'int' : 'float', text: num, line, col };
    }
    if (c === '"' || c === "'") return this.scanString(c, line, col);
    if ('{}<>[]:,;-'.includes(c)) {
      this.advance(1);
      return { kind: 'punct', text: c, line, col };
    }
    return this.syntax(`unexpected character ${JSON.stringify(c)}`, line, col);
  }

  private scanString(q: string, line: number, col: number): Token {
    const bytes: number[] = [];
    const enc = new TextEncoder();
    this.advance(1);
    for (;;) {
      const c = this.text[this.pos];
      if (c === undefined || c === '\n') this.syntax('unterminated string (strings cannot span lines)', line, col);
      if (c === q) {
        this.advance(1);
        break;
      }
      if (c !== '\\') {
        const ch = String.fromCodePoint(this.text.codePointAt(this.pos)!);
        bytes.push(...enc.encode(ch));
        this.advance(ch.length);
        continue;
      }
      const e = this.text[this.pos + 1];
      const rest = this.text.slice(this.pos + 2);
      if (e !== undefined && e in SIMPLE_ESCAPES) {
        bytes.push(SIMPLE_ESCAPES[e]!);
        this.advance(2);
      } else if (e !== undefined && /[0-7]/.test(e)) {
        const m = /^[0-7]{1,3}/.exec(this.text.slice(this.pos + 1))!;
        bytes.push(parseInt(m[0], 8) & 255);
        this.advance(1 + m[0].length);
      } else if (e === 'x' || e === 'X') {
        const m = /^[0-9A-Fa-f]{1,2}/.exec(rest);
        if (!m) this.syntax('\\x escape needs hex digits', this.line, this.col);
        bytes.push(parseInt(m[0], 16));
        this.advance(2 + m[0].length);
      } else if (e === 'u' || e === 'U') {
        const n = e === 'u' ? 4 : 8;
        const m = new RegExp(`^[0-9A-Fa-f]{${n}}`).exec(rest);
        const cp = m ? parseInt(m[0], 16) : -1;
        if (!m || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) this.syntax(`\\${e} escape needs ${n} hex digits of a Unicode scalar value`, this.line, this.col);
        bytes.push(...enc.encode(String.fromCodePoint(cp)));
        this.advance(2 + n);
      } else {
        this.syntax(`unknown escape sequence \\${e ?? ''}`, this.line, this.col);
      }
    }
    try {
      return { kind: 'string', text: new TextDecoder('utf-8', { fatal: true }).decode(Uint8Array.from(bytes)), line, col };
    } catch {
      return this.syntax('string is not valid UTF-8 (escapes produce bytes, and they must form UTF-8 text)', line, col);
    }
  }

  // -- problems ------------------------------------------------------------------------------

  private syntax(message: string, line: number, col: number, path = ''): never {
    this.problems.push({ path, message, line, col });
    throw new SyntaxStop(message);
  }

  private problem(path: string, message: string, at: Token, hint?: string): void {
    this.problems.push({ path, message, line: at.line, col: at.col, ...(hint ? { hint } : {}) });
  }

  private describe(t: Token): string {
    if (t.kind === 'eof') return 'the end of the file';
    if (t.kind === 'string') return `string ${JSON.stringify(t.text)}`;
    return `"${t.text}"`;
  }

  private isPunct(t: Token, ...ps: string[]): boolean {
    return t.kind === 'punct' && ps.includes(t.text);
  }

  // -- messages ------------------------------------------------------------------------------

  /** Fields until `close` (`}` or `>`), or until the end of the text at top level (`open` null). */
  checkFields(scope: Scope, path: string, open: { close: string; token: Token } | null): void {
    const setAt = new Map<string, Token>();
    const oneofs = new Map<string, string>();
    const counts = new Map<string, number>();
    for (;;) {
      const t = this.peek();
      if (t.kind === 'eof') {
        if (open) this.syntax(`unclosed "${open.token.text}": reached the end of the file before the matching "${open.close}"`, open.token.line, open.token.col, path);
        return;
      }
      if (this.isPunct(t, '}', '>')) {
        if (open && t.text === open.close) {
          this.next();
          return;
        }
        this.syntax(open ? `expected "${open.close}" to close the "${open.token.text}" at line ${open.token.line}, col ${open.token.col}, found "${t.text}"` : `unexpected "${t.text}" with no open "{"`, t.line, t.col, path);
      }
      if (this.isPunct(t, '[')) this.syntax('extension and Any fields ([...]) are not part of a Triton model config', t.line, t.col, path);
      if (t.kind !== 'ident') this.syntax(`expected a field name, found ${this.describe(t)}`, t.line, t.col, path);
      this.next();
      const slot = scope.slot(t.text);
      const fpath = path ? `${path}.${t.text}` : t.text;
      if (!slot) {
        this.problem(fpath, `unknown field "${t.text}" in ${scope.name}`, t, suggest(t.text, scope.names()));
        if (this.isPunct(this.peek(), ':')) this.next();
        this.skipValue(fpath);
      } else {
        if (!slot.repeated) {
          const prev = setAt.get(slot.name);
          if (prev) this.problem(fpath, `field "${slot.name}" is set more than once (first at line ${prev.line}, col ${prev.col}); it is not repeated`, t);
          setAt.set(slot.name, t);
        }
        if (slot.oneof) {
          const other = oneofs.get(slot.oneof);
          if (other && other !== slot.name) this.problem(fpath, `"${slot.name}" is set along with "${other}", but only one member of the oneof "${slot.oneof}" may be`, t);
          oneofs.set(slot.oneof, slot.name);
        }
        this.checkFieldValue(slot, fpath, counts);
      }
      if (this.isPunct(this.peek(), ',', ';')) this.next();
    }
  }

  private checkFieldValue(slot: Slot, path: string, counts: Map<string, number>): void {
    const isMessage = Boolean(slot.message || slot.map);
    const index = () => {
      const i = counts.get(slot.name) ?? 0;
      counts.set(slot.name, i + 1);
      return slot.repeated ? `${path}[${i}]` : path;
    };
    let t = this.peek();
    if (this.isPunct(t, ':')) {
      this.next();
      t = this.peek();
    } else if (!isMessage) {
      if (this.isPunct(t, '{', '<')) {
        this.problem(path, `"${slot.name}" is a ${slotLabel(slot)} value, not a message`, t);
        this.skipValue(path);
        return;
      }
      this.syntax(`expected ":" after field name "${slot.name}", found ${this.describe(t)}`, t.line, t.col, path);
    }
    if (!this.isPunct(t, '[')) {
      this.checkOneValue(slot, index());
      return;
    }
    const open = this.next();
    if (!slot.repeated) this.problem(path, `"${slot.name}" is not a repeated field, so it cannot take a [ ] list`, open);
    const unclosed = () => this.syntax(`unclosed "[": reached the end of the file before the matching "]"`, open.line, open.col, path);
    if (this.isPunct(this.peek(), ']')) {
      this.next();
      return;
    }
    for (;;) {
      if (this.peek().kind === 'eof') unclosed();
      this.checkOneValue(slot, index());
      const sep = this.next();
      if (sep.kind === 'eof') unclosed();
      if (this.isPunct(sep, ']')) return;
      if (!this.isPunct(sep, ',')) this.syntax(`expected "," or "]" in the list of "${slot.name}", found ${this.describe(sep)}`, sep.line, sep.col, path);
      const after = this.peek();
      if (this.isPunct(after, ']')) this.syntax(`expected a value after "," in the list of "${slot.name}" (protobuf text format allows no trailing comma)`, after.line, after.col, path);
    }
  }

  /** One value of `slot` (one list element for repeated fields). */
  private checkOneValue(slot: Slot, path: string): void {
    if (slot.message || slot.map) {
      const t = this.peek();
      if (!this.isPunct(t, '{', '<')) {
        this.problem(path, `"${slot.name}" is a ${slotLabel(slot)}; expected "{" to start it, found ${this.describe(t)}`, t);
        this.skipValue(path);
        return;
      }
      this.next();
      const scope = slot.map ? entryScope(slot) : messageScope(slot.message!);
      this.checkFields(scope, path, { close: t.text === '{' ? '}' : '>', token: t });
      return;
    }
    this.checkScalar(slot, path);
  }

  private checkScalar(slot: Slot, path: string): void {
    let t = this.next();
    const start = t;
    let negative = false;
    if (this.isPunct(t, '-')) {
      negative = true;
      t = this.next();
      if (t.kind === 'punct' || t.kind === 'eof') this.syntax(`expected a number after "-", found ${this.describe(t)}`, t.line, t.col, path);
    }
    if (t.kind === 'eof' || t.kind === 'punct') this.syntax(`expected a value for "${slot.name}", found ${this.describe(t)}`, t.line, t.col, path);
    const got = `${negative ? '-' : ''}${t.kind === 'string' ? JSON.stringify(t.text) : t.text}`;

    if (slot.enumType) {
      const e = slot.enumType;
      const valid = Object.keys(e.values);
      if (t.kind === 'ident' && !negative) {
        if (!(t.text in e.values)) this.problem(path, `invalid value ${t.text} for enum ${e.name} (field "${slot.name}")`, t, suggest(t.text, valid));
      } else if (t.kind === 'int') {
        const n = parseIntLiteral(t.text) * (negative ? -1n : 1n);
        if (e.valuesById[Number(n)] === undefined) this.problem(path, `${n} is not a value of enum ${e.name} (field "${slot.name}")`, start, `valid values: ${valid.join(', ')}`);
      } else {
        this.problem(path, `expected an enum ${e.name} value for "${slot.name}", found ${got}`, start, `valid values: ${valid.join(', ')}`);
      }
      return;
    }
    const type = slot.scalar!;
    const wrong = (what: string) => this.problem(path, `expected ${what} for "${slot.name}" (${type}), found ${got}`, start);
    if (type === 'string' || type === 'bytes') {
      if (t.kind !== 'string' || negative) return wrong('a quoted string');
      while (this.peek().kind === 'string') this.next(); // "a" "b" is "ab"
      return;
    }
    if (type === 'bool') {
      const ok = !negative && ((t.kind === 'ident' && ['true', 'True', 't', 'false', 'False', 'f'].includes(t.text)) || (t.kind === 'int' && (t.text === '1' || t.text === '0')));
      if (!ok) wrong('true or false');
      return;
    }
    if (type === 'float' || type === 'double') {
      const ok = t.kind === 'float' || (t.kind === 'int' && !/^0[xX0-7]/.test(t.text)) || t.text === '0' || (t.kind === 'ident' && ['inf', 'infinity', 'nan'].includes(t.text.toLowerCase()));
      if (!ok) wrong('a number');
      return;
    }
    if (!isIntegerType(type)) return;
    if (t.kind !== 'int') return wrong('an integer');
    const problem = integerProblem(parseIntLiteral(t.text) * (negative ? -1n : 1n), type);
    if (problem) this.problem(path, `${problem} (field "${slot.name}")`, start);
  }

  /** Skips one value (a scalar, a balanced `{…}`/`<…>`/`[…]` block) after an unknown field or a wrong kind. */
  private skipValue(path: string): void {
    const t = this.next();
    const closer: Record<string, string> = { '{': '}', '<': '>', '[': ']' };
    if (this.isPunct(t, '{', '<', '[')) {
      const stack: Token[] = [t];
      while (stack.length > 0) {
        const n = this.next();
        const top = stack[stack.length - 1]!;
        if (n.kind === 'eof') this.syntax(`unclosed "${top.text}": reached the end of the file before the matching "${closer[top.text]}"`, top.line, top.col, path);
        if (this.isPunct(n, '{', '<', '[')) stack.push(n);
        else if (this.isPunct(n, '}', '>', ']')) {
          if (n.text !== closer[top.text]) this.syntax(`mismatched "${n.text}"`, n.line, n.col, path);
          stack.pop();
        }
      }
      return;
    }
    if (this.isPunct(t, '-')) {
      this.next();
      return;
    }
    if (t.kind === 'eof' || t.kind === 'punct') this.syntax(`expected a value, found ${this.describe(t)}`, t.line, t.col, path);
    if (t.kind === 'string') while (this.peek().kind === 'string') this.next();
  }
}

function parseIntLiteral(text: string): bigint {
  if (/^0[xX]/.test(text)) return BigInt(text);
  if (/^0[0-7]+$/.test(text)) return BigInt(`0o${text.slice(1)}`);
  return BigInt(text);
}
