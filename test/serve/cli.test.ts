/**
 * `gnnctl serve` as users run it: the real binary (bin/gnnctl.js → dist/) in a child process, with the
 * serving flags, `--json`, a SIGTERM to stop it, and bad flag values refused with exit code 2.
 */
import { spawn, spawnSync } from 'node:child_process';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { get, infer, inferBody, RTI_PATH, tempRepo, txRequest, waitFor, type TempRepo } from './helpers.js';

const BIN = fileURLToPath(new URL('../../bin/gnnctl.js', import.meta.url));

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

/** Starts `gnnctl serve` with `args`; resolves once /v2/health/ready answers 200 (over `scheme`). */
export async function spawnServe(args: string[], options: { scheme?: 'http' | 'https'; env?: Record<string, string>; ready?: (url: string) => Promise<boolean> } = {}) {
  const port = await freePort();
  const child = spawn(process.execPath, [BIN, 'serve', '--port', String(port), '--poll-interval', '0', ...args], { env: { ...process.env, ...options.env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  const exited = new Promise<number>((resolve) => child.on('exit', (code) => resolve(code ?? -1)));
  const url = `${options.scheme ?? 'http'}://127.0.0.1:${port}`;
  const ready =
    options.ready ??
    (async (u: string) => {
      try {
        return (await fetch(`${u}/v2/health/ready`)).status === 200;
      } catch {
        return false;
      }
    });
  let done = false;
  void exited.then(() => (done = true));
  await waitFor(async () => done || (await ready(url)), 60_000, 'gnnctl serve to be ready');
  if (done) throw new Error(`gnnctl serve exited early:\n${stderr}`);
  return {
    url,
    stop: async () => {
      child.kill('SIGTERM');
      const code = await exited;
      return { code, stdout, stderr };
    },
  };
}

describe('gnnctl serve (the binary)', () => {
  let repo: TempRepo;
  beforeAll(() => {
    repo = tempRepo({ maxBatchSize: 8, maxQueueDelayUs: 1_000_000 });
  });
  afterAll(() => repo?.cleanup());

  it('serves with --request-timeout and --max-sequence-length, and prints its --json result at SIGTERM', async () => {
    const s = await spawnServe(['--model-repository', repo.root, '--request-timeout', '200ms', '--max-sequence-length', '4', '--json']);
    const long = await infer(s.url, inferBody(txRequest(1, 5)));
    expect([long.status, long.body.error]).toEqual([400, expect.stringMatching(new RegExp(`"${RTI_PATH}:price" has 5 elements .* cap of 4 \\(gnnctl serve --max-sequence-length\\)`))]);
    // The queue delay (1 s) is longer than the deadline (200 ms).
    const late = await infer(s.url, inferBody(txRequest(1, 2)));
    expect([late.status, late.body.error]).toEqual([504, expect.stringMatching(/deadline of 200 ms \(the server's --request-timeout\)/)]);
    expect((await get(s.url, '/v2')).json()).toMatchObject({ extensions: ['binary_tensor_data', 'model_configuration', 'statistics'] });
    const { code, stdout } = await s.stop();
    expect(code).toBe(0);
    const result = JSON.parse(stdout) as { stopped_by: string; inference_requests: { success: number; failure: number } };
    expect(result).toMatchObject({ stopped_by: 'SIGTERM', inference_requests: { success: 0, failure: 2 } });
  });

  it.each([
    [['--max-sequence-length', '-1'], /--max-sequence-length must be an integer in 0\.\.2147483647/],
    [['--request-timeout', 'soon'], /--request-timeout must be a number of seconds or a duration/],
  ])('refuses %j with exit code 2', (flags, message) => {
    const r = spawnSync(process.execPath, [BIN, 'serve', '--model-repository', repo.root, '--port', '0', ...flags], { encoding: 'utf8' });
    expect(r.status).toBe(2);
    expect(r.stderr).toMatch(message);
  });
});
