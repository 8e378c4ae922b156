#!/usr/bin/env node
/**
 * One served request against an exported model: `gnnctl serve`'s server in this process on an ephemeral
 * port, a request built from the model's own metadata (the pipeline's smoke request). One JSON line.
 *
 *   node bench/serve_request.mjs --repository DIR --model NAME
 */
import { writeFileSync } from 'node:fs';
import { arg } from './common.mjs';

// Peak RSS for bench/scale.mjs, as bench/gnnctl_rss.mjs writes it.
process.on('exit', () => {
  if (process.env.GNNCTL_BENCH_RSS_FILE) writeFileSync(process.env.GNNCTL_BENCH_RSS_FILE, String(process.resourceUsage().maxRSS));
});

const { smokeRequest } = await import('../dist/pipeline/smoke.js');
const r = await smokeRequest(null, arg('repository'), arg('model'));
console.log(JSON.stringify(r));
