import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { pipelineConfig } from '../helpers/pipeline.js';
import { tinySynth, type SynthFixture } from '../helpers/synth.js';
import { formatSeconds, interactiveTerminal, Progress, progressIntervalMs, spinnerOptions, withHeartbeat, type Cadence } from '../../src/core/progress.js';
import { setQuiet } from '../../src/core/log.js';

describe('interactiveTerminal', () => {
  it('is a TTY without a CI variable and with a TERM other than dumb', () => {
    expect(interactiveTerminal({ isTTY: true }, { TERM: 'xterm' })).toBe(true);
    expect(interactiveTerminal({ isTTY: true }, {})).toBe(true);
    expect(interactiveTerminal({ isTTY: false }, {})).toBe(false);
    expect(interactiveTerminal({}, {})).toBe(false);
    expect(interactiveTerminal({ isTTY: true }, { TERM: 'dumb' })).toBe(false);
    // set at all, even empty or "false", as ora and most CI tools read it
    expect(interactiveTerminal({ isTTY: true }, { CI: '' })).toBe(false);
    expect(interactiveTerminal({ isTTY: true }, { CI: 'true' })).toBe(false);
  });

  it('a terminal of 0 columns is not one to redraw; no width reported is (ora assumes 80)', () => {
    expect(interactiveTerminal({ isTTY: true, columns: 0 }, {})).toBe(false);
    expect(interactiveTerminal({ isTTY: true, columns: 80 }, {})).toBe(true);
    expect(interactiveTerminal({ isTTY: true }, {})).toBe(true);
    // even when the caller says it is a terminal
    const out: string[] = [];
    const p = new Progress({ stream: { write: (x: string) => (out.push(x), true), isTTY: true, columns: 0 }, tty: true, intervalMs: 0 });
    p.begin('pairs', 10);
    p.update(4);
    p.stop();
    expect(out).toEqual([expect.stringMatching(/^pairs: 4\/10 \(40%\)/)]);
  });

  it('a CI job on a pseudo-terminal gets the plain heartbeat lines, not a spinner ora would silence', () => {
    const out: string[] = [];
    const stream = { write: (s: string) => (out.push(s), true), isTTY: true, columns: 120 };
    const had = 'CI' in process.env;
    const old = process.env.CI;
    process.env.CI = 'true';
    try {
      const p = new Progress({ stream, intervalMs: 0 });
      p.begin('pairs', 10);
      p.update(4);
      p.stop();
    } finally {
      if (had) process.env.CI = old;
      else delete process.env.CI;
    }
    expect(out).toHaveLength(1);
    expect(out[0]).toMatch(/^pairs: 4\/10 \(40%\)/);
  });
});

describe('spinnerOptions', () => {
  it('turns colour off when NO_COLOR is set and not empty (no-color.org)', () => {
    expect(spinnerOptions({ NO_COLOR: '1' })).toEqual({ color: false });
    expect(spinnerOptions({ NO_COLOR: '' })).toEqual({});
    expect(spinnerOptions({})).toEqual({});
  });

  it('on a colour terminal, the spinner frame has ANSI colour unless NO_COLOR is set', () => {
    // FORCE_COLOR stands in for a colour terminal (the test's stderr is not one).
    const progress = fileURLToPath(new URL('../../dist/core/progress.js', import.meta.url));
    const frame = (env: Record<string, string>) =>
      spawnSync(process.execPath, ['--input-type=module', '-e', `import ora from 'ora'; import { spinnerOptions } from ${JSON.stringify(progress)}; process.stdout.write(ora({ ...spinnerOptions(), text: 'x', isEnabled: false }).frame());`], {
        env: { ...process.env, NO_COLOR: '', FORCE_COLOR: '1', ...env },
        cwd: fileURLToPath(new URL('../..', import.meta.url)),
        encoding: 'utf8',
      }).stdout;
    expect(frame({})).toMatch(/\u001b\[36m/);
    expect(frame({ NO_COLOR: '1' })).not.toMatch(/\u001b\[/);
    expect(frame({ NO_COLOR: '1' })).toMatch(/ x$/);
  });
});

/** A Progress writing plain lines (no TTY) to an array, on a clock and heartbeat the test drives. */
function plainProgress(intervalMs = 30_000, cadence?: Cadence, clock = { now: 0 }) {
  const lines: string[] = [];
  let beat: (() => void) | null = null;
  let beatMs = 0;
  const p = new Progress({
    stream: { write: (s: string) => lines.push(...s.split('\n').filter(Boolean)) },
    tty: false,
    now: () => clock.now,
    intervalMs,
    ...(cadence ? { cadence } : {}),
    every: (ms, fn) => {
      beatMs = ms;
      beat = fn;
      return () => {
        beat = null;
      };
    },
  });
  return {
    p,
    lines,
    advance: (ms: number) => (clock.now += ms),
    tick: () => beat?.(),
    beating: () => beat !== null,
    beatMs: () => beatMs,
  };
}

describe('Progress without a terminal', () => {
  beforeEach(() => setQuiet(false));
  afterEach(() => setQuiet(false));

  it('a synchronous loop that reports often prints one plain line per interval, with count, rate and ETA', () => {
    const f = plainProgress(30_000);
    f.p.begin('epoch 1/3', 1000);
    // 100 s of work in 1 s steps: lines at 30, 60 and 90 s, never more often.
    for (let i = 1; i <= 100; i++) {
      f.advance(1000);
      f.p.update(i * 10, `loss 0.${i}`);
    }
    expect(f.lines).toHaveLength(3);
    expect(f.lines[0]).toBe('epoch 1/3: 300/1,000 (30%), 10/s, ETA 1:10, 30s elapsed · loss 0.30');
    expect(f.lines[2]).toMatch(/^epoch 1\/3: 900\/1,000 \(90%\), 10\/s, ETA 10s, 1:30 elapsed/);
  });

  it('many short phases (6-second distillation epochs) still print every interval: the cadence spans phases, not one phase', () => {
    const cadence: Cadence = { last: null };
    const clock = { now: 0 };
    const lines: string[] = [];
    // Each epoch is a phase of its own Progress sharing the process's cadence, as distill's stages are.
    for (let epoch = 1; epoch <= 10; epoch++) {
      const f = plainProgress(15_000, cadence, clock);
      f.p.begin(`distill epoch ${epoch}/10`, 600);
      for (let i = 1; i <= 6; i++) {
        f.advance(1000);
        f.p.update(i * 100);
      }
      f.p.stop();
      lines.push(...f.lines);
    }
    // 60 s of work in 6 s phases: a line every 15 s (at 15, 30, 45 and 60 s), the first in epoch 3.
    // Without the shared cadence (below) each phase restarts the wait and nothing prints at all.
    expect(lines).toHaveLength(4);
    expect(lines[0]).toMatch(/^distill epoch 3\/10: /);
    const perPhase = plainProgress(15_000);
    for (let epoch = 1; epoch <= 10; epoch++) {
      perPhase.p.begin(`epoch ${epoch}`, 600);
      for (let i = 1; i <= 6; i++) {
        perPhase.advance(1000);
        perPhase.p.update(i * 100);
      }
    }
    expect(perPhase.lines).toHaveLength(0);
  });

  it('a phase that awaits (no update calls) still prints from the heartbeat, and the heartbeat beats more often than the interval', () => {
    const f = plainProgress(30_000);
    f.p.begin('graph build', 0);
    f.p.step('reading transactions');
    expect(f.beatMs()).toBeLessThan(30_000);
    let t = 0;
    for (; t < 95_000; t += f.beatMs()) {
      f.advance(f.beatMs());
      f.tick();
    }
    // Every gap between lines ≤ 30 s: at least three lines in 95 s, each naming the step.
    expect(f.lines.length).toBeGreaterThanOrEqual(3);
    expect(f.lines[0]).toMatch(/^graph build: 30s elapsed · reading transactions$/);
  });

  it('end() stops the heartbeat; a stopped phase prints nothing more', () => {
    const f = plainProgress(30_000);
    f.p.begin('baseline fit', 0);
    f.p.end('baseline: done');
    expect(f.beating()).toBe(false);
    f.advance(60_000);
    f.tick();
    f.p.update(5);
    expect(f.lines).toEqual([]);
  });

  it('--quiet (and a library caller\'s setQuiet(true)) prints nothing; --json (quiet info, progress on) prints plain lines; quiet mid-phase stops them', () => {
    setQuiet(true);
    const q = plainProgress(0);
    q.p.begin('x', 10);
    q.p.update(5);
    expect(q.lines).toEqual([]);
    setQuiet(true, false); // what --json sets
    const j = plainProgress(0);
    j.p.begin('x', 10);
    j.p.update(5);
    expect(j.lines).toEqual(['x: 5/10 (50%), 0/s, ETA ?, 0s elapsed']);
    setQuiet(true, true); // --quiet
    j.p.update(6);
    expect(j.lines).toHaveLength(1);
  });

  it('GNNCTL_PROGRESS_SECONDS sets the cadence; a bad value falls back to 15 s', () => {
    expect(progressIntervalMs({})).toBe(15_000);
    expect(progressIntervalMs({ GNNCTL_PROGRESS_SECONDS: '0' })).toBe(0);
    expect(progressIntervalMs({ GNNCTL_PROGRESS_SECONDS: '2.5' })).toBe(2500);
    expect(progressIntervalMs({ GNNCTL_PROGRESS_SECONDS: 'soon' })).toBe(15_000);
    expect(progressIntervalMs({ GNNCTL_PROGRESS_SECONDS: '-1' })).toBe(15_000);
  });
});

describe('progress through the binary without a terminal (CI, cron, --json)', () => {
  const BIN = join(import.meta.dirname, '..', '..', 'bin', 'gnnctl.js');
  let fx: SynthFixture;
  const run = (args: string[], env: Record<string, string> = {}) =>
    spawnSync(process.execPath, [BIN, ...args, '--config', fx.config, '--artifacts', fx.artifacts], {
      cwd: fx.dir,
      encoding: 'utf8',
      timeout: 170_000,
      // The cadence of 0 s makes every update print: periodic lines without waiting 15 s of real time.
      env: { ...process.env, NO_COLOR: '1', GNNCTL_PROGRESS_SECONDS: '0', ...env },
    });
  beforeAll(async () => {
    fx = await tinySynth(pipelineConfig());
  });
  afterAll(() => fx.cleanup());

  it('graph build and train --json print plain progress lines on stderr, stdout stays one JSON object', () => {
    const g = run(['graph', 'build', '--json']);
    expect(g.status, g.stderr).toBe(0);
    expect(JSON.parse(g.stdout)).toMatchObject({ dir: expect.any(String) });
    expect(g.stderr).toMatch(/^graph build: step \d+\/\d+, \d+s elapsed, ETA .* · reading transactions$/m);
    expect(g.stderr).toMatch(/^graph build: .* · reversing transactions\.customer_id$/m);

    const t = run(['train', '--task', 'fraud', '--epochs', '1', '--backend', 'wasm', '--json']);
    expect(t.status, t.stderr).toBe(0);
    expect(t.stdout.trim().split('\n')).toHaveLength(1);
    expect(JSON.parse(t.stdout)).toMatchObject({ status: 'complete' });
    expect(t.stderr).toMatch(/^epoch 1\/1: \d[\d,]*\/[\d,]+ \(\d+%\), .*\/s, ETA .*, .* elapsed · loss /m);
    expect(t.stderr).toMatch(/^epoch 1\/1 validation: /m);
    expect(t.stderr).toMatch(/^evaluation: test: /m);
    expect(t.stderr).toMatch(/^baseline fit \([\d,]+ rows\): .* elapsed · [\d,]+ rows seen/m);
    // No ANSI control sequences (spinner redraws) in a log.
    expect(t.stderr).not.toMatch(/\u001b\[/);
  });

  // `script` (util-linux) runs the binary on a pseudo-terminal; without a terminal around it, its size is 0 × 0.
  const hasScript = spawnSync('script', ['--version']).status === 0;
  if (!hasScript) console.warn('skipping the pseudo-terminal test: util-linux `script` is not installed (apt-get install bsdutils)');
  it.skipIf(!hasScript)('on a pseudo-terminal: of 0 columns, plain lines (ora looped clearing lines forever); sized, the live line. Both finish', () => {
    const env: Record<string, string | undefined> = { ...process.env, TERM: 'xterm', NO_COLOR: '1', GNNCTL_PROGRESS_SECONDS: '0' };
    delete env.CI;
    const onPty = (prefix: string, out: string) =>
      spawnSync('script', ['-qec', `${prefix}${JSON.stringify(process.execPath)} ${JSON.stringify(BIN)} graph build --config ${JSON.stringify(fx.config)} --artifacts ${JSON.stringify(out)}`, '/dev/null'], {
        cwd: fx.dir,
        encoding: 'utf8',
        timeout: 60_000,
        env,
      });
    const bare = onPty('', join(fx.dir, 'pty-artifacts-0'));
    expect(bare.error, 'the binary did not finish on a 0-column pseudo-terminal').toBeUndefined();
    expect(bare.status, bare.stdout).toBe(0);
    expect(bare.stdout).toMatch(/^graph build: step \d+\/\d+/m);
    expect(bare.stdout).not.toMatch(/\u001b\[1G/);
    const sized = onPty('stty cols 100 rows 40; ', join(fx.dir, 'pty-artifacts-100'));
    expect(sized.error, 'the binary did not finish on a sized pseudo-terminal').toBeUndefined();
    expect(sized.status, sized.stdout).toBe(0);
    expect(sized.stdout).toMatch(/\u001b\[1G.*graph build/);
  });

  it('--quiet prints no progress at all', () => {
    const t = run(['train', '--task', 'fraud', '--epochs', '1', '--backend', 'wasm', '--quiet']);
    expect(t.status, t.stderr).toBe(0);
    expect(t.stderr).not.toMatch(/^(epoch|evaluation|baseline fit|graph build)/m);
  });
});

describe('withHeartbeat (a phase with no count: DuckDB SQL, named steps)', () => {
  function fakeOptions(lines: string[], clock: { now: number }, timer: { beat: (() => void) | null }) {
    return {
      stream: { write: (x: string) => lines.push(...x.split('\n').filter(Boolean)) },
      tty: false,
      now: () => clock.now,
      intervalMs: 15_000,
      every: (_ms: number, fn: () => void) => {
        timer.beat = fn;
        return () => {
          timer.beat = null;
        };
      },
    };
  }

  it('beats while the work is pending, names its step, and stops when it settles, also when it throws', async () => {
    setQuiet(true, false);
    const lines: string[] = [];
    const clock = { now: 0 };
    const timer: { beat: (() => void) | null } = { beat: null };
    let release!: () => void;
    const pending = withHeartbeat(
      'distill fraud: RTI element lists',
      async (p) => {
        p.step('transactions.customer_id->transactions.customer_id');
        await new Promise<void>((r) => (release = r));
        return 42;
      },
      fakeOptions(lines, clock, timer),
    );
    clock.now = 16_000;
    timer.beat?.();
    expect(lines).toEqual(['distill fraud: RTI element lists: 16s elapsed · transactions.customer_id->transactions.customer_id']);
    release();
    expect(await pending).toBe(42);
    expect(timer.beat).toBeNull();

    const failing = withHeartbeat('training tables for churn', async () => {
      throw new Error('DuckDB: out of memory');
    }, fakeOptions(lines, clock, timer));
    await expect(failing).rejects.toThrow('out of memory');
    expect(timer.beat).toBeNull();
    setQuiet(false);
  });
});

describe('Progress in steps', () => {
  it('a phase of a few unequal steps says which step and shows no rate', () => {
    setQuiet(true, false);
    const f = plainProgress(0);
    f.p.begin('graph build', 4, { steps: true });
    f.advance(2000);
    f.p.update(1, 'numbering transactions');
    expect(f.lines).toEqual(['graph build: step 2/4, 2s elapsed, ETA 6s · numbering transactions']);
    setQuiet(false);
  });
});

describe('Progress without a terminal (the distill branch\'s API: a heartbeat in seconds, setQuiet(q, progress))', () => {
  it('prints a plain line with the count and an ETA at each heartbeat (--json keeps it; --quiet silences it)', async () => {
    const { Progress } = await import('../../src/core/progress.js');
    const { setQuiet } = await import('../../src/core/log.js');
    const lines: string[] = [];
    const write = process.stderr.write.bind(process.stderr);
    const tty = process.stderr.isTTY;
    Object.defineProperty(process.stderr, 'isTTY', { value: false, configurable: true });
    process.stderr.write = ((s: string) => (lines.push(String(s)), true)) as typeof process.stderr.write;
    try {
      setQuiet(true, false); // what --json sets
      const p = new Progress(0);
      p.begin('pairs', 100);
      p.update(40);
      setQuiet(true, true); // --quiet
      p.update(60);
    } finally {
      process.stderr.write = write;
      Object.defineProperty(process.stderr, 'isTTY', { value: tty, configurable: true });
      setQuiet(false);
    }
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^pairs: 40\/100 \(40%\), .*\/s, ETA .+\n$/);
  });
});

describe('Progress.log', () => {
  it('on a terminal: the line goes above the live line, which is drawn again; without one: a plain info line', () => {
    const out: string[] = [];
    const stream = { write: (s: string) => (out.push(s), true), isTTY: true, columns: 120, cursorTo: () => true, moveCursor: () => true, clearLine: () => true };
    const p = new Progress({ stream, tty: true, intervalMs: 0 });
    p.begin('distill: 4 students', 100);
    p.update(50, 'student epoch 1/2');
    out.length = 0;
    p.log('distill student epoch 1/2: loss 0.1000, val auroc 0.9000');
    const joined = out.join('');
    expect(joined).toContain('distill student epoch 1/2: loss 0.1000, val auroc 0.9000\n');
    // the live line is drawn again after the logged one
    expect(joined.indexOf('distill: 4 students', joined.indexOf('val auroc'))).toBeGreaterThan(0);
    p.stop();

    const lines: string[] = [];
    const write = process.stderr.write.bind(process.stderr);
    process.stderr.write = ((s: string) => (lines.push(String(s)), true)) as typeof process.stderr.write;
    try {
      const q = new Progress({ stream: { write: () => true }, tty: false, intervalMs: 60_000 });
      q.begin('x', 10);
      q.log('an epoch summary');
      q.stop();
    } finally {
      process.stderr.write = write;
    }
    expect(lines).toEqual(['an epoch summary\n']);
  });
});

describe('formatSeconds', () => {
  it('rounds before splitting minutes and seconds (179.6 s is 3:00, not 2:60)', () => {
    expect(formatSeconds(179.6)).toBe('3:00');
    expect(formatSeconds(59.6)).toBe('1:00');
    expect(formatSeconds(61.2)).toBe('1:01');
    expect(formatSeconds(9.4)).toBe('9s');
    expect(formatSeconds(Number.POSITIVE_INFINITY)).toBe('?');
  });
});
