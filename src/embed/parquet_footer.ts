/**
 * Puts a Parquet file's key-value metadata in key order, in place. parquet-wasm takes the pairs as a Rust
 * HashMap, whose iteration order changes with every map a process creates, so two writes of the same data
 * in one process would list the same pairs in different orders and differ byte for byte.
 *
 * The footer is Thrift compact protocol: FileMetaData, whose field 5 is `list<KeyValue>`. Each KeyValue is
 * encoded on its own (field headers are deltas within the struct), so permuting the encoded elements keeps
 * the list valid and the footer the same length: nothing else in the file moves.
 */
import { closeSync, fstatSync, openSync, readSync, writeSync } from 'node:fs';

const MAGIC = 'PAR1';

// Thrift compact protocol type ids.
const BOOL_TRUE = 1;
const BOOL_FALSE = 2;
const BYTE = 3;
const I16 = 4;
const I32 = 5;
const I64 = 6;
const DOUBLE = 7;
const BINARY = 8;
const LIST = 9;
const SET = 10;
const MAP = 11;
const STRUCT = 12;

class Reader {
  pos = 0;
  constructor(readonly buf: Uint8Array) {}

  byte(): number {
    if (this.pos >= this.buf.length) throw new Error('Parquet footer: unexpected end');
    return this.buf[this.pos++]!;
  }

  varint(): number {
    let result = 0;
    let mul = 1;
    for (;;) {
      const b = this.byte();
      result += (b & 0x7f) * mul;
      if ((b & 0x80) === 0) return result;
      mul *= 128;
    }
  }

  binary(): Uint8Array {
    const n = this.varint();
    if (this.pos + n > this.buf.length) throw new Error('Parquet footer: unexpected end');
    const out = this.buf.subarray(this.pos, this.pos + n);
    this.pos += n;
    return out;
  }

  listHeader(): { size: number; elem: number } {
    const h = this.byte();
    return { size: h >> 4 === 15 ? this.varint() : h >> 4, elem: h & 0x0f };
  }

  /** Calls `visit` for each field of the struct at the cursor; `visit` must consume the field's value. */
  struct(visit: (id: number, type: number) => void): void {
    let last = 0;
    for (;;) {
      const h = this.byte();
      if (h === 0) return;
      const delta = h >> 4;
      const n = delta === 0 ? this.varint() : 0;
      last = delta === 0 ? (n % 2 === 0 ? n / 2 : -(n + 1) / 2) : last + delta;
      visit(last, h & 0x0f);
    }
  }

  /** Skips one value of `type`. */
  skip(type: number): void {
    switch (type) {
      case BOOL_TRUE:
      case BOOL_FALSE:
        return; // a struct field's boolean lives in its header
      case BYTE:
        this.pos += 1;
        return;
      case I16:
      case I32:
      case I64:
        this.varint();
        return;
      case DOUBLE:
        this.pos += 8;
        return;
      case BINARY:
        this.binary();
        return;
      case LIST:
      case SET: {
        const { size, elem } = this.listHeader();
        for (let i = 0; i < size; i++) {
          if (elem === BOOL_TRUE || elem === BOOL_FALSE) this.pos += 1; // list booleans take a byte each
          else this.skip(elem);
        }
        return;
      }
      case MAP: {
        const size = this.varint();
        if (size === 0) return;
        const kv = this.byte();
        for (let i = 0; i < size; i++) {
          this.skip(kv >> 4);
          this.skip(kv & 0x0f);
        }
        return;
      }
      case STRUCT:
        this.struct((_, t) => this.skip(t));
        return;
      default:
        throw new Error(`Parquet footer: unknown Thrift type ${type}`);
    }
  }
}

/** Reorders the key-value metadata of the Parquet file at `path` by key (bytewise). No-op with fewer than two pairs. */
export function sortParquetKeyValueMetadata(path: string): void {
  const fd = openSync(path, 'r+');
  try {
    const size = fstatSync(fd).size;
    const tail = Buffer.alloc(8);
    readSync(fd, tail, 0, 8, size - 8);
    if (size < 12 || tail.toString('latin1', 4) !== MAGIC) throw new Error(`${path} is not a Parquet file`);
    const len = tail.readUInt32LE(0);
    const start = size - 8 - len;
    const footer = Buffer.alloc(len);
    readSync(fd, footer, 0, len, start);
    const sorted = sortedFooter(footer);
    if (sorted) writeSync(fd, sorted, 0, len, start);
  } finally {
    closeSync(fd);
  }
}

/** The footer (FileMetaData) with field 5's KeyValue elements in key order, or null when there is nothing to reorder. */
export function sortedFooter(footer: Uint8Array): Uint8Array | null {
  const r = new Reader(footer);
  let items: { key: Uint8Array; bytes: Uint8Array }[] = [];
  let first = -1;
  r.struct((id, type) => {
    if (id !== 5 || type !== LIST) return r.skip(type);
    const { size } = r.listHeader();
    first = r.pos;
    for (let i = 0; i < size; i++) {
      const at = r.pos;
      let key: Uint8Array = new Uint8Array(0);
      r.struct((fid, ft) => {
        if (fid === 1 && ft === BINARY) key = r.binary();
        else r.skip(ft);
      });
      items.push({ key, bytes: footer.subarray(at, r.pos) });
    }
  });
  if (items.length < 2) return null;
  items = [...items].sort((a, b) => Buffer.compare(a.key, b.key));
  const out = Uint8Array.from(footer);
  let o = first;
  for (const it of items) {
    out.set(it.bytes, o);
    o += it.bytes.length;
  }
  return out;
}
