/**
 * A throwaway `redis-server` (Debian's) on a free loopback port, without persistence, for the online
 * store tests. `available` is false where it is not installed, outside CI (the tests then skip with a
 * message); under CI=true they run and fail (`test/helpers/system_binary.ts`).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { systemBinary } from '../helpers/system_binary.js';

const redis = systemBinary({ command: 'redis-server', aptPackage: 'redis-server', testFile: 'test/online_store' });
export const available = !redis.skip;

export interface TestRedis {
  url: string;
  port: number;
  /** Stops the server (SIGKILL with `hard`); `start()` brings it back on the same port, empty. */
  stop(hard?: boolean): Promise<void>;
  start(): Promise<void>;
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
    s.on('error', reject);
  });
}

export async function startRedis(): Promise<TestRedis> {
  redis.require();
  const port = await freePort();
  let child: ChildProcess | undefined;
  const start = async () => {
    child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: ['ignore', 'pipe', 'pipe'] });
    await new Promise<void>((resolve, reject) => {
      let out = '';
      const onData = (d: Buffer) => {
        out += d.toString();
        if (out.includes('Ready to accept connections')) resolve();
      };
      child!.stdout!.on('data', onData);
      child!.once('exit', (code) => reject(new Error(`redis-server exited ${code}: ${out}`)));
    });
  };
  await start();
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    start,
    stop: async (hard = false) => {
      const c = child;
      // A killed child has a signalCode and no exitCode: both mean it is gone (its 'exit' already fired).
      if (!c || c.exitCode !== null || c.signalCode !== null) return;
      const exited = new Promise((r) => c.once('exit', r));
      c.kill(hard ? 'SIGKILL' : 'SIGTERM');
      await exited;
    },
  };
}
