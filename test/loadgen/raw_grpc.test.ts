import * as grpc from '@grpc/grpc-js';
import { afterEach, describe, expect, it } from 'vitest';
import { grpcFrame } from '../../src/loadgen/grpc_requests.js';
import { grpcRequestHeaderBlock, RawGrpcConnection } from '../../src/loadgen/raw_grpc.js';

const PATH = '/test.Echo/Call';

/** A grpc-js server on loopback whose one unary method echoes the request, fails on "fail", and records the deadline it saw. */
async function echoServer(): Promise<{ port: number; server: grpc.Server; deadlines: number[]; sizes: number[]; concurrent: { now: number; max: number } }> {
  const server = new grpc.Server({ 'grpc.max_concurrent_streams': 4 });
  const deadlines: number[] = [];
  const sizes: number[] = [];
  const concurrent = { now: 0, max: 0 };
  const identity = (b: Buffer) => b;
  server.addService(
    { Call: { path: PATH, requestStream: false, responseStream: false, requestSerialize: identity, requestDeserialize: identity, responseSerialize: identity, responseDeserialize: identity } },
    {
      Call: (call: grpc.ServerUnaryCall<Buffer, Buffer>, cb: grpc.sendUnaryData<Buffer>) => {
        const deadline = call.getDeadline();
        deadlines.push(deadline instanceof Date ? deadline.getTime() - Date.now() : Number(deadline) - Date.now());
        sizes.push(call.request.length);
        concurrent.max = Math.max(concurrent.max, ++concurrent.now);
        // Answers come late enough that calls pile up beyond the 4 concurrent streams allowed.
        setTimeout(() => {
          concurrent.now--;
          if (call.request.toString() === 'fail') cb({ code: grpc.status.INVALID_ARGUMENT, details: 'no' });
          else cb(null, call.request);
        }, 5);
      },
    },
  );
  const port = await new Promise<number>((resolve, reject) => server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (e, p) => (e ? reject(e) : resolve(p))));
  return { port, server, deadlines, sizes, concurrent };
}

let server: grpc.Server | undefined;
let conn: RawGrpcConnection | undefined;
afterEach(() => {
  conn?.close();
  server?.forceShutdown();
});

const callOnce = (c: RawGrpcConnection, body: Buffer) => new Promise<string | undefined>((resolve) => c.call(grpcFrame(body), resolve));

describe('RawGrpcConnection', () => {
  it('sends unary calls a grpc-js server answers: successes, a status error, large messages split into frames, more calls than concurrent streams', async () => {
    const s = await echoServer();
    server = s.server;
    conn = new RawGrpcConnection('127.0.0.1', s.port, grpcRequestHeaderBlock(PATH, `127.0.0.1:${s.port}`, 3000));
    const big = Buffer.alloc(40_000, 7);
    const bodies = [Buffer.from('a'), Buffer.from('fail'), big, ...Array.from({ length: 20 }, (_, i) => Buffer.from(`call ${i}`))];
    const results = await Promise.all(bodies.map((b) => callOnce(conn!, b)));
    expect(results[0]).toBeUndefined();
    expect(results[1]).toBe('grpc_error');
    expect(results[2]).toBeUndefined();
    expect(results.slice(3)).toEqual(Array.from({ length: 20 }, () => undefined));
    expect(s.sizes).toContain(40_000);
    // The grpc-timeout header reached the server as the call's deadline.
    expect(Math.max(...s.deadlines)).toBeLessThanOrEqual(3000);
    expect(Math.min(...s.deadlines)).toBeGreaterThan(1000);
    expect(conn.outstanding).toBe(0);
    expect(s.concurrent.max).toBe(4);
  });

  it('keeps at most maxInFlight calls on the wire; the others wait in the client', async () => {
    const s = await echoServer();
    server = s.server;
    conn = new RawGrpcConnection('127.0.0.1', s.port, grpcRequestHeaderBlock(PATH, `127.0.0.1:${s.port}`, 3000), 2);
    const results = await Promise.all(Array.from({ length: 10 }, (_, i) => callOnce(conn!, Buffer.from(`c${i}`))));
    expect(results).toEqual(Array.from({ length: 10 }, () => undefined));
    expect(s.concurrent.max).toBe(2);
  });

  it('fails the calls in flight when the server goes away, and reports the connection closed', async () => {
    const s = await echoServer();
    server = s.server;
    conn = new RawGrpcConnection('127.0.0.1', s.port, grpcRequestHeaderBlock(PATH, `127.0.0.1:${s.port}`, 3000));
    expect(await callOnce(conn, Buffer.from('x'))).toBeUndefined();
    const pending = callOnce(conn, Buffer.from('slow'));
    s.server.forceShutdown();
    expect(await pending).toMatch(/^(connection_closed|http2_)/);
    expect(conn.closed).toBe(true);
  });

  it('close() drops the calls still unanswered without completing them', async () => {
    const s = await echoServer();
    server = s.server;
    conn = new RawGrpcConnection('127.0.0.1', s.port, grpcRequestHeaderBlock(PATH, `127.0.0.1:${s.port}`, 3000));
    expect(await callOnce(conn, Buffer.from('x'))).toBeUndefined();
    const completions: (string | undefined)[] = [];
    for (let i = 0; i < 3; i++) conn.call(grpcFrame(Buffer.from('late')), (e) => completions.push(e));
    conn.close();
    await new Promise((r) => setTimeout(r, 50));
    expect(completions).toEqual([]);
    expect(conn.outstanding).toBe(0);
  });

  it('encodes the request headers as HPACK literals without Huffman coding', () => {
    const block = grpcRequestHeaderBlock('/a/B', 'h:1', 10_000);
    expect([...block.subarray(0, 2)]).toEqual([0x83, 0x86]);
    expect(block.toString('latin1')).toContain('\x04\x04/a/B\x01\x03h:1\x0f\x10\x10application/grpc\x00\x02te\x08trailers\x00\x0cgrpc-timeout\x0610000m');
  });
});
