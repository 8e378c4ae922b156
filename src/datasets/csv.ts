/** Buffered CSV output for the synthetic tables: rows are appended as text and flushed in ~4 MB writes. */
import { closeSync, fsyncSync, openSync, writeSync } from 'node:fs';

const BUFFER_BYTES = 4 << 20;

/**
 * Appends text to a file through one fixed 4 MB buffer. Each piece of text is copied into the buffer as
 * soon as it is written, so row strings die young (a string buffer that grows across many rows is
 * promoted to V8's old space and balloons the RSS at H&M scale). Synchronous on purpose: the generator
 * is CPU-bound, one writer at a time, and sync writes bound memory without back-pressure plumbing. All
 * text is ASCII, so it is encoded as latin1 (a plain byte copy).
 */
export class CsvSink {
  private fd: number;
  private readonly buf = Buffer.allocUnsafe(BUFFER_BYTES);
  private pos = 0;
  private flushed = 0;

  constructor(readonly path: string) {
    this.fd = openSync(path, 'w');
  }

  write(text: string): void {
    if (text.length > BUFFER_BYTES - this.pos) {
      this.flush();
      if (text.length > BUFFER_BYTES) {
        this.writeAll(Buffer.from(text, 'latin1'));
        return;
      }
    }
    this.pos += this.buf.write(text, this.pos, 'latin1');
  }

  /** Bytes written so far (flushed or buffered). */
  get size(): number {
    return this.flushed + this.pos;
  }

  flush(): void {
    if (this.pos === 0) return;
    this.writeAll(this.buf.subarray(0, this.pos));
    this.pos = 0;
  }

  private writeAll(data: Buffer): void {
    let off = 0;
    while (off < data.length) off += writeSync(this.fd, data, off, data.length - off);
    this.flushed += data.length;
  }

  /** Flushes, syncs to disk (so the rename that follows publishes complete bytes) and closes. */
  close(): void {
    if (this.fd < 0) return;
    try {
      this.flush();
      fsyncSync(this.fd);
    } finally {
      closeSync(this.fd);
      this.fd = -1;
    }
  }

  /** Closes without flushing, for error paths (the temp file is deleted by the caller). */
  abort(): void {
    if (this.fd < 0) return;
    closeSync(this.fd);
    this.fd = -1;
  }
}

/** A CSV field: quoted when it holds a comma, quote or newline (H&M names like "Under-, Nightwear" do). */
export function csvField(s: string): string {
  return /[",\n\r]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}
