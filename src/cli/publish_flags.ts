/**
 * `--publish URL`, `--publish-prefix P` and `--publish-ttl T` of `embed` and `predict`: where a finished
 * snapshot goes in the online store (`artifacts/online_store.ts`), checked before any work.
 */
import { Option } from 'commander';
import { DEFAULT_KEY_PREFIX, DEFAULT_TTL_SECONDS, parseStoreUrl, type OnlineStoreTarget } from '../artifacts/online_store.js';
import { UsageError } from '../core/errors.js';
import { optional, secondsFlag } from './flags.js';

export interface PublishFlags {
  publish?: unknown;
  publishPrefix?: unknown;
  publishTtl?: unknown;
  shard?: unknown;
}

/** The three options, for a command's declaration. */
export function publishOptions(): Option[] {
  return [
    new Option('--publish <url>', 'then publish every entity\'s value to Redis (redis://HOST:PORT[/DB]) as a new version: <prefix>:<model>:<version>:<key>, switched by one pointer key'),
    new Option('--publish-prefix <p>', 'key prefix of the published keyspace').default(DEFAULT_KEY_PREFIX),
    new Option('--publish-ttl <t>', 'how long published values live (seconds or e.g. 2d); must outlast the refresh interval').default(String(DEFAULT_TTL_SECONDS), '2 days'),
  ];
}

export function publishTarget(o: PublishFlags): OnlineStoreTarget | undefined {
  if (o.publish === undefined) return undefined;
  if (o.shard !== undefined) throw new UsageError('--publish needs every entity; it cannot go with --shard', { hint: 'publish once all shards are written: run the command without --shard, or publish the folder afterwards' });
  const prefix = String(o.publishPrefix ?? DEFAULT_KEY_PREFIX);
  if (prefix === '' || prefix.includes(' ')) throw new UsageError('--publish-prefix must be a non-empty word', { value: prefix });
  const ttl = optional(secondsFlag('--publish-ttl'), o.publishTtl) ?? DEFAULT_TTL_SECONDS;
  if (!(ttl >= 1)) throw new UsageError('--publish-ttl must be at least 1 second', { value: o.publishTtl });
  return { url: parseStoreUrl(String(o.publish), '--publish'), keyPrefix: prefix, ttlSeconds: Math.round(ttl) };
}
