import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { spinnerOptions } from '../../src/core/progress.js';

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

describe('Progress without a terminal', () => {
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
