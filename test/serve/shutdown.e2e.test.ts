/**
 * Graceful shutdown through the command itself: a real SIGTERM to this process while requests wait in
 * the batcher. Every in-flight request is answered, the listener closes, and the command returns exit
 * code 0 with its result.
 */
import { request } from 'node:http';
import { afterAll, describe, expect, it } from 'vitest';
import { runCommand } from '../../src/cli/run.js';
import { serveCommand, type ServeCommandOptions } from '../../src/cli/commands/serve.js';
import type { RunningServer } from '../../src/serve/server.js';
import { inferBody, MODEL, tempRepo, txRequest, waitFor, type TempRepo } from './helpers.js';

let repo: TempRepo;
afterAll(() => repo?.cleanup());

/** A POST on its own connection, resolving with the status and the Connection header. */
function send(url: string, body: string): Promise<{ status: number; connection?: string; text: string }> {
  return new Promise((resolve, reject) => {
    const req = request(`${url}/v2/models/${MODEL}/infer`, { method: 'POST', headers: { 'Content-Type': 'application/json' } }, (res) => {
      let text = '';
      res.on('data', (c: Buffer) => (text += c.toString()));
      res.on('end', () => resolve({ status: res.statusCode!, connection: res.headers.connection, text }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

describe('gnnctl serve shutdown', () => {
  it('SIGTERM with requests in flight: all answered, listener closed, exit code 0', async () => {
    // A long queue delay keeps the requests waiting in the batcher when the signal arrives.
    repo = tempRepo({ maxBatchSize: 64, maxQueueDelayUs: 1_500_000 });
    let server: RunningServer | undefined;
    const stdout: string[] = [];
    const write = process.stdout.write.bind(process.stdout);
    const opts: ServeCommandOptions = { modelRepository: repo.root, port: 0, pollInterval: '0', json: true, onListening: (s) => (server = s) };
    process.stdout.write = ((chunk: string) => {
      stdout.push(String(chunk));
      return true;
    }) as typeof process.stdout.write;
    let exitCode: Promise<number>;
    try {
      exitCode = runCommand(opts, () => serveCommand(opts));
      await waitFor(() => server !== undefined, 30_000, 'the server to listen');
    } catch (e) {
      process.stdout.write = write;
      throw e;
    }
    const url = server!.url;
    const inflight = Array.from({ length: 20 }, (_, i) => send(url, inferBody(txRequest(i, i % 7))));
    await waitFor(() => server!.metrics.inflight.get() === 20, 10_000, '20 requests in flight');

    const t0 = performance.now();
    process.kill(process.pid, 'SIGTERM');
    const code = await exitCode!;
    process.stdout.write = write;
    // Queued batches run at once on shutdown rather than waiting out their 1.5 s queue delay.
    expect(performance.now() - t0).toBeLessThan(1000);

    const answers = await Promise.all(inflight);
    expect(answers.map((a) => a.status)).toEqual(new Array(20).fill(200));
    expect(answers.every((a) => a.connection === 'close')).toBe(true);
    expect(code).toBe(0);
    const result = JSON.parse(stdout.join('')) as { stopped_by: string; forced_close: boolean; inference_requests: { success: number; failure: number } };
    expect(result).toMatchObject({ stopped_by: 'SIGTERM', forced_close: false, inference_requests: { success: 20, failure: 0 } });
    // The listener is closed: new connections are refused.
    await expect(send(url, inferBody(txRequest(1, 1)))).rejects.toThrow(/ECONNREFUSED/);
    expect(process.listeners('SIGTERM')).toHaveLength(0);
  });

  it('an AbortSignal stops it the same way (for embedding)', async () => {
    const r = tempRepo({});
    try {
      const ac = new AbortController();
      let server: RunningServer | undefined;
      const done = serveCommand({ modelRepository: r.root, port: 0, pollInterval: '0', quiet: true, signal: ac.signal, onListening: (s) => (server = s) });
      await waitFor(() => server !== undefined, 30_000, 'the server to listen');
      expect((await send(server!.url, inferBody(txRequest(1, 2)))).status).toBe(200);
      ac.abort();
      expect((await done).result).toMatchObject({ stopped_by: 'abort', inference_requests: { success: 1, failure: 0 } });
    } finally {
      r.cleanup();
    }
  });
});
