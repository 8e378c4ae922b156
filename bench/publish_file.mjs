#!/usr/bin/env node
/**
 * Publishes an embeddings file to Redis as a new version of its keyspace (what `embed --publish` does
 * after writing the file), so bench/scale.mjs times publishing apart from embedding. One JSON line.
 *
 *   node bench/publish_file.mjs --file embeddings.parquet --url redis://127.0.0.1:PORT
 */
import { arg } from './common.mjs';

const { publishTarget } = await import('../dist/cli/publish_flags.js');
const { publishEmbeddingFile } = await import('../dist/online_store/publish_snapshot.js');
const r = await publishEmbeddingFile(arg('file'), publishTarget({ publish: arg('url') }));
console.log(JSON.stringify(r));
// The Redis client's socket would keep the process alive.
process.exit(0);
