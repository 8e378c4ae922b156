import { describe, expect, it } from 'vitest';
import { DEFAULT_TTL_SECONDS, decodeVector, encodeVector, parseStoreUrl, versionName } from '../../src/artifacts/online_store.js';
import { UsageError } from '../../src/core/errors.js';
import { publishTarget } from '../../src/cli/publish_flags.js';
import { onlineStoreSchema } from '../../src/config/schema.js';

describe('--publish flags', () => {
  it('none: nothing to publish', () => {
    expect(publishTarget({})).toBeUndefined();
  });

  it('a Redis URL with prefix and TTL (seconds or a duration)', () => {
    expect(publishTarget({ publish: 'redis://127.0.0.1:6379/2', publishPrefix: 'shop', publishTtl: '3600' })).toEqual({ url: 'redis://127.0.0.1:6379/2', keyPrefix: 'shop', ttlSeconds: 3600 });
    expect(publishTarget({ publish: 'redis://h:1' })?.ttlSeconds).toBe(DEFAULT_TTL_SECONDS);
    expect(publishTarget({ publish: 'redis://h:1', publishTtl: '90s' })?.ttlSeconds).toBe(90);
  });

  it.each([
    ['http://127.0.0.1:6379', 'must be a Redis URL'],
    ['redis://127.0.0.1:6379/db', 'the path must be a database number'],
    ['not a url', 'must be a Redis URL'],
  ])('refuses %s before any work', (url, message) => {
    expect(() => publishTarget({ publish: url })).toThrow(UsageError);
    expect(() => publishTarget({ publish: url })).toThrow(message);
  });

  it('refuses --shard: a version holds every entity', () => {
    expect(() => publishTarget({ publish: 'redis://h:1', shard: '0/4' })).toThrow('--publish needs every entity');
  });

  it('refuses a TTL under a second', () => {
    expect(() => publishTarget({ publish: 'redis://h:1', publishTtl: '0' })).toThrow('--publish-ttl must be at least 1 second');
  });
});

describe('the config\'s online_store block', () => {
  const block = { url: 'redis://cache:6379/1', key_prefix: 'shop', ttl: 7200 };

  it('refresh and pipeline publish to its URL with its prefix and TTL', () => {
    expect(publishTarget({}, block, { useBlockUrl: true })).toEqual({ url: 'redis://cache:6379/1', keyPrefix: 'shop', ttlSeconds: 7200 });
  });

  it('embed and predict publish only with --publish, taking the prefix and TTL from the block', () => {
    expect(publishTarget({}, block)).toBeUndefined();
    expect(publishTarget({ publish: 'redis://other:1' }, block)).toEqual({ url: 'redis://other:1', keyPrefix: 'shop', ttlSeconds: 7200 });
  });

  it('each flag overrides its field', () => {
    expect(publishTarget({ publish: 'redis://other:1', publishPrefix: 'p', publishTtl: '1h' }, block, { useBlockUrl: true })).toEqual({ url: 'redis://other:1', keyPrefix: 'p', ttlSeconds: 3600 });
    expect(publishTarget({ publishTtl: '60' }, block, { useBlockUrl: true })).toEqual({ url: 'redis://cache:6379/1', keyPrefix: 'shop', ttlSeconds: 60 });
  });

  it('parses from YAML values: a duration TTL, defaults, and a URL check', () => {
    expect(onlineStoreSchema.parse({ url: 'redis://cache:6379/1', ttl: '3 hours' })).toEqual({ url: 'redis://cache:6379/1', key_prefix: 'gnnctl', ttl: 10800 });
    expect(onlineStoreSchema.safeParse({ url: 'http://cache:6379' }).success).toBe(false);
    expect(onlineStoreSchema.safeParse({ url: 'redis://cache:6379', ttl: '0 s' }).success).toBe(false);
    expect(onlineStoreSchema.safeParse({ url: 'redis://cache:6379', prefix: 'x' }).success).toBe(false);
  });

  it('refuses --shard naming the block\'s field', () => {
    expect(() => publishTarget({ shard: '0/2' }, block, { useBlockUrl: true })).toThrow('online_store.url needs every entity');
  });
});

describe('the online store keyspace contract', () => {
  it('names versions after the anchor and run, without the separator', () => {
    expect(versionName('2024-09-15T06:30:00.000Z', 'churn-20240915:x')).toBe('20240915T063000Z.churn-20240915_x');
  });

  it('vectors round-trip as float32 bytes; a wrong length is refused', () => {
    const v = Float32Array.of(1.5, -2, 3.25);
    expect(decodeVector(encodeVector(v), 3)).toEqual(v);
    expect(decodeVector(encodeVector(v), 4)).toBeUndefined();
  });

  it('accepts rediss:// (TLS)', () => {
    expect(parseStoreUrl('rediss://:pw@cache.internal:6380/0', '--online-store')).toBe('rediss://:pw@cache.internal:6380/0');
  });
});
