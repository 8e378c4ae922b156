/** The open-file limit read from /proc/self/limits, and the connection cap derived from it. */
import { describe, expect, it } from 'vitest';
import { defaultMaxConnections, fdHeadroom, openFileLimit } from '../../src/serve/fd_limit.js';

const LIMITS = `Limit                     Soft Limit           Hard Limit           Units
Max cpu time              unlimited            unlimited            seconds
Max open files            20000                20000                files
Max locked memory         8388608              8388608              bytes
`;

describe('fd_limit', () => {
  it('reads the soft limit on open files', () => {
    expect(openFileLimit(LIMITS)).toBe(20000);
    expect(openFileLimit(LIMITS.replace('20000                20000', '1024                 4096'))).toBe(1024);
    expect(openFileLimit('no such line')).toBe(1024);
  });

  it('keeps a tenth of the limit, at least 128 descriptors, spare', () => {
    expect(defaultMaxConnections(20000)).toBe(18000);
    expect(defaultMaxConnections(1024)).toBe(896);
    expect(defaultMaxConnections(100)).toBe(16);
    expect(fdHeadroom(20000)).toBe(2000);
  });

  it('this process: a cap below its real limit', () => {
    expect(defaultMaxConnections()).toBeLessThan(openFileLimit());
  });
});
