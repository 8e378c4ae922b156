import { describe, expect, it } from 'vitest';
import { DEFAULT_TTL_SECONDS, decodeVector, encodeVector, parseStoreUrl, versionName } from '../../src/artifacts/online_store.js';
import { UsageError } from '../../src/core/errors.js';
import { publishTarget } from '../../src/cli/publish_flags.js';

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
