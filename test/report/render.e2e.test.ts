/**
 * Renders reports in headless Chromium (Debian's `chromium`; without it the tests skip, or fail under
 * CI=true, see `test/helpers/system_binary.ts`): the page
 * must load from a file:// URL with the network effectively off, produce a screenshot of the requested
 * size that is not blank, and a DOM that still has every section after the browser parsed it.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { renderReport } from '../../src/report/index.js';
import { systemBinary } from '../helpers/system_binary.js';
import { decodePng, inkStats, isPng, pngSize } from './png.js';
import { DISTILL_ID, runsFixture, TRAIN_BINARY_ID, writeDistillRun, writeTrainBinaryRun, type RunsFixture } from './runs.js';

const chromium = systemBinary({ command: '/usr/bin/chromium', aptPackage: 'chromium', testFile: 'test/report/render.e2e.test.ts' });
const CHROMIUM = chromium.command;
const WIDTH = 1280;
const HEIGHT = 2400;
const run = promisify(execFile);

/** Flags from the brief: no GPU, no sandbox (containers), and nothing that phones home. */
function chromiumArgs(profile: string): string[] {
  return [
    '--headless',
    '--no-sandbox',
    '--disable-gpu',
    '--disable-quic',
    '--no-first-run',
    '--disable-background-networking',
    '--disable-component-update',
    '--disable-sync',
    '--hide-scrollbars',
    `--user-data-dir=${profile}`,
  ];
}

async function screenshot(dir: string, html: string, name: string): Promise<Buffer> {
  const page = join(dir, `${name}.html`);
  const png = join(dir, `${name}.png`);
  writeFileSync(page, html);
  await run(CHROMIUM, [...chromiumArgs(join(dir, `profile-${name}`)), `--screenshot=${png}`, `--window-size=${WIDTH},${HEIGHT}`, `file://${page}`], { timeout: 90_000 });
  expect(existsSync(png), `${png} written`).toBe(true);
  return readFileSync(png);
}

async function dumpDom(dir: string, html: string, name: string): Promise<string> {
  const page = join(dir, `${name}.html`);
  writeFileSync(page, html);
  const { stdout } = await run(CHROMIUM, [...chromiumArgs(join(dir, `profile-dom-${name}`)), '--dump-dom', `file://${page}`], { timeout: 90_000, maxBuffer: 64 * 1024 * 1024 });
  return stdout;
}

describe.skipIf(chromium.skip)('report in headless Chromium', () => {
  let fx: RunsFixture;
  let out: string;
  let blank: Buffer;
  beforeAll(async () => {
    chromium.require();
    fx = runsFixture();
    writeTrainBinaryRun(fx.artifacts);
    writeDistillRun(fx.artifacts);
    out = join(fx.root, 'shots');
    mkdirSync(out);
    // what an empty page looks like at this size: a screenshot with content must be far bigger
    blank = await screenshot(out, '<!DOCTYPE html><html><head><meta charset="utf-8"><title>blank</title></head><body></body></html>', 'blank');
  });
  afterAll(() => fx?.cleanup());

  it.each([
    ['train', TRAIN_BINARY_ID],
    ['distill', DISTILL_ID],
  ])('a %s report renders to a non-blank screenshot of the requested size', async (kind, id) => {
    const { html } = renderReport(join(fx.artifacts, 'runs', id));
    const png = await screenshot(out, html, kind);
    expect(isPng(png)).toBe(true);
    expect(pngSize(png)).toEqual({ width: WIDTH, height: HEIGHT });
    const img = decodePng(png);
    const ink = inkStats(img);
    // text, charts and tables: a good share of non-white pixels in many colours (the blank page has one)
    expect(ink.inked).toBeGreaterThan(0.03);
    expect(ink.colors).toBeGreaterThan(50);
    expect(inkStats(decodePng(blank)).colors).toBeLessThanOrEqual(2);
    expect(png.length).toBeGreaterThan(10 * blank.length);
    expect(statSync(join(out, `${kind}.png`)).size).toBe(png.length);
  });

  it('keeps every section and chart in the DOM Chromium builds', async () => {
    const r = renderReport(join(fx.artifacts, 'runs', DISTILL_ID));
    const dom = await dumpDom(out, r.html, 'dom');
    for (const id of r.sections) expect(dom).toMatch(new RegExp(`<(section|header) id="${id}"`));
    for (const id of ['chart-loss', 'chart-val', 'chart-roc', 'chart-pr', 'chart-calibration', 'chart-ablations', 'chart-size', 'chart-snapshots']) {
      expect(dom).toContain(`id="${id}"`);
    }
    // the parser did not have to move anything out of a table or close an element early
    expect((dom.match(/<section /g) ?? []).length).toBe(r.sections.length - 1);
    expect((dom.match(/<svg /g) ?? []).length).toBe((r.html.match(/<svg /g) ?? []).length);
  });
});
