/** `gnnctl serve` (the real binary) in a child process, for the tests of its flags. */
import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import { waitFor } from './helpers.js';

export const BIN = fileURLToPath(new URL('../../bin/gnnctl.js', import.meta.url));

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

