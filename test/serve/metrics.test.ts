import { describe, expect, it } from 'vitest';
import { Registry } from '../../src/serve/metrics.js';

describe('Registry', () => {
  it('renders the Prometheus text format 0.0.4', () => {
    const r = new Registry();
    const c = r.counter('x_requests_total', 'Requests.');
    c.inc({ model: 'm', status: '200' });
    c.inc({ model: 'm', status: '200' }, 2);
    c.inc({ model: 'a"b\\c\nd', status: '400' });
    const g = r.gauge('x_inflight', 'In flight.');
    g.inc();
    g.inc();
    g.dec();
    const h = r.histogram('x_seconds', 'Latency.', [0.1, 1]);
    h.observe({ model: 'm' }, 0.05);
    h.observe({ model: 'm' }, 0.5);
    h.observe({ model: 'm' }, 5);
    expect(r.render()).toBe(
      [
        '# HELP x_requests_total Requests.',
        '# TYPE x_requests_total counter',
        'x_requests_total{model="m",status="200"} 3',
        'x_requests_total{model="a\\"b\\\\c\\nd",status="400"} 1',
        '# HELP x_inflight In flight.',
        '# TYPE x_inflight gauge',
        'x_inflight 1',
        '# HELP x_seconds Latency.',
        '# TYPE x_seconds histogram',
        'x_seconds_bucket{model="m",le="0.1"} 1',
        'x_seconds_bucket{model="m",le="1"} 2',
        'x_seconds_bucket{model="m",le="+Inf"} 3',
        'x_seconds_sum{model="m"} 5.55',
        'x_seconds_count{model="m"} 3',
        '',
      ].join('\n'),
    );
  });
});
