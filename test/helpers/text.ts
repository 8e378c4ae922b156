/**
 * Small text helpers for tests that assert positions: where a snippet sits in a YAML file or a query.
 */

/** 1-based line and column of the first occurrence of `needle` in `text` (throws when absent). */
export function positionOf(text: string, needle: string, from = 0): { line: number; col: number } {
  const at = text.indexOf(needle, from);
  if (at < 0) throw new Error(`"${needle}" does not occur in the text`);
  const before = text.slice(0, at);
  const line = before.split('\n').length;
  return { line, col: at - before.lastIndexOf('\n') };
}

/** Replaces exactly one occurrence of `from` (fails loudly when the fixture text drifted). */
export function replaceOnce(text: string, from: string, to: string): string {
  const at = text.indexOf(from);
  if (at < 0 || text.indexOf(from, at + 1) >= 0) throw new Error(`expected exactly one "${from}" in the text`);
  return text.slice(0, at) + to + text.slice(at + from.length);
}
