#!/usr/bin/env node
/**
 * Relational aggregates at a size: plan + computation (DuckDB sorts, one linear sweep) for an entity task (every
 * customer at `--anchors` weekly anchors, the churn task's shape) and a fact-row task (every transaction
 * at its own time, fraud's shape), capped at `--max` features. Wall and CPU
 * time (CPU beside wall: on a shared machine wall time mostly measures the other processes) and peak RSS,
 * one JSON object. GNNCTL_DUCKDB_MEMORY caps DuckDB's memory (core/duckdb_memory.ts).
 *
 *   npm run build && node bench/aggregates.mjs --size medium     (target, issue 33: ≤ 60 s at medium)
 */
import { arg, benchConfig, dataset, peakRssMb } from './common.mjs';

const size = arg('size', 'medium');
const anchors = Number(arg('anchors', '10'));
const max = Number(arg('max', '200'));
const data = await dataset(size);
const { loadConfig } = await import('../dist/config/load.js');
const { buildGraph } = await import('../dist/graph/build.js');
const { planAggregates, computeAggregates } = await import('../dist/graph/aggregates.js');
const { withDuck, lit } = await import('../dist/data/duck.js');
const { rowsPath } = await import('../dist/artifacts/graph_manifest.js');
const { setQuiet } = await import('../dist/core/log.js');
setQuiet(true);

const cfg = loadConfig(benchConfig(size, data));
const { dir, manifest } = await buildGraph(cfg);
const [, last] = manifest.tables.transactions.time_range;
const DAY = 86400;
const anchorList = Array.from({ length: anchors }, (_, k) => Math.floor(last / DAY) * DAY - (k + 1) * 7 * DAY);

async function run(kind) {
  const entity = kind === 'entity' ? 'customers' : 'transactions';
  const plan = planAggregates(manifest, entity, kind, { max, excluded: new Set(['transactions.fraud']) });
  return withDuck(async ({ conn }) => {
    if (kind === 'entity') {
      await conn.run(
        `CREATE TEMP TABLE examples AS SELECT a.anchor, c.__node AS node FROM read_parquet(${lit(rowsPath(dir, manifest, 'customers'))}) c ` +
          `CROSS JOIN (SELECT unnest([${anchorList.join(', ')}]::DOUBLE[]) AS anchor) a`,
      );
    } else {
      await conn.run(`CREATE TEMP TABLE examples AS SELECT __t AS anchor, __node AS node FROM read_parquet(${lit(rowsPath(dir, manifest, 'transactions'))})`);
    }
    const t0 = performance.now();
    const c0 = process.cpuUsage();
    const r = await computeAggregates(conn, dir, manifest, plan);
    const cpu = process.cpuUsage(c0);
    return {
      examples: r.rows,
      features: plan.features.length,
      candidates: plan.candidates,
      seconds: +((performance.now() - t0) / 1000).toFixed(2),
      // DuckDB's threads run inside this process, so this counts its sorting too.
      cpu_seconds: +((cpu.user + cpu.system) / 1e6).toFixed(2),
    };
  });
}

const entity = await run('entity');
const fact = await run('fact');
console.log(
  JSON.stringify({
    bench: 'relational aggregates',
    size,
    anchors,
    max,
    entity,
    fact,
    seconds: +(entity.seconds + fact.seconds).toFixed(2),
    cpu_seconds: +(entity.cpu_seconds + fact.cpu_seconds).toFixed(2),
    duckdb_memory_limit: process.env.GNNCTL_DUCKDB_MEMORY ?? null,
    peak_rss_mb: peakRssMb(),
    load_average: (await import('node:os')).loadavg().map((v) => +v.toFixed(1)),
  }),
);
