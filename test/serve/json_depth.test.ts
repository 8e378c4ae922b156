/** The nesting bound of request JSON, checked before parsing, and long integers for float inputs. */
import { describe, expect, it } from 'vitest';
import { checkDepth, MAX_JSON_DEPTH, parseJsonBody } from '../../src/serve/json_body.js';

describe('checkDepth', () => {
  it('passes nesting up to the bound and refuses one level more with 400', () => {
    const nest = (n: number) => `${'['.repeat(n)}${']'.repeat(n)}`;
    expect(() => checkDepth(nest(MAX_JSON_DEPTH), MAX_JSON_DEPTH)).not.toThrow();
    expect(() => checkDepth(nest(MAX_JSON_DEPTH + 1), MAX_JSON_DEPTH)).toThrow(expect.objectContaining({ status: 400 }));
    expect(() => parseJsonBody(`{"a":${nest(5000)}}`)).toThrow(/deeper than 64 levels/);
  });

  it('does not count brackets inside strings, escaped quotes included', () => {
    const inString = `{"s":"${'['.repeat(200)}\\"${'{'.repeat(200)}"}`;
    expect(() => checkDepth(inString, 3)).not.toThrow();
    expect(parseJsonBody(inString)).toEqual({ s: `${'['.repeat(200)}"${'{'.repeat(200)}` });
  });

  it('a string ending in an escaped backslash closes there: the brackets after it count', () => {
    const after = String.raw`{"s":"a\\","t":[[[[1]]]]}`;
    expect(JSON.parse(after)).toEqual({ s: 'a\\', t: [[[[1]]]] });
    expect(() => checkDepth(after, 5)).not.toThrow();
    expect(() => checkDepth(after, 4)).toThrow(expect.objectContaining({ status: 400 }));
  });

  it('integer literals of 16+ digits come back as exact decimal strings', () => {
    expect(parseJsonBody('{"data":[1234567890123456789, 1.5]}')).toEqual({ data: ['1234567890123456789', 1.5] });
  });
});
