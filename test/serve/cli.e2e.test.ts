/**
 * `gnnctl serve` as users run it: the real binary (bin/gnnctl.js → dist/) in a child process, with the
 * serving flags, `--json`, a SIGTERM to stop it, and bad flag values refused with exit code 2.
 */
import { spawnSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { get, infer, inferBody, RTI_PATH, tempRepo, txRequest, type TempRepo } from './helpers.js';
import { BIN, spawnServe } from './spawn_serve.js';

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
