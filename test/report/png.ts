/**
 * A minimal PNG reader for the screenshot test: parses IHDR, inflates the IDAT stream with node:zlib and
 * undoes the per-row filters (8-bit grey, grey+alpha, RGB, RGBA; non-interlaced, which is what Chromium
 * writes). Enough to check a screenshot's size and that it is not a blank page.
 */
import { inflateSync } from 'node:zlib';

export interface DecodedPng {
  width: number;
  height: number;
  /** samples per pixel: 1 grey, 2 grey+alpha, 3 RGB, 4 RGBA */
  channels: number;
  pixels: Uint8Array;
}

const SIGNATURE = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];

export function isPng(buf: Uint8Array): boolean {
  return buf.length > 8 && SIGNATURE.every((b, i) => buf[i] === b);
}

/** Width and height from IHDR without decoding the image. */
export function pngSize(buf: Buffer): { width: number; height: number } {
  if (!isPng(buf) || buf.toString('latin1', 12, 16) !== 'IHDR') throw new Error('not a PNG');
  return { width: buf.readUInt32BE(16), height: buf.readUInt32BE(20) };
}

export function decodePng(buf: Buffer): DecodedPng {
  const { width, height } = pngSize(buf);
  const depth = buf[24]!;
  const colorType = buf[25]!;
  const interlace = buf[28]!;
  const channels = ({ 0: 1, 4: 2, 2: 3, 6: 4 } as Record<number, number>)[colorType];
  if (depth !== 8 || channels === undefined || interlace !== 0) throw new Error(`unsupported PNG (depth ${depth}, colour type ${colorType}, interlace ${interlace})`);
  const idat: Buffer[] = [];
  for (let off = 8; off < buf.length; ) {
    const len = buf.readUInt32BE(off);
    const type = buf.toString('latin1', off + 4, off + 8);
    if (type === 'IDAT') idat.push(buf.subarray(off + 8, off + 8 + len));
    if (type === 'IEND') break;
    off += 12 + len;
  }
  const raw = inflateSync(Buffer.concat(idat));
  const stride = width * channels;
  const out = new Uint8Array(stride * height);
  for (let y = 0; y < height; y++) {
    const filter = raw[y * (stride + 1)]!;
    const src = y * (stride + 1) + 1;
    const row = y * stride;
    const prev = row - stride;
    for (let x = 0; x < stride; x++) {
      const a = x >= channels ? out[row + x - channels]! : 0;
      const b = y > 0 ? out[prev + x]! : 0;
      const c = y > 0 && x >= channels ? out[prev + x - channels]! : 0;
      let pred: number;
      switch (filter) {
        case 0: pred = 0; break;
        case 1: pred = a; break;
        case 2: pred = b; break;
        case 3: pred = (a + b) >> 1; break;
        case 4: {
          const p = a + b - c;
          const pa = Math.abs(p - a);
          const pb = Math.abs(p - b);
          const pc = Math.abs(p - c);
          pred = pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
          break;
        }
        default: throw new Error(`bad PNG filter ${filter} in row ${y}`);
      }
      out[row + x] = (raw[src + x]! + pred) & 0xff;
    }
  }
  return { width, height, channels, pixels: out };
}

/** Share of pixels that are not (near) white, and how many distinct colours (quantized to 4 bits per channel). */
export function inkStats(img: DecodedPng): { inked: number; colors: number } {
  let inked = 0;
  const colors = new Set<number>();
  const n = img.width * img.height;
  for (let i = 0; i < n; i++) {
    const o = i * img.channels;
    const r = img.pixels[o]!;
    const g = img.channels >= 3 ? img.pixels[o + 1]! : r;
    const b = img.channels >= 3 ? img.pixels[o + 2]! : r;
    if (r < 235 || g < 235 || b < 235) inked++;
    colors.add(((r >> 4) << 8) | ((g >> 4) << 4) | (b >> 4));
  }
  return { inked: inked / n, colors: colors.size };
}
