/**
 * The README's quick-start outputs of `train` and `predict` (churn and next_purchases) are what the real
 * binary prints: each example's output lines, with figures, times, run ids, paths and the model a run
 * chose masked, equal the output of the same command on tiny synthetic data with the bundled config. A
 * line added to or dropped from either side, or a key renamed, fails here.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tinySynth, type SynthFixture } from '../helpers/synth.js';

const ROOT = join(import.meta.dirname, '..', '..');
const BIN = join(ROOT, 'bin', 'gnnctl.js');
const README = readFileSync(join(ROOT, 'README.md'), 'utf8');
/** Epochs per example run: the output's shape does not depend on them, the test's time does. */
const EPOCHS = '2';

/** The output lines the README shows under `$ npx gnnctl <command>` (up to the next command or the block's end). */
export function readmeOutput(readme: string, command: string): string[] {
  const start = readme.indexOf(`$ npx gnnctl ${command}\n`);
  if (start < 0) return [];
  const rest = readme.slice(start).split('\n').slice(1);
  const end = rest.findIndex((l) => l.startsWith('$ ') || l.startsWith('```'));
  return rest.slice(0, end < 0 ? rest.length : end);
}

/** A line with what differs between runs masked: paths, run ids, times, numbers, the chosen model and why. */
export function shape(line: string): string {
  return line
    .replace(/\S*artifacts\/\S*/g, '<path>')
    .replace(/\b[a-z_]+-\d{8}-\d{6}-[0-9a-f]{4}\b/g, '<run>')
    .replace(/\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ/g, '<time>')
    .replace(/ \(\d+-epoch moving average\)/, '')
    .replace(/\((better|worse|tie|undefined)\)/, '(<judgement>)')
    .replace(/serving the \w+ \(.*\)$/, 'serving the <model> (<reason>)')
    .replace(/; serving \w+ \(.*\)$/, '; serving <list> (<reason>)')
    .replace(/^(\s+)[* ] (gnn|gbdt|hybrid)\s+val /, '$1<mark> <model> val ')
    .replace(/skipped: .*$/, 'skipped: <reason>')
    .replace(/served by the (gnn|gbdt|hybrid)/, 'served by the <model>')
    .replace(/, (exact|sampled|served by \w+), anchor/, ', <how>, anchor')
    .replace(/-?\d[\d,]*(\.\d+)?/g, '#')
    .trimEnd();
}

let fx: SynthFixture;
const out: Record<string, string[]> = {};

/** Runs one README command on the fixture (its config and artifacts), returning stdout's lines. */
function run(command: string, extra: string[] = []): string[] {
  const args = command.split(' ').map((w) => (w === 'configs/retail.yaml' ? fx.config : w));
  const r = spawnSync(process.execPath, [BIN, ...args, ...extra, '--artifacts', fx.artifacts], { cwd: fx.dir, encoding: 'utf8', timeout: 600_000, env: { ...process.env, NO_COLOR: '1' } });
  expect(r.status, `${command}\n${r.stderr}`).toBe(0);
  return r.stdout.trimEnd().split('\n');
}

const EXAMPLES = [
  { train: 'train --config configs/retail.yaml --task churn', predict: 'predict --config configs/retail.yaml --run latest:churn' },
  { train: 'train --config configs/retail.yaml --task next_purchases', predict: 'predict --config configs/retail.yaml --run latest:next_purchases' },
];

beforeAll(async () => {
  // The bundled config over the tiny data the README's outputs come from.
  const bundled = readFileSync(join(ROOT, 'configs', 'retail.yaml'), 'utf8').replaceAll('datasets/retail/', '');
  fx = await tinySynth(bundled);
  for (const e of EXAMPLES) {
    out[e.train] = run(e.train, ['--epochs', EPOCHS]);
    out[e.predict] = run(e.predict);
  }
}, 1_200_000);

afterAll(() => fx?.cleanup());

describe("the README's train and predict outputs", () => {
  it('masks what differs between runs and nothing else', () => {
    expect(shape('run churn-20261128-050158-6495 (complete) in 53.2s: artifacts/runs/churn-20261128-050158-6495')).toBe('run <run> (complete) in #s: <path>');
    expect(shape('  auroc: val 0.8036  test 0.7755 [95% 0.7505 … 0.7983]  lift -0.0747 (worse)')).toBe('  auroc: val #  test # [#% # … #]  lift # (<judgement>)');
    expect(shape('  test: 1,629 examples at 17 anchor(s) from 2020-05-27T00:00:00Z (anchors from transactions)')).toBe('  test: # examples at # anchor(s) from <time> (anchors from transactions)');
  });

  for (const e of EXAMPLES) {
    for (const command of [e.train, e.predict]) {
      it(`$ npx gnnctl ${command}`, () => {
        const shown = readmeOutput(README, command);
        expect(shown.length, `a \`$ npx gnnctl ${command}\` example with its output in the README`).toBeGreaterThan(0);
        expect(shown.map(shape)).toEqual(out[command]!.map(shape));
      });
    }
  }
});
