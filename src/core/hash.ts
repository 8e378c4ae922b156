import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';

/** Short, stable hex digest of a JSON-serializable value (keys sorted, so object order does not matter). */
export function hashValue(value: unknown, length = 12): string {
  return createHash('sha256').update(stableStringify(value)).digest('hex').slice(0, length);
}

export function stableStringify(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) return `[${value.map(stableStringify).join(',')}]`;
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([, v]) => v !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${stableStringify(v)}`).join(',')}}`;
}

/** sha256 of a file's bytes, streamed (bounded memory for multi-GB files). */
export function hashFile(path: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const h = createHash('sha256');
    createReadStream(path)
      .on('data', (chunk) => h.update(chunk))
      .on('error', reject)
      .on('end', () => resolve(h.digest('hex')));
  });
}
