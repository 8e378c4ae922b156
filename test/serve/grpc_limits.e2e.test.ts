/**
 * The gRPC port under a flood of connections: the HTTP port's limits (`--max-connections`,
 * `--headers-timeout`) hold for it too. Thousands of half-open connections (a partial HTTP/2 preface,
 * never finished) do not block a client already making calls, nor a client that connects during the
 * flood; the open connections stay within the cap and the drops are counted.
 */
import { connect, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { get, MODEL, startTestServer, tempRepo, waitFor, type TempRepo, type TestServer } from './helpers.js';
import { call, client } from './grpc_client.js';

/** Connections that send half the HTTP/2 client preface and then nothing (`connected`: how many got through the backlog). */
async function flood(port: number, count: number): Promise<Socket[] & { connected: number }> {
  const sockets = Object.assign([] as Socket[], { connected: 0 });
  for (let i = 0; i < count; i += 250) {
    const wave = Array.from({ length: Math.min(250, count - i) }, () => {
      const s = connect(port, '127.0.0.1');
      s.on('error', () => undefined);
      s.on('connect', () => {
        sockets.connected++;
        s.write('PRI * HTTP/2.0\r\n');
      });
      // Read (and discard) the server's SETTINGS: a paused socket would never see the server's close.
      s.resume();
      sockets.push(s);
      return new Promise<void>((resolve) => {
        s.once('connect', () => resolve());
        s.once('close', () => resolve());
      });
    });
    await Promise.all(wave);
  }
  return sockets;
}

function metric(text: string, name: string): number {
  return text
    .split('\n')
    .filter((l) => l.startsWith(name))
    .reduce((sum, l) => sum + Number(l.slice(l.lastIndexOf(' ') + 1)), 0);
}

describe('gRPC connection limits', () => {
  let repo: TempRepo | undefined;
  let server: TestServer | undefined;
  const sockets: Socket[] = [];
  afterEach(async () => {
    sockets.splice(0).forEach((s) => s.destroy());
    await server?.stop();
    repo?.cleanup();
  });

  it('a flood of half-open connections beyond --max-connections: an established client and a newcomer are answered', async () => {
    repo = tempRepo();
    server = await startTestServer(repo.root, { grpcPort: 0, maxConnections: 200, headersTimeoutMs: 60_000 });
    const port = server.grpc!.port;
    const established = client(port);
    expect(await call(established, 'ModelReady', { name: MODEL })).toEqual({ ready: true });
    const answers: ({ ready: boolean } | { error: string })[] = [];
    let running = true;
    const calls = (async () => {
      while (running) {
        answers.push(await call(established, 'ModelReady', { name: MODEL }).catch((e: Error) => ({ error: e.message })));
        await new Promise((r) => setTimeout(r, 5));
      }
    })();
    const first = await flood(port, 1500);
    // A client connecting while a second wave floods: the newest connection, so the guard keeps it.
    const wave = flood(port, 500);
    const newcomer = client(port);
    const late = await call(newcomer, 'ServerReady', {}).catch((e: Error) => ({ error: e.message }));
    const second = await wave;
    sockets.push(...first, ...second);
    running = false;
    await calls;
    established.close();
    newcomer.close();

    expect(late).toEqual({ ready: true });
    expect(answers.length).toBeGreaterThan(1);
    expect(answers.filter((a) => 'error' in a)).toEqual([]);
    // Every flood connection past the cap is dropped (the two clients hold two of the 200 places), once
    // the server has accepted what the kernel queued for it.
    const flooded = first.connected + second.connected;
    expect(flooded).toBeGreaterThan(1000);
    const dropped = async () => metric((await get(server!.url, '/metrics')).text, 'gnnctl_grpc_connections_dropped_total{reason="limit"}');
    await waitFor(async () => (await dropped()) >= flooded - 200, 30_000, 'the flood to be accepted and dropped');
    const metrics = (await get(server.url, '/metrics')).text;
    expect(metric(metrics, 'gnnctl_grpc_connections ')).toBeLessThanOrEqual(200);
  });

  it('a connection that makes no call within --headers-timeout is closed and counted', async () => {
    repo = tempRepo();
    server = await startTestServer(repo.root, { grpcPort: 0, headersTimeoutMs: 500 });
    const [silent] = await flood(server.grpc!.port, 1);
    await new Promise<void>((resolve) => (silent!.destroyed ? resolve() : silent!.once('close', () => resolve())));
    expect(metric((await get(server.url, '/metrics')).text, 'gnnctl_grpc_connections_dropped_total{reason="headers_timeout"}')).toBe(1);
    // A client that calls at once is served on the same port.
    const c = client(server.grpc!.port);
    expect(await call(c, 'ServerLive', {})).toEqual({ live: true });
    c.close();
  });
});
