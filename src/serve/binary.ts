/**
 * The binary tensor data extension of the KServe V2 HTTP protocol, as Triton specifies it
 * (server/docs/protocol/extension_binary_data.md, reported as `binary_tensor_data` in `GET /v2`):
 *
 * - A body with binary tensors is the JSON inference header followed by the tensors' bytes, in the order
 *   the tensors are listed in the JSON. The `Inference-Header-Content-Length` header gives the JSON's
 *   length in bytes; `Content-Length` stays the whole body's.
 * - An input sent as binary carries `"parameters": {"binary_data_size": <bytes>}` and no `"data"`.
 * - Outputs come back as binary when the output asks for it (`"parameters": {"binary_data": true}`), or,
 *   unless an output says otherwise, when the request asks for all of them
 *   (`"parameters": {"binary_data_output": true}`). Each binary output in the response has
 *   `"parameters": {"binary_data_size": <bytes>}` and no `"data"`.
 * - Elements are little-endian, row-major, without padding, in the type's native size; BOOL is one byte
 *   (1 true, 0 false); a BYTES element is a 4-byte little-endian unsigned length followed by the bytes.
 *
 * - A raw binary request (`Inference-Header-Content-Length: 0`) is the bytes of a model's only input and
 *   nothing else: a batch of 1, its one variable dimension (if any) from the byte count, a BYTES input of
 *   one element; every output comes back as binary (`decode.ts`, `decodeRawBinaryRequest`).
 *
 * The default Python client (`tritonclient.http`, `binary_data=True`) sends every input and asks for
 * every output this way.
 */
import { isUtf8 } from 'node:buffer';
import type { HostTensor, TensorValues, V2Datatype } from './datatypes.js';
import { badRequest } from './http_error.js';

/** The header naming the JSON part's length (HTTP headers are case-insensitive; Node lowercases them). */
export const HEADER_LENGTH_HEADER = 'inference-header-content-length';

/** Bytes per element of the fixed-width types (BYTES has none). */
export const ELEMENT_BYTES: Record<Exclude<V2Datatype, 'BYTES'>, number> = {
  BOOL: 1,
  UINT8: 1,
  INT8: 1,
  UINT16: 2,
  INT16: 2,
  UINT32: 4,
  INT32: 4,
  FP32: 4,
  UINT64: 8,
  INT64: 8,
  FP64: 8,
};

/**
 * Typed arrays view memory in the platform's byte order. Every platform onnxruntime-node ships for is
 * little-endian, but a big-endian host would silently read garbage, so it swaps instead.
 */
const LITTLE_ENDIAN = new Uint8Array(Uint16Array.of(1).buffer)[0] === 1;

const UTF8 = new TextDecoder('utf-8', { fatal: true });

/**
 * A request body split into its JSON header and the binary tensor bytes after it; or, for a raw binary
 * request (`Inference-Header-Content-Length: 0`), only the bytes of the model's single input.
 */
export type SplitBody =
  | {
      json: string;
      /** Undefined when the request has no binary part (no `Inference-Header-Content-Length`). */
      binary?: Buffer;
      raw?: undefined;
    }
  | { raw: Buffer; json?: undefined; binary?: undefined };

/**
 * Splits `body` at the length `Inference-Header-Content-Length` gives (the raw header value, or
 * undefined when absent). Throws 400 for a malformed or impossible length.
 */
export function splitBody(body: Buffer, headerLength: string | string[] | undefined): SplitBody {
  if (headerLength === undefined) return { json: jsonText(body) };
  const text = Array.isArray(headerLength) ? headerLength.join(',') : headerLength;
  if (!/^\s*\d+\s*$/.test(text)) {
    throw badRequest(`the Inference-Header-Content-Length header must be the JSON header's length in bytes (got "${text}")`);
  }
  const n = Number(text);
  if (n === 0) return { raw: body };
  if (n > body.length) {
    throw badRequest(`Inference-Header-Content-Length is ${n} bytes, but the whole request body has only ${body.length}`);
  }
  return { json: jsonText(body.subarray(0, n)), binary: body.subarray(n) };
}

/**
 * The JSON header as text. Invalid UTF-8 is refused (as Triton's parser does) rather than decoded to
 * U+FFFD, which would silently change a string input such as a key.
 */
function jsonText(bytes: Buffer): string {
  if (!isUtf8(bytes)) throw badRequest('the JSON request body is not valid UTF-8');
  return bytes.toString('utf8');
}

/**
 * Reads the binary bytes of input `name` (`n` elements of `datatype`). `bytes` is exactly the input's
 * `binary_data_size` bytes. Throws 400 naming the input when the size does not fit the shape.
 */
export function decodeBinaryTensor(bytes: Uint8Array, datatype: V2Datatype, n: number, name: string, shape: readonly number[]): TensorValues {
  if (datatype === 'BYTES') return decodeBytesElements(bytes, n, name, shape);
  const size = ELEMENT_BYTES[datatype];
  if (bytes.length !== n * size) {
    throw badRequest(
      `inference input "${name}": binary_data_size is ${bytes.length} bytes, but shape ${JSON.stringify(shape)} of ${datatype} needs ${n * size} (${n} elements × ${size} bytes)`,
    );
  }
  // A copy into a fresh buffer: aligned for the typed array, and a whole buffer, so it can be moved to
  // the onnxruntime worker without another copy.
  const copy = new Uint8Array(bytes.length);
  copy.set(bytes);
  if (!LITTLE_ENDIAN && size > 1) swapBytes(copy, size);
  const buf = copy.buffer;
  switch (datatype) {
    case 'BOOL':
      for (let i = 0; i < copy.length; i++) {
        if (copy[i]! > 1) throw badRequest(`inference input "${name}": BOOL element ${i} is the byte ${copy[i]}; binary BOOL elements are 1 (true) or 0 (false)`);
      }
      return copy;
    case 'UINT8':
      return copy;
    case 'INT8':
      return new Int8Array(buf);
    case 'UINT16':
      return new Uint16Array(buf);
    case 'INT16':
      return new Int16Array(buf);
    case 'UINT32':
      return new Uint32Array(buf);
    case 'INT32':
      return new Int32Array(buf);
    case 'FP32':
      return new Float32Array(buf);
    case 'UINT64':
      return new BigUint64Array(buf);
    case 'INT64':
      return new BigInt64Array(buf);
    case 'FP64':
      return new Float64Array(buf);
  }
}

function decodeBytesElements(bytes: Uint8Array, n: number, name: string, shape: readonly number[]): string[] {
  const out = new Array<string>(n);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let at = 0;
  for (let i = 0; i < n; i++) {
    if (at + 4 > bytes.length) {
      throw badRequest(`inference input "${name}": binary BYTES data ends after ${i} of the ${n} elements shape ${JSON.stringify(shape)} needs (each element is a 4-byte little-endian length, then the bytes)`);
    }
    const len = view.getUint32(at, true);
    at += 4;
    if (at + len > bytes.length) {
      throw badRequest(`inference input "${name}": BYTES element ${i} declares ${len} bytes, but only ${bytes.length - at} are left of its binary_data_size ${bytes.length}`);
    }
    try {
      out[i] = UTF8.decode(bytes.subarray(at, at + len));
    } catch {
      throw badRequest(`inference input "${name}": BYTES element ${i} is not valid UTF-8 (the model's string inputs are text)`);
    }
    at += len;
  }
  if (at !== bytes.length) {
    throw badRequest(`inference input "${name}": binary_data_size is ${bytes.length} bytes, but its ${n} BYTES elements take ${at}; the remaining ${bytes.length - at} bytes belong to no element`);
  }
  return out;
}

/** The tensor's elements as the extension lays them out (a view, not a copy, where it can be). */
export function encodeBinaryTensor(t: HostTensor): Uint8Array {
  const d = t.data;
  if (Array.isArray(d)) {
    const parts = d.map((s) => Buffer.from(s, 'utf8'));
    const out = Buffer.allocUnsafe(parts.reduce((n, p) => n + 4 + p.length, 0));
    let at = 0;
    for (const p of parts) {
      out.writeUInt32LE(p.length, at);
      p.copy(out, at + 4);
      at += 4 + p.length;
    }
    return out;
  }
  const bytes = new Uint8Array(d.buffer, d.byteOffset, d.byteLength);
  if (LITTLE_ENDIAN || d.BYTES_PER_ELEMENT === 1) return bytes;
  const copy = bytes.slice();
  swapBytes(copy, d.BYTES_PER_ELEMENT);
  return copy;
}

function swapBytes(a: Uint8Array, size: number): void {
  for (let i = 0; i < a.length; i += size) a.subarray(i, i + size).reverse();
}
