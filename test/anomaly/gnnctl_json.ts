/**
 * The real binary with `--json`, for the anomaly end-to-end tests: exit status, the last stdout line
 * parsed (the command's result, or the error object on failure) and stderr for assertion messages.
 */
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';

const BIN = join(import.meta.dirname, '..', '..', 'bin', 'gnnctl.js');

export interface JsonRun {
  status: number | null;
  /** `any`: each test reads its own command's fields */
  json: Record<string, any>;
  stderr: string;
}

export function gnnctlJson(args: string[], cwd: string): JsonRun {
  const r = spawnSync('node', [BIN, ...args, '--json'], { encoding: 'utf8', cwd });
  let json: Record<string, unknown> = {};
  try {
    json = JSON.parse(r.stdout.trim().split('\n').pop() ?? '{}') as Record<string, unknown>;
  } catch {
    /* the assertion on status says what went wrong */
  }
  return { status: r.status, json, stderr: r.stderr };
}
