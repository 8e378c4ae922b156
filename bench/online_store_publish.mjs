/**
 * Publishing to the online store at H&M `large` scale: 1.37M synthetic 64-dim embeddings (float32 bytes)
 * published as one version to a throwaway local redis-server (Debian's, on a free port, no persistence),
 * through the same `publishValues` as `embed --publish`. Prints one JSON object: seconds, keys/s, the
 * publisher's peak RSS, and Redis's used memory.
 *
 *   npm run build && node bench/online_store_publish.mjs [--rows 1370000] [--dim 64] [--window 4]
 *
 * GNNCTL_ROOT=<folder> runs another build (its dist/). A benchmark, not a test.
 */
import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { arg, ROOT } from './common.mjs';

const rows = Number(arg('rows', '1370000'));
const dim = Number(arg('dim', '64'));
const window = Number(arg('window', '4'));
const dist = join(process.env.GNNCTL_ROOT ?? ROOT, 'dist');
const { publishValues } = await import(pathToFileURL(join(dist, 'online_store', 'publisher.js')).href);
const { connectRedis } = await import(pathToFileURL(join(dist, 'online_store', 'redis_connection.js')).href);

const port = await new Promise((resolve) => {
  const s = createServer().listen(0, '127.0.0.1', () => {
    const p = s.address().port;
    s.close(() => resolve(p));
  });
});
const redis = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: ['ignore', 'pipe', 'inherit'] });
await new Promise((resolve) => redis.stdout.on('data', (d) => String(d).includes('Ready to accept') && resolve()));
const url = `redis://127.0.0.1:${port}`;

async function* batches() {
  const size = 2048;
  for (let start = 0; start < rows; start += size) {
    const n = Math.min(size, rows - start);
    const flat = new Float32Array(n * dim);
    for (let i = 0; i < flat.length; i++) flat[i] = Math.sin(start * dim + i);
    const bytes = Buffer.from(flat.buffer);
    const keys = new Array(n);
    const values = new Array(n);
    for (let i = 0; i < n; i++) {
      keys[i] = String(100000000 + start + i);
      values[i] = bytes.subarray(i * dim * 4, (i + 1) * dim * 4);
    }
    yield { keys, values };
  }
}

let peakRss = 0;
const sampler = setInterval(() => (peakRss = Math.max(peakRss, process.memoryUsage().rss)), 100);
try {
  const r = await publishValues(batches(), { target: { url, keyPrefix: 'bench', ttlSeconds: 3600 }, model: 'customers', version: 'v1', kind: 'embedding', dim, runId: 'bench', anchorTime: new Date().toISOString(), window });
  clearInterval(sampler);
  const c = await connectRedis(url);
  const info = (await c.info('memory')).toString();
  c.destroy();
  console.log(JSON.stringify({ rows, dim, window, seconds: r.seconds, keys_per_s: r.keys_per_s, peak_rss_mb: Math.round(peakRss / 2 ** 20), redis_used_memory_mb: Math.round(Number(/used_memory:(\d+)/.exec(info)[1]) / 2 ** 20), load_average: loadavg().map((x) => Math.round(x * 100) / 100) }, null, 2));
} finally {
  clearInterval(sampler);
  redis.kill('SIGTERM');
}
