/** The worker request/reply helper shared by training's engine and the embedding pool. */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { compiledWorker, WorkerRpc, type WorkerReply } from '../../src/core/worker_rpc.js';

const dir = mkdtempSync(join(tmpdir(), 'gnnctl-rpc-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('compiledWorker', () => {
  const root = resolve(import.meta.dirname, '../..');
  it('maps a source module to its compiled worker in dist/, and a compiled module to its neighbour', () => {
    expect(compiledWorker(`${root}/src/embed/pool.ts`, 'embed_worker.js')).toBe(`${root}/dist/embed/embed_worker.js`);
    expect(compiledWorker(`${root}/dist/train/parallel.js`, 'train_worker.js')).toBe(`${root}/dist/train/train_worker.js`);
  });
  it('is null when the build is missing', () => {
    expect(compiledWorker(`${dir}/src/x/y.ts`, 'nothing.js')).toBeNull();
  });
});

describe('WorkerRpc', () => {
  const script = join(dir, 'echo.mjs');
  writeFileSync(
    script,
    `import { parentPort } from 'node:worker_threads';
     parentPort.on('message', (m) => m.fail ? parentPort.postMessage({ id: m.id, error: 'no: ' + m.x }) : parentPort.postMessage({ id: m.id, y: m.x * 2 }));`,
  );

  it('answers each call with its own reply, across workers, and rejects a reply carrying an error', async () => {
    const rpc = new WorkerRpc<WorkerReply & { y?: number }>(script, 2);
    try {
      expect(rpc.size).toBe(2);
      const replies = await Promise.all([1, 2, 3, 4].map((x, i) => rpc.call(rpc.workers[i % 2]!, { x })));
      expect(replies.map((r) => r.y)).toEqual([2, 4, 6, 8]);
      await expect(rpc.call(rpc.workers[0]!, { x: 5, fail: true })).rejects.toThrow('no: 5');
    } finally {
      await rpc.close();
    }
  });

  it('hands what a worker posts without an id (progress between replies) to onEvent, in order, before the reply', async () => {
    const ticker = join(dir, 'ticker.mjs');
    writeFileSync(
      ticker,
      `import { parentPort } from 'node:worker_threads';
       parentPort.on('message', (m) => { for (let i = 1; i <= 3; i++) parentPort.postMessage({ event: 'tick', i }); parentPort.postMessage({ id: m.id, y: m.x }); });`,
    );
    const events: unknown[] = [];
    const rpc = new WorkerRpc<WorkerReply & { y?: number }>(ticker, 1, (msg, w) => events.push({ ...msg, fromWorker: w === rpc.workers[0] }));
    try {
      const r = await rpc.call(rpc.workers[0]!, { x: 7 });
      expect(r.y).toBe(7);
      expect(events).toEqual([1, 2, 3].map((i) => ({ event: 'tick', i, fromWorker: true })));
      // Without onEvent such messages are dropped, and the reply still arrives.
      const plain = new WorkerRpc<WorkerReply & { y?: number }>(ticker, 1);
      expect((await plain.call(plain.workers[0]!, { x: 8 })).y).toBe(8);
      await plain.close();
    } finally {
      await rpc.close();
    }
  });
});
