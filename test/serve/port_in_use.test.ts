/**
 * A port another process already listens on is a usage error naming the flag (exit 2), not an internal
 * error with a stack trace.
 */
import { createServer, type Server } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { UsageError } from '../../src/core/errors.js';
import { startTestServer, tempRepo, type TempRepo } from './helpers.js';

let repo: TempRepo;
let blocker: Server;
let port: number;
beforeAll(async () => {
  repo = tempRepo({ maxBatchSize: 8 });
  blocker = createServer();
  port = await new Promise<number>((resolve) => blocker.listen(0, '127.0.0.1', () => resolve((blocker.address() as { port: number }).port)));
});
afterAll(async () => {
  await new Promise<void>((resolve) => blocker.close(() => resolve()));
  repo?.cleanup();
});

describe('serve on a busy port', () => {
  it('fails with a UsageError on --port that says the address is in use', async () => {
    const err = await startTestServer(repo.root, { port, host: '127.0.0.1' }).then(
      (s) => s.stop().then(() => undefined),
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(UsageError);
    const e = err as UsageError;
    expect(e.where).toBe('--port');
    expect(e.message).toContain(`127.0.0.1:${port} is already in use`);
    expect(e.exitCode).toBe(2);
  });
});
