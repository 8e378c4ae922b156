/**
 * A minimal gRPC-over-HTTP/2 client for the load generator, the gRPC counterpart of `raw_http.ts`: one
 * TCP connection speaking HTTP/2 frames directly, unary calls written as one pre-encoded HEADERS block
 * and the length-prefixed message, answers parsed just enough to know whether a message came back.
 *
 * Why not `@grpc/grpc-js` or `node:http2`: the generator shares 2 cores with the server it measures, and
 * those clients spend 3–6× the CPU per call of the HTTP/1.1 generator (Node's HTTP/2 streams are full
 * Duplex streams with header objects; grpc-js adds channels, call stacks and metadata on top), which
 * would make a gRPC-against-HTTP comparison measure the generators. What this client leaves out: TLS,
 * HPACK decoding (it never reads header values — an answer with a message is a success, one ending
 * without a message is an error of kind `grpc_error`; the server's `gnnctl_grpc_requests_total{code}`
 * says which status), messages larger than the peer's stream window, and retries other than of calls
 * the server refused unprocessed.
 */
import { connect, type Socket } from 'node:net';

export type GrpcCompletion = (error: string | undefined) => void;

const FRAME_DATA = 0x0;
const FRAME_HEADERS = 0x1;
const FRAME_RST_STREAM = 0x3;
const FRAME_SETTINGS = 0x4;
const FRAME_PING = 0x6;
const FRAME_GOAWAY = 0x7;
const FRAME_WINDOW_UPDATE = 0x8;
const FRAME_CONTINUATION = 0x9;
const FLAG_END_STREAM = 0x1;
const FLAG_ACK = 0x1;
const FLAG_END_HEADERS = 0x4;
const PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'latin1');
/** RFC 9113 defaults until the server's SETTINGS say otherwise. */
const DEFAULT_WINDOW = 65_535;
const DEFAULT_MAX_FRAME = 16_384;
/** The receive window the client grants (2^31 − 1, the most HTTP/2 allows), so the server never waits on it. */
const MAX_WINDOW = 2 ** 31 - 1;

function frameHeader(out: Buffer, at: number, length: number, type: number, flags: number, stream: number): void {
  out.writeUIntBE(length, at, 3);
  out[at + 3] = type;
  out[at + 4] = flags;
  out.writeUInt32BE(stream & 0x7fffffff, at + 5);
}

function frame(type: number, flags: number, stream: number, payload: Buffer): Buffer {
  const out = Buffer.allocUnsafe(9 + payload.length);
  frameHeader(out, 0, payload.length, type, flags, stream);
  payload.copy(out, 9);
  return out;
}

/** An HPACK integer with an `n`-bit prefix whose high bits are `first` (RFC 7541 §5.1). */
function hpackInt(first: number, n: number, value: number): number[] {
  const max = (1 << n) - 1;
  if (value < max) return [first | value];
  const out = [first | max];
  for (value -= max; value >= 128; value >>>= 7) out.push((value & 127) | 128);
  out.push(value);
  return out;
}

function hpackString(s: string): number[] {
  const bytes = Buffer.from(s, 'latin1');
  return [...hpackInt(0, 7, bytes.length), ...bytes];
}

/**
 * The request headers as one HPACK block, without Huffman coding or the dynamic table (so it is the same
 * bytes for every call): `:method POST` and `:scheme http` from the static table, `:path`, `:authority`
 * and `content-type` with static-table names, `te` and `grpc-timeout` as literal names.
 */
export function grpcRequestHeaderBlock(path: string, authority: string, timeoutMs: number): Buffer {
  const literalIndexedName = (index: number, value: string) => [...hpackInt(0x00, 4, index), ...hpackString(value)];
  const literal = (name: string, value: string) => [0x00, ...hpackString(name), ...hpackString(value)];
  return Buffer.from([
    0x83,
    0x86,
    ...literalIndexedName(4, path),
    ...literalIndexedName(1, authority),
    ...literalIndexedName(31, 'application/grpc'),
    ...literal('te', 'trailers'),
    ...literal('grpc-timeout', `${Math.max(1, Math.min(99_999_999, Math.round(timeoutMs)))}m`),
  ]);
}

interface Call {
  body: Buffer;
  done: GrpcCompletion;
  gotMessage: boolean;
}

/** One HTTP/2 connection carrying unary gRPC calls to one method. */
export class RawGrpcConnection {
  private socket: Socket | undefined;
  private chunks: Buffer[] = [];
  private buffered = 0;
  private nextStream = 1;
  private readonly active = new Map<number, Call>();
  private readonly waiting: Call[] = [];
  private sendWindow = DEFAULT_WINDOW;
  private peerStreamWindow = DEFAULT_WINDOW;
  private maxFrame = DEFAULT_MAX_FRAME;
  private maxStreams = 100;
  /** Calls wait for the server's first SETTINGS, so they respect its limit on concurrent streams. */
  private settled = false;
  private received = 0;
  /** GOAWAY received or the socket closed: no new calls go on this connection. */
  closed = false;
  /** A HEADERS frame without END_HEADERS: the stream and whether it ends the stream. */
  private continuing: { stream: number; end: boolean } | undefined;

  constructor(
    private readonly host: string,
    private readonly port: number,
    private readonly headerBlock: Buffer,
    /** Most calls in flight at once (and below the server's concurrent-stream limit); later calls wait here. */
    private readonly maxInFlight = Infinity,
  ) {}

  /** Calls sent and not yet answered, plus those waiting for a free stream or window. */
  get outstanding(): number {
    return this.active.size + this.waiting.length;
  }

  /** Sends one call; `body` is the length-prefixed gRPC message (`grpcFrame`). */
  call(body: Buffer, done: GrpcCompletion): void {
    if (!this.socket) this.open();
    this.waiting.push({ body, done, gotMessage: false });
    this.flush();
  }

  /** Closes the connection; calls still unanswered get no completion (the generator counts them itself). */
  close(): void {
    this.closed = true;
    this.active.clear();
    this.waiting.length = 0;
    this.socket?.destroy();
  }

  private open(): void {
    const socket = connect({ host: this.host, port: this.port, noDelay: true });
    this.socket = socket;
    const settings = Buffer.alloc(12);
    settings.writeUInt16BE(0x2, 0); // ENABLE_PUSH 0
    settings.writeUInt32BE(0, 2);
    settings.writeUInt16BE(0x4, 6); // INITIAL_WINDOW_SIZE
    settings.writeUInt32BE(MAX_WINDOW, 8);
    const grow = Buffer.alloc(4);
    grow.writeUInt32BE(MAX_WINDOW - DEFAULT_WINDOW, 0);
    socket.write(Buffer.concat([PREFACE, frame(FRAME_SETTINGS, 0, 0, settings), frame(FRAME_WINDOW_UPDATE, 0, 0, grow)]));
    socket.on('data', (chunk: Buffer) => this.onData(chunk));
    socket.on('error', () => undefined);
    socket.on('close', () => this.fail(this.closed ? 'closed' : 'connection_closed'));
  }

  private flush(): void {
    while (this.settled && this.waiting.length > 0 && this.active.size < Math.min(this.maxStreams, this.maxInFlight)) {
      const next = this.waiting[0]!;
      if (next.body.length > this.peerStreamWindow) {
        this.waiting.shift();
        next.done('request_exceeds_stream_window');
        continue;
      }
      if (next.body.length > this.sendWindow) return;
      this.waiting.shift();
      this.write(next);
    }
  }

  private write(c: Call): void {
    const id = this.nextStream;
    this.nextStream += 2;
    this.active.set(id, c);
    this.sendWindow -= c.body.length;
    const block = this.headerBlock;
    const dataFrames = Math.max(1, Math.ceil(c.body.length / this.maxFrame));
    const out = Buffer.allocUnsafe(9 + block.length + 9 * dataFrames + c.body.length);
    frameHeader(out, 0, block.length, FRAME_HEADERS, FLAG_END_HEADERS, id);
    block.copy(out, 9);
    let at = 9 + block.length;
    for (let k = 0, from = 0; k < dataFrames; k++) {
      const len = Math.min(this.maxFrame, c.body.length - from);
      frameHeader(out, at, len, FRAME_DATA, k === dataFrames - 1 ? FLAG_END_STREAM : 0, id);
      c.body.copy(out, at + 9, from, from + len);
      at += 9 + len;
      from += len;
    }
    this.socket!.write(out);
  }

  private finish(id: number, error: string | undefined): void {
    const c = this.active.get(id);
    if (!c) return;
    this.active.delete(id);
    c.done(error ?? (c.gotMessage ? undefined : 'grpc_error'));
    this.flush();
  }

  private fail(error: string): void {
    this.closed = true;
    const calls = [...this.active.values(), ...this.waiting.splice(0)];
    this.active.clear();
    for (const c of calls) c.done(error);
  }

  private onData(chunk: Buffer): void {
    this.chunks.push(chunk);
    this.buffered += chunk.length;
    if (this.buffered < 9) return;
    let buf = this.chunks.length === 1 ? this.chunks[0]! : Buffer.concat(this.chunks);
    let at = 0;
    while (buf.length - at >= 9) {
      const length = buf.readUIntBE(at, 3);
      if (buf.length - at < 9 + length) break;
      this.onFrame(buf[at + 3]!, buf[at + 4]!, buf.readUInt32BE(at + 5) & 0x7fffffff, buf.subarray(at + 9, at + 9 + length));
      at += 9 + length;
    }
    buf = buf.subarray(at);
    this.chunks = buf.length > 0 ? [buf] : [];
    this.buffered = buf.length;
  }

  private onFrame(type: number, flags: number, stream: number, payload: Buffer): void {
    switch (type) {
      case FRAME_DATA: {
        const c = this.active.get(stream);
        if (c && payload.length > 0) c.gotMessage = true;
        this.received += payload.length;
        // Grant back what was received long before the 2 GiB window runs out.
        if (this.received >= 2 ** 30) {
          const inc = Buffer.alloc(4);
          inc.writeUInt32BE(this.received, 0);
          this.socket?.write(frame(FRAME_WINDOW_UPDATE, 0, 0, inc));
          this.received = 0;
        }
        if (flags & FLAG_END_STREAM) this.finish(stream, undefined);
        return;
      }
      case FRAME_HEADERS:
      case FRAME_CONTINUATION: {
        const end = type === FRAME_HEADERS ? (flags & FLAG_END_STREAM) !== 0 : this.continuing?.end === true;
        if (!(flags & FLAG_END_HEADERS)) this.continuing = { stream, end };
        else {
          this.continuing = undefined;
          if (end) this.finish(stream, undefined);
        }
        return;
      }
      case FRAME_RST_STREAM: {
        const code = payload.length >= 4 ? payload.readUInt32BE(0) : -1;
        const c = this.active.get(stream);
        // REFUSED_STREAM: the server did not process the call (RFC 9113 §8.7), so it is sent again.
        if (code === 0x7 && c) {
          this.active.delete(stream);
          this.waiting.unshift(c);
          this.flush();
        } else this.finish(stream, `http2_rst_${code}`);
        return;
      }
      case FRAME_SETTINGS:
        if (flags & FLAG_ACK) return;
        for (let i = 0; i + 6 <= payload.length; i += 6) {
          const id = payload.readUInt16BE(i);
          const value = payload.readUInt32BE(i + 2);
          if (id === 0x3) this.maxStreams = value;
          else if (id === 0x4) this.peerStreamWindow = value;
          else if (id === 0x5) this.maxFrame = value;
        }
        this.socket?.write(frame(FRAME_SETTINGS, FLAG_ACK, 0, Buffer.alloc(0)));
        this.settled = true;
        this.flush();
        return;
      case FRAME_PING:
        if (!(flags & FLAG_ACK)) this.socket?.write(frame(FRAME_PING, FLAG_ACK, 0, payload));
        return;
      case FRAME_GOAWAY: {
        // Streams above the last one the server processed were not handled: they fail (no retries here).
        this.closed = true;
        const last = payload.readUInt32BE(0) & 0x7fffffff;
        for (const id of [...this.active.keys()]) if (id > last) this.finish(id, 'http2_goaway');
        for (const c of this.waiting.splice(0)) c.done('http2_goaway');
        return;
      }
      case FRAME_WINDOW_UPDATE:
        if (stream === 0) {
          this.sendWindow += payload.readUInt32BE(0) & 0x7fffffff;
          this.flush();
        }
        return;
      default:
    }
  }
}
