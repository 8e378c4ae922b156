/**
 * `--publish URL`, `--publish-prefix P` and `--publish-ttl T` of `embed`, `predict` and `refresh`: where a
 * finished snapshot goes in the online store (`artifacts/online_store.ts`), checked before any work. The
 * config's `online_store:` block gives the same three; a flag overrides its field. `refresh` (and
 * `pipeline`) publish when the block names a URL; `embed` and `predict` only with `--publish`.
 */
import { Option } from 'commander';
import { DEFAULT_KEY_PREFIX, DEFAULT_TTL_SECONDS, parseStoreUrl, type OnlineStoreTarget } from '../artifacts/online_store.js';
import type { OnlineStoreConfig } from '../config/schema.js';
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
  // No commander defaults: an unset flag must fall through to the config's online_store block.
  return [
    new Option('--publish <url>', 'then publish every entity\'s value to Redis (redis://HOST:PORT[/DB]) as a new version: <prefix>:<model>:<version>:<key>, switched by one pointer key (default: online_store.url for refresh)'),
    new Option('--publish-prefix <p>', `key prefix of the published keyspace (default: online_store.key_prefix, or ${DEFAULT_KEY_PREFIX})`),
    new Option('--publish-ttl <t>', 'how long published values live (seconds or e.g. 2d); must outlast the refresh interval (default: online_store.ttl, or 2 days)'),
  ];
}

/**
 * Where to publish: `--publish` (or, with `useBlockUrl`, the block's url), with the prefix and TTL from
 * the flags, then the block, then the defaults. Undefined when there is no URL.
 */
export function publishTarget(o: PublishFlags, block?: OnlineStoreConfig, options: { useBlockUrl?: boolean } = {}): OnlineStoreTarget | undefined {
  const url = o.publish !== undefined ? String(o.publish) : options.useBlockUrl ? block?.url : undefined;
  if (url === undefined) return undefined;
  const flag = o.publish !== undefined ? '--publish' : 'online_store.url';
  if (o.shard !== undefined) throw new UsageError(`${flag} needs every entity; it cannot go with --shard`, { hint: 'publish once all shards are written: run the command without --shard, or publish the folder afterwards' });
  const prefix = o.publishPrefix !== undefined ? String(o.publishPrefix) : (block?.key_prefix ?? DEFAULT_KEY_PREFIX);
  if (prefix === '' || /\s/.test(prefix)) throw new UsageError('--publish-prefix must be a non-empty word', { value: prefix });
  const ttl = optional(secondsFlag('--publish-ttl'), o.publishTtl) ?? block?.ttl ?? DEFAULT_TTL_SECONDS;
  if (!(ttl >= 1)) throw new UsageError('--publish-ttl must be at least 1 second', { value: o.publishTtl });
  return { url: parseStoreUrl(url, flag), keyPrefix: prefix, ttlSeconds: Math.round(ttl) };
}
