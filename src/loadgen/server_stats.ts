/**
 * The server's side of a load test, from two scrapes of a gnnctl server's `/metrics` (before and after):
 * mean time per request in each phase, mean batch size, and main-thread utilisation. Other servers
 * (Triton) have no such metrics; the result is then undefined.
 */
import { request } from 'node:http';

export interface Scrape {
  /** Sample name with labels (as written) → value. */
  samples: Map<string, number>;
}

export interface ServerBreakdown {
  requests: number;
  /** Mean milliseconds per request in each phase (batch phases spread over the batch's requests). */
  phase_ms_per_request: Record<string, number>;
  mean_batch_rows: number;
  batches: number;
  /** Main-thread busy share over the run (from the event-loop utilisation gauge at the second scrape). */
  event_loop_utilization?: number;
  /** Main-thread event-loop delay over the run, ms (p99 and max). */
  event_loop_delay_ms?: { p99: number; max: number };
  /**
   * Request time inside the server (head received → response written), ms, estimated from the
   * histogram's buckets (upper bound of the bucket holding the quantile).
   */
  request_ms?: { p50: number; p90: number; p99: number };
}

export async function scrapeMetrics(baseUrl: string): Promise<Scrape | undefined> {
  const text = await new Promise<string | undefined>((resolve) => {
    const req = request(new URL('/metrics', baseUrl), { method: 'GET', timeout: 5000 }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve(res.statusCode === 200 ? body : undefined));
    });
    req.on('error', () => resolve(undefined));
    req.on('timeout', () => req.destroy());
    req.end();
  });
  if (text === undefined || !text.includes('gnnctl_request_phase_seconds_total')) return undefined;
  const samples = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const sp = line.lastIndexOf(' ');
    samples.set(line.slice(0, sp), Number(line.slice(sp + 1)));
  }
  return { samples };
}

/** What happened on the server between two scrapes. */
export function breakdown(before: Scrape, after: Scrape): ServerBreakdown {
  const delta = (name: string) => (after.samples.get(name) ?? 0) - (before.samples.get(name) ?? 0);
  const sumOver = (prefix: string, filter: (labels: string) => boolean = () => true) => {
    let total = 0;
    for (const key of after.samples.keys()) {
      if (!key.startsWith(prefix)) continue;
      const labels = key.slice(prefix.length);
      if (labels !== '' && !labels.startsWith('{')) continue;
      if (filter(labels)) total += delta(key);
    }
    return total;
  };
  const requests = sumOver('gnnctl_inference_requests_total');
  const phases: Record<string, number> = {};
  for (const key of after.samples.keys()) {
    const m = /^gnnctl_request_phase_seconds_total\{phase="([a-z_]+)"\}$/.exec(key);
    if (m) phases[m[1]!] = requests > 0 ? (delta(key) * 1000) / requests : 0;
  }
  const batches = sumOver('gnnctl_inference_batch_size_count');
  const rows = sumOver('gnnctl_inference_batch_size_sum');
  // Request-duration buckets summed over models and versions.
  const buckets = new Map<number, number>();
  for (const key of after.samples.keys()) {
    const m = /^gnnctl_inference_request_duration_seconds_bucket\{.*le="([^"]+)"\}$/.exec(key);
    if (m) buckets.set(m[1] === '+Inf' ? Infinity : Number(m[1]), (buckets.get(m[1] === '+Inf' ? Infinity : Number(m[1])) ?? 0) + delta(key));
  }
  const les = [...buckets.keys()].sort((a, b) => a - b);
  const count = buckets.get(Infinity) ?? 0;
  const quantile = (q: number) => (les.find((le) => buckets.get(le)! >= q * count) ?? Infinity) * 1000;
  const p99 = after.samples.get('gnnctl_event_loop_delay_p99_seconds');
  const max = after.samples.get('gnnctl_event_loop_delay_max_seconds');
  return {
    requests,
    phase_ms_per_request: phases,
    mean_batch_rows: batches > 0 ? rows / batches : 0,
    batches,
    event_loop_utilization: after.samples.get('gnnctl_event_loop_utilization'),
    ...(p99 !== undefined && max !== undefined ? { event_loop_delay_ms: { p99: p99 * 1000, max: max * 1000 } } : {}),
    ...(count > 0 ? { request_ms: { p50: quantile(0.5), p90: quantile(0.9), p99: quantile(0.99) } } : {}),
  };
}
