/**
 * The config reference, generated from the zod schema (so it cannot drift from what `loadConfig`
 * accepts): every key with its type, default and description, as Markdown.
 */
import { z } from 'zod';
import { configSchema } from './schema.js';

interface JsonSchema {
  type?: string | string[];
  properties?: Record<string, JsonSchema>;
  additionalProperties?: JsonSchema | boolean;
  items?: JsonSchema;
  anyOf?: JsonSchema[];
  enum?: unknown[];
  default?: unknown;
  description?: string;
  minimum?: number;
  maximum?: number;
  pattern?: string;
  required?: string[];
}

function typeOf(s: JsonSchema): string {
  if (s.enum) return s.enum.map((v) => JSON.stringify(v)).join(' \\| ');
  if (s.anyOf) return s.anyOf.map(typeOf).join(' \\| ');
  if (s.type === 'array') return `list of ${s.items ? typeOf(s.items) : 'values'}`;
  if (s.type === 'object' && s.additionalProperties && typeof s.additionalProperties === 'object' && !s.properties) return `map of name → ${typeOf(s.additionalProperties)}`;
  if (s.type === 'integer') return `integer${range(s)}`;
  if (s.type === 'number') return `number${range(s)}`;
  return Array.isArray(s.type) ? s.type.join(' \\| ') : (s.type ?? 'any');
}

function range(s: JsonSchema): string {
  // zod writes the safe-integer limits for every int(); they are noise in a reference.
  const min = s.minimum !== undefined && Math.abs(s.minimum) < Number.MAX_SAFE_INTEGER ? s.minimum : undefined;
  const max = s.maximum !== undefined && Math.abs(s.maximum) < Number.MAX_SAFE_INTEGER ? s.maximum : undefined;
  if (min !== undefined && max !== undefined) return ` (${min}–${max})`;
  if (min !== undefined) return ` (≥ ${min})`;
  if (max !== undefined) return ` (≤ ${max})`;
  return '';
}

function rows(s: JsonSchema, path: string, out: string[]): void {
  const props = s.properties ?? {};
  for (const [key, child] of Object.entries(props)) {
    const p = path ? `${path}.${key}` : key;
    const required = s.required?.includes(key) && child.default === undefined;
    const def = child.default === undefined ? (required ? 'required' : '') : `\`${JSON.stringify(child.default)}\``;
    out.push(`| \`${p}\` | ${typeOf(child)} | ${def} | ${(child.description ?? '').replace(/\|/g, '\\|')} |`);
    if (child.properties) rows(child, p, out);
    const valueSchema = child.additionalProperties;
    if (child.type === 'object' && valueSchema && typeof valueSchema === 'object' && valueSchema.properties) rows(valueSchema, `${p}.<name>`, out);
  }
}

export function configReference(): string {
  const schema = z.toJSONSchema(configSchema, { io: 'input', unrepresentable: 'any' }) as JsonSchema;
  const out = [
    '# Config reference',
    '',
    'Generated from the zod schema by `gnnctl config reference` (do not edit by hand). Durations are',
    'written as text (`"14 days"`, `"12 hours"`, `"30 minutes"`) or as seconds. Every object is strict:',
    'an unknown key is an error with a did-you-mean.',
    '',
    '| key | type | default | description |',
    '|---|---|---|---|',
  ];
  rows(schema, '', out);
  return `${out.join('\n')}\n`;
}
