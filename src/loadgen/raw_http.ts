/**
 * A minimal keep-alive HTTP/1.1 client for the load generator: a pool of TCP connections, each with at
 * most one request in flight, requests written as one pre-built buffer (request line, headers and body
 * serialized once, before the clock starts) and responses parsed just enough to know their status and
 * where they end (`Content-Length`, or chunked encoding).
 *
 * Why not Node's `http.Agent`: on this 2-core machine the generator shares the CPU with the server it
 * measures, and Node's client spends about as much CPU per request as the server does (≈ 0.14 ms),
 * which would make the benchmark measure the generator. This client costs a fraction of that. What it
 * leaves out (redirects, TLS, 1xx responses, pipelining) a load test of a KServe server does not need.
 */
import { connect, type Socket } from 'node:net';

export type Completion = (status: number | undefined, error?: string) => void;

interface Pending {
  bytes: Buffer;
  done: Completion;
}

/** Builds the bytes of a POST request (once per distinct body). */
export function buildPost(host: string, port: number, path: string, body: Buffer, contentType = 'application/json'): Buffer {
  const head = `POST ${path} HTTP/1.1\r\nHost: ${host}:${port}\r\nContent-Type: ${contentType}\r\nContent-Length: ${body.length}\r\nConnection: keep-alive\r\n\r\n`;
  return Buffer.concat([Buffer.from(head, 'latin1'), body]);
}

class Connection {
  private socket: Socket | undefined;
  private buf: Buffer | undefined;
  private current: Pending | undefined;
  /** When the current request was written (for timeouts). */
  sentAt = 0;

  constructor(
    private readonly host: string,
    private readonly port: number,
    private readonly onIdle: (c: Connection) => void,
  ) {}

  get busy(): boolean {
    return this.current !== undefined;
  }

  send(p: Pending): void {
    this.current = p;
    this.sentAt = performance.now();
    if (!this.socket) this.open();
    this.socket!.write(p.bytes);
  }

  /** Fails the request in flight (timeout) and drops the connection. */
  abort(error: string): void {
    this.fail(error);
  }

  close(): void {
    this.socket?.destroy();
    this.socket = undefined;
  }

  private open(): void {
    const s = connect({ host: this.host, port: this.port, noDelay: true });
    this.socket = s;
    this.buf = undefined;
    s.on('data', (chunk: Buffer) => {
      this.buf = this.buf ? Buffer.concat([this.buf, chunk]) : chunk;
      this.parse();
    });
    s.on('error', (e: NodeJS.ErrnoException) => {
      if (this.socket === s) this.fail(e.code ?? 'socket_error');
    });
    s.on('close', () => {
      if (this.socket === s) this.fail('ECONNRESET');
    });
  }

  private fail(error: string): void {
    const p = this.current;
    this.current = undefined;
    this.close();
    p?.done(undefined, error);
    if (p) this.onIdle(this);
  }

  /** Completes the request once the whole response is in `buf`. */
  private parse(): void {
    const buf = this.buf!;
    const headEnd = buf.indexOf('\r\n\r\n');
    if (headEnd < 0) return;
    const head = buf.toString('latin1', 0, headEnd);
    const status = Number(head.slice(9, 12));
    const lower = head.toLowerCase();
    const close = /\r\nconnection:\s*close/.test(lower);
    let end: number;
    const cl = /\r\ncontent-length:\s*(\d+)/.exec(lower);
    if (cl) {
      end = headEnd + 4 + Number(cl[1]);
      if (buf.length < end) return;
    } else if (/\r\ntransfer-encoding:\s*chunked/.test(lower)) {
      const last = buf.indexOf('\r\n0\r\n\r\n', headEnd);
      if (last < 0) return;
      end = last + 7;
    } else {
      this.fail('unframed_response');
      return;
    }
    if (buf.length > end) {
      this.fail('unexpected_bytes');
      return;
    }
    this.buf = undefined;
    const p = this.current!;
    this.current = undefined;
    if (close) this.close();
    p.done(status);
    this.onIdle(this);
  }
}

/** Up to `size` connections; requests beyond that wait in arrival order for a free one. */
export class ConnectionPool {
  private readonly idle: Connection[] = [];
  private readonly all: Connection[] = [];
  private readonly waiting: Pending[] = [];
  private readonly sweep: NodeJS.Timeout;

  constructor(
    private readonly host: string,
    private readonly port: number,
    private readonly size: number,
    timeoutMs: number,
  ) {
    // One timer for all requests rather than one per request.
    this.sweep = setInterval(() => {
      const now = performance.now();
      for (const c of this.all) if (c.busy && now - c.sentAt > timeoutMs) c.abort('timeout');
    }, Math.max(50, Math.min(1000, timeoutMs / 10)));
    this.sweep.unref();
  }

  send(bytes: Buffer, done: Completion): void {
    const p = { bytes, done };
    const c = this.idle.pop() ?? (this.all.length < this.size ? this.create() : undefined);
    if (c) c.send(p);
    else this.waiting.push(p);
  }

  close(): void {
    clearInterval(this.sweep);
    for (const c of this.all) c.close();
  }

  private create(): Connection {
    const c = new Connection(this.host, this.port, (free) => {
      const next = this.waiting.shift();
      if (next) free.send(next);
      else this.idle.push(free);
    });
    this.all.push(c);
    return c;
  }
}
