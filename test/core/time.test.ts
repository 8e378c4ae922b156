import { describe, expect, it } from 'vitest';
import { parseIsoTime } from '../../src/core/time.js';

const T = Date.UTC(2020, 7, 1) / 1000; // 2020-08-01T00:00:00Z

describe('parseIsoTime: the one parser of times people write', () => {
  it.each([
    ['2020-08-01', T],
    ['2020-08-01T00:00:00Z', T],
    ['2020-08-01 00:00:00', T],
    ['2020-08-01T02:00:00+02:00', T],
    ['2020-08-01T02:00:00+0200', T],
    ['2020-08-01T02:00:00+02', T],
    ['2020-07-31T19:00:00-05:00', T],
    ['2020-08-01T00:00:00.250Z', T + 0.25],
    ['2020-08-01T00:00', T],
    ['  2020-08-01  ', T],
  ])('%s', (text, expected) => {
    expect(parseIsoTime(text)).toBeCloseTo(expected, 6);
  });

  it.each(['', 'yesterday', '2020-8-1', '2020-02-30', '2020-13-01', '2020-08-01T24:00:00Z', '2020-08-01T00:00:00+25:00', '1596240000', '2020-08-01T00:00:00 UTC'])('"%s" is not a time', (text) => {
    expect(parseIsoTime(text)).toBeNull();
  });
});
