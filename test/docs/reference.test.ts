import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { configReference } from '../../src/config/reference.js';

describe('docs/config.md', () => {
  it('is the reference generated from the schema (regenerate with `gnnctl config reference > docs/config.md`)', () => {
    expect(readFileSync(new URL('../../docs/config.md', import.meta.url), 'utf8')).toBe(configReference());
  });

  it('documents every distillation key with Kumo names', () => {
    const md = configReference();
    for (const key of ['embedding_keys', 'max_embedding_offset', 'min_embedding_offset', 'real_time_offset', 'real_time_interactions']) {
      expect(md).toContain(`\`distillation.${key}\``);
    }
  });
});
