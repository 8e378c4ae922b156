/**
 * JSON request bodies with exact 64-bit integers.
 *
 * `JSON.parse` reads every number as a float64, so an INT64 beyond ±2^53 (every nanosecond timestamp
 * since 1970-04-15, and many hashed ids) would silently change. Triton reads them exactly, and so must
 * gnnctl. Before parsing, integer literals of 16 or more digits are turned into JSON strings, which the
 * request decoder reads back with `BigInt` (see `decode.ts`).
 *
 * The fast pass uses one regular expression that does not know where JSON strings are. It cannot corrupt
 * a string silently: a match inside a string gets a `"` inserted before its digits, and that quote
 * closes the string (the character before it is `[`, `,`, `:` or white space, never a backslash), so the
 * string is directly followed by a bare number, which is always a JSON syntax error. On any syntax error
 * the body is parsed again as it came (for the real error message), and if it is valid JSON after all, a
 * slower pass that skips strings does the quoting.
 */
import { badRequest } from './http_error.js';

/** A bare integer literal of ≥ 16 digits (≥ 10^15, close to 2^53) in a value position. */
const BIG_INT_FAST = /([[,:]\s*)(-?\d{16,})(?=\s*[,\]}])/g;
/** The same, skipping over JSON strings (group 1 is undefined for strings, which are kept as they are). */
const BIG_INT_EXACT = /"(?:[^"\\]|\\.)*"|(?<=[[,:]\s*)(-?\d{16,})(?=\s*[,\]}])/g;

/**
 * Deepest nesting of arrays and objects a request may have. A KServe request nests about 6 deep (an
 * input's `data` written as nested arrays of its shape); 64 leaves room for any tensor rank, while
 * thousands of levels would make the recursive work after parsing (error messages, checks) overflow the
 * stack.
 */
export const MAX_JSON_DEPTH = 64;

/** Parses a request body; large integer literals come back as decimal strings. Throws HTTP 400 on bad JSON. */
export function parseJsonBody(text: string): unknown {
  checkDepth(text, MAX_JSON_DEPTH);
  const quoted = text.replace(BIG_INT_FAST, '$1"$2"');
  try {
    return JSON.parse(quoted);
  } catch {
    let plain: unknown;
    try {
      plain = JSON.parse(text);
    } catch (e) {
      throw badRequest(`failed to parse the request body as JSON: ${(e as Error).message}`);
    }
    if (quoted === text) return plain;
    return JSON.parse(text.replace(BIG_INT_EXACT, (m, digits: string | undefined) => (digits === undefined ? m : `"${digits}"`)));
  }
}

/** What the depth scan stops at; the rest (numbers, commas, white space: most of a request) the regex engine skips. */
const STRUCTURAL = /["[\]{}]/g;

/** Throws 400 when `[`/`{` nest deeper than `max` outside strings; one pass, before any parsing work. */
export function checkDepth(text: string, max: number): void {
  let depth = 0;
  STRUCTURAL.lastIndex = 0;
  while (STRUCTURAL.test(text)) {
    const i = STRUCTURAL.lastIndex - 1;
    const c = text.charCodeAt(i);
    if (c === 0x22) {
      const end = stringEnd(text, i);
      if (end < 0) return; // an unterminated string: JSON.parse reports it
      STRUCTURAL.lastIndex = end + 1;
    } else if (c === 0x5b || c === 0x7b) {
      if (++depth > max) throw badRequest(`the request JSON nests arrays and objects deeper than ${max} levels (at character ${i})`);
    } else {
      depth--;
    }
  }
}

/** The index of the quote that closes the JSON string opened at `open` (one not escaped by an odd run of backslashes), or -1. */
function stringEnd(text: string, open: number): number {
  let j = open;
  for (;;) {
    j = text.indexOf('"', j + 1);
    if (j < 0) return -1;
    let backslashes = 0;
    while (text.charCodeAt(j - 1 - backslashes) === 0x5c) backslashes++;
    if (backslashes % 2 === 0) return j;
  }
}
