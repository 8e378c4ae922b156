import { describe, expect, it } from 'vitest';
import { fixedTicks, niceTicks } from '../../src/report/charts/scale.js';
import { esc, fmtAge, fmtBytes, fmtInt, fmtMetric, fmtMs, fmtPercent, fmtSeconds, fmtSigned, fmtTime } from '../../src/report/format.js';

describe('report formatting', () => {
  it.each([
    [3600, '1\u00a0hour'],
    [43200, '12\u00a0hours'],
    [5400, '90\u00a0minutes'],
    [1209600, '14\u00a0days'],
    [1891452, '21.9\u00a0days'],
    [86400 * 365.25 * 6.2, '6.2\u00a0years'],
    [30, '30\u00a0seconds'],
    [0, '0\u00a0seconds'],
  ])('fmtAge(%s) = %s', (s, text) => expect(fmtAge(s)).toBe(text));

  it('formats metrics, differences, counts, sizes and times', () => {
    expect(fmtMetric(0.91344)).toBe('0.9134');
    expect(fmtMetric(null)).toBe('—');
    expect(fmtMetric(Number.NaN)).toBe('—');
    expect(fmtSigned(0.0481)).toBe('+0.0481');
    expect(fmtSigned(-0.012)).toBe('\u22120.0120');
    expect(fmtSigned(-0.00001)).toBe('0.0000');
    expect(fmtPercent(0.0453, 2)).toBe('4.53\u202f%');
    expect(fmtPercent(0.056, 1, true)).toBe('+5.6\u202f%');
    expect(fmtInt(185759)).toBe('185,759');
    expect(fmtBytes(21016)).toBe('20.5\u00a0KiB');
    expect(fmtBytes(300164)).toBe('293\u00a0KiB');
    expect(fmtMs(0.3164)).toBe('0.316\u00a0ms');
    expect(fmtSeconds(349.04)).toBe('5\u00a0min 49\u00a0s');
    expect(fmtSeconds(0.65)).toBe('0.65\u00a0s');
    expect(fmtTime('2020-09-09T00:00:00Z')).toBe('2020-09-09 00:00 UTC');
    expect(fmtTime('2020-09-22T23:54:12Z')).toBe('2020-09-22 23:54:12 UTC');
    expect(esc(`<a href="x">&'</a>`)).toBe('&lt;a href=&quot;x&quot;&gt;&amp;&#39;&lt;/a&gt;');
  });

  it('puts axis ticks on round numbers around the data', () => {
    expect(niceTicks(0.0689, 0.10725, 5)).toMatchObject({ domain: [0.06, 0.11], step: 0.01 });
    expect(niceTicks(0.06, 0.11, 5).ticks).toEqual([0.06, 0.07, 0.08, 0.09, 0.1, 0.11]);
    expect(niceTicks(3, 3, 5).ticks.length).toBeGreaterThan(1);
    expect(niceTicks(1, 6, 5, { integer: true }).ticks).toEqual([1, 2, 3, 4, 5, 6]);
    expect(fixedTicks([0, 1]).ticks).toEqual([0, 0.2, 0.4, 0.6, 0.8, 1]);
  });
});
