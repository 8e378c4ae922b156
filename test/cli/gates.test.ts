import { describe, expect, it } from 'vitest';
import { checkQualityGates, parseGates } from '../../src/cli/gates.js';
import { ExitCode, QualityGateError, UsageError } from '../../src/core/errors.js';

function gateError(metrics: unknown, spec: string): QualityGateError {
  try {
    checkQualityGates(parseGates([spec]), metrics, { ok: true });
  } catch (e) {
    return e as QualityGateError;
  }
  throw new Error('the gate passed');
}

describe('--fail-under on an undefined metric fails (exit 4) and says why', () => {
  it('NaN in memory (the run itself) with no positives', () => {
    const e = gateError({ test: { auroc: Number.NaN, positive_rate: 0, n: 25 } }, 'test.auroc=0.6');
    expect(e).toBeInstanceOf(QualityGateError);
    expect(e.exitCode).toBe(ExitCode.qualityGate);
    expect(e.exitCode).toBe(4);
    expect(e.message).toMatch(/test\.auroc is undefined \(no positive examples among 25; bar 0\.6\)/);
  });

  it('null in JSON (a metrics file) on an empty test set, and a null lift without a baseline', () => {
    expect(gateError({ test: { auroc: null, n: 0 } }, 'test.auroc=0.6').message).toMatch(/the set is empty/);
    expect(gateError({ lift: null, baseline: null }, 'lift=0').message).toMatch(/lift is undefined \(the run has no baseline/);
  });

  it('defined metrics still pass and fail as before; a path that does not exist is a usage error', () => {
    expect(() => checkQualityGates(parseGates(['test.auroc=0.6']), { test: { auroc: 0.7 } }, null)).not.toThrow();
    expect(gateError({ test: { auroc: 0.5 } }, 'test.auroc=0.6').message).toMatch(/test\.auroc = 0\.5 \(bar 0\.6\)/);
    expect(gateError({ test: { mae: 3 } }, 'test.mae=2').message).toMatch(/test\.mae = 3/);
    expect(() => checkQualityGates(parseGates(['test.aurco=0.6']), { test: { auroc: 0.7 } }, null)).toThrow(UsageError);
  });
});
