/**
 * The anomaly report's two charts on hand-made data: the score timeline (a point per snapshot, a dot per
 * alert, a band per fault window, log scale only when scores span decades) and the service graph.
 */
import { describe, expect, it } from 'vitest';
import { scoreTimeline } from '../../src/report/charts/score_timeline.js';
import { serviceGraph } from '../../src/report/charts/service_graph.js';
import { checkWellFormed, findElements } from './wellformed.js';

const ts = Array.from({ length: 10 }, (_, i) => 1_800_000_000 + 60 * i);
const base = { id: 't', title: 'scores', desc: 'test', ts, threshold: ts.map((_, i) => (i === 0 ? null : 2)), windows: [{ start: ts[3]!, end: ts[5]!, label: 'fault' }] };

describe('scoreTimeline', () => {
  it('draws every snapshot, every alert and every fault window', () => {
    const score = [1, 1.2, 0.9, 3, 4, 1, 1, 2.5, 1, 1];
    const svg = scoreTimeline({ ...base, score, alert: score.map((s) => s > 2) });
    expect(checkWellFormed(svg)).toEqual([]);
    expect(findElements(svg, 'path', { 'data-series': 'score' })[0]!.attrs['data-n']).toBe('10');
    expect(findElements(svg, 'path', { 'data-series': 'threshold' })[0]!.attrs['data-n']).toBe('9');
    expect(findElements(svg, 'g', { class: 'alerts' })[0]!.attrs['data-n']).toBe('3');
    expect(findElements(svg, 'rect', { class: 'fault-window' })).toHaveLength(1);
    expect(svg).toContain('>score</text>');
  });

  it('switches to a log axis when one spike spans more than two decades', () => {
    const score = [1, 1, 1, 5000, 1, 1, 1, 1, 1, 1];
    const svg = scoreTimeline({ ...base, score, alert: score.map((s) => s > 2) });
    expect(svg).toContain('score (log scale)');
    expect(svg).toContain('>1,000</text>');
  });

  it('says so when there is nothing to draw', () => {
    expect(scoreTimeline({ ...base, ts: [], score: [], threshold: [], alert: [] })).toContain('no scores recorded');
  });
});

describe('serviceGraph', () => {
  it('puts the centre service in the middle and draws each call between drawn services', () => {
    const svg = serviceGraph({
      id: 'g',
      title: 'graph',
      desc: 'test',
      width: 600,
      height: 400,
      nodes: [{ service: 'db', rank: 1 }, { service: 'api', rank: null }, { service: 'cache', rank: 3 }],
      edges: [{ source: 'api', destination: 'db', rate: 10 }, { source: 'api', destination: 'cache', rate: 1 }, { source: 'gone', destination: 'db', rate: 5 }],
    });
    expect(checkWellFormed(svg)).toEqual([]);
    expect(findElements(svg, 'circle')[0]).toMatchObject({ attrs: expect.objectContaining({ cx: '300', cy: '200' }) });
    expect(findElements(svg, 'g', { class: 'service' }).map((e) => [e.attrs['data-service'], e.attrs['data-rank']])).toEqual([['db', '1'], ['api', undefined], ['cache', '3']]);
    const calls = findElements(svg, 'line', { class: 'call' });
    expect(calls.map((c) => `${c.attrs['data-source']}>${c.attrs['data-destination']}`)).toEqual(['api>db', 'api>cache']);
    // width by traffic: the busier call is drawn thicker
    expect(Number(calls[0]!.attrs['stroke-width'])).toBeGreaterThan(Number(calls[1]!.attrs['stroke-width']));
  });
});
