/**
 * The connection guard on a plain in-process HTTP server on loopback: at the cap the oldest connection
 * without a request goes (never an established client, never the newcomer while a request-less one is
 * open), the per-client cap refuses newcomers, the headers timeout drops silent connections, and a drain
 * keeps accepting while connections arrive.
 */
import { createServer, request, type Server, Agent } from 'node:http';
import { connect, type AddressInfo, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { ConnectionGuard, DRAIN_QUIET_MS, type ConnectionLimits } from '../../src/serve/connection_guard.js';
import { Registry } from '../../src/serve/metrics.js';

let server: Server | undefined;
const sockets: Socket[] = [];
afterEach(async () => {
  sockets.splice(0).forEach((s) => s.destroy());
  if (server) await new Promise((r) => server!.close(r));
  server = undefined;
});

async function start(limits: Partial<ConnectionLimits>) {
  const registry = new Registry();
  const dropped = registry.counter('dropped', 'd');
  server = createServer((req, res) => {
    guard.requestStarted(req, res);
    req.resume();
    res.end('ok');
  });
  const guard = new ConnectionGuard(server, { maxConnections: 1000, maxConnectionsPerClient: 0, headersTimeoutMs: 60_000, ...limits, openGauge: registry.gauge('open', 'o'), dropped });
  await new Promise<void>((r) => server!.listen(0, '127.0.0.1', r));
  return { port: (server.address() as AddressInfo).port, guard, dropped };
}

/** A connection that sends nothing; resolves once connected (or closed). */
async function silent(port: number): Promise<Socket> {
  const s = connect(port, '127.0.0.1');
  s.on('error', () => undefined);
  sockets.push(s);
  await new Promise<void>((r) => {
    s.once('connect', () => r());
    s.once('close', () => r());
  });
  return s;
}

const closed = (s: Socket) => new Promise<void>((r) => (s.destroyed ? r() : s.once('close', () => r())));

function get(port: number, agent?: Agent | false): Promise<number> {
  return new Promise((resolve, reject) => {
    request({ host: '127.0.0.1', port, path: '/', agent }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode!));
    })
      .on('error', reject)
      .end();
  });
}

describe('ConnectionGuard', () => {
  it('at the cap drops the oldest request-less connection, keeps an established client, answers a newcomer', async () => {
    const { port, guard, dropped } = await start({ maxConnections: 3 });
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    expect(await get(port, agent)).toBe(200); // established: one connection with a request done
    const [a, b] = [await silent(port), await silent(port)];
    const c = await silent(port); // over the cap: `a`, the oldest without a request, goes
    await closed(a);
    expect(b.destroyed || c.destroyed).toBe(false);
    expect(await get(port)).toBe(200); // a probe: `b` goes now
    await closed(b);
    expect(await get(port, agent)).toBe(200); // the established client's connection is still usable
    expect(dropped.get({ reason: 'limit' })).toBe(2);
    expect(guard.open).toBeLessThanOrEqual(3);
    agent.destroy();
  });

  it('refuses a newcomer when every open connection is an established client', async () => {
    const { port, dropped } = await start({ maxConnections: 1 });
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    expect(await get(port, agent)).toBe(200);
    const late = await silent(port);
    await closed(late);
    expect(dropped.get({ reason: 'limit' })).toBe(1);
    expect(await get(port, agent)).toBe(200);
    agent.destroy();
  });

  it('--max-connections-per-client refuses the connection over the per-address cap', async () => {
    const { port, dropped } = await start({ maxConnectionsPerClient: 2 });
    await silent(port);
    await silent(port);
    const third = await silent(port);
    await closed(third);
    expect(dropped.get({ reason: 'per_client' })).toBe(1);
  });

  it('drops a connection that sends no request head within the headers timeout', async () => {
    const { port, dropped } = await start({ headersTimeoutMs: 100 });
    await closed(await silent(port));
    expect(dropped.get({ reason: 'headers_timeout' })).toBe(1);
  });

  it('drain keeps accepting while new connections arrive, then closes the listener once they stop', async () => {
    const { port, guard } = await start({});
    const drained = guard.drain(server!, 60_000);
    // New connections keep arriving for longer than the quiet period: each is accepted and answered.
    const statuses: number[] = [];
    const t0 = performance.now();
    while (performance.now() - t0 < 3 * DRAIN_QUIET_MS) statuses.push(await get(port, false));
    expect(statuses.length).toBeGreaterThan(1);
    expect(statuses.filter((s) => s !== 200)).toEqual([]);
    expect(server!.listening).toBe(true);
    // Then none: the listener closes after the quiet period, well before the 60 s drain delay.
    await drained;
    expect(server!.listening).toBe(false);
    await expect(get(port, false)).rejects.toMatchObject({ code: 'ECONNREFUSED' });
  });

  it('drain with a delay of 0 closes the listener at once', async () => {
    const { port, guard } = await start({});
    await guard.drain(server!, 0);
    await expect(get(port, false)).rejects.toMatchObject({ code: 'ECONNREFUSED' });
  });
});

