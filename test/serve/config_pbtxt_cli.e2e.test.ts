import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '..', '..');
const dir = mkdtempSync(join(tmpdir(), 'gnnctl-pbtxt-cli-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A model repository with one ensemble model whose config.pbtxt sets ModelEnsembling field 2 by `field`. */
function repository(field: string): string {
  const repo = mkdtempSync(join(dir, 'repo-'));
  mkdirSync(join(repo, 'ens', '1'), { recursive: true });
  const text = [
    'name: "ens"',
    'platform: "ensemble"',
    'max_batch_size: 8',
    'input [ { name: "x" data_type: TYPE_FP32 dims: [ 1 ] } ]',
    'output [ { name: "y" data_type: TYPE_FP32 dims: [ 1 ] } ]',
    'ensemble_scheduling {',
    '  step [ { model_name: "m" model_version: -1 } ]',
    `  ${field}: 4`,
    '}',
    '',
  ].join('\n');
  writeFileSync(join(repo, 'ens', 'config.pbtxt'), text);
  return repo;
}

function serve(repo: string): Promise<{ code: number | null; stdout: string }> {
  return new Promise((resolve) => {
    const args = [join(ROOT, 'bin', 'gnnctl.js'), 'serve', '--model-repository', repo, '--port', '0', '--poll-interval', '0', '--json'];
    const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'ignore'] });
    let stdout = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.on('exit', (code) => resolve({ code, stdout }));
  });
}

describe('gnnctl serve reading config.pbtxt against the upstream Triton schema', () => {
  it('a misspelled upstream field: exit 5, the JSON error names file, line, column, field path and the fix', async () => {
    const repo = repository('max_inflight_responses');
    const { code, stdout } = await serve(repo);
    expect(code).toBe(5);
    const out = JSON.parse(stdout) as { error: string; hint: string };
    expect(out.error).toBe('ArtifactError');
    expect(out.hint).toContain(`${join(repo, 'ens', 'config.pbtxt')}: invalid Triton model config: line 8, col 3: ensemble_scheduling.max_inflight_responses: unknown field "max_inflight_responses" in ModelEnsembling`);
    expect(out.hint).toContain('did you mean "max_inflight_requests"?');
  });

  it('ModelEnsembling.max_inflight_requests parses; the model is then refused for what serve does not run (ensembles)', async () => {
    const { code, stdout } = await serve(repository('max_inflight_requests'));
    expect(code).toBe(5);
    const out = JSON.parse(stdout) as { hint: string };
    expect(out.hint).not.toMatch(/invalid Triton model config/);
    expect(out.hint).toMatch(/ensemble_scheduling is not supported by gnnctl serve/);
  });
});
