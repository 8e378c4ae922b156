import { tf } from '../../src/core/tf.js';
import { describe, expect, it } from 'vitest';
import { doctorCommand } from '../../src/cli/commands/doctor.js';
import { satisfiesMin } from '../../src/compute/diagnose.js';
import { UsageError } from '../../src/core/errors.js';
import { VERSION } from '../../src/core/version.js';

describe('gnnctl doctor', () => {
  it('reports the machine, the wasm backend with reasons, DuckDB and onnxruntime, and ok', async () => {
    const out = await doctorCommand({ json: true });
    const r = out.result;
    expect(r.ok).toBe(true);
    expect(r.problems).toEqual([]);
    expect(r.gnnctl.version).toBe(VERSION);
    expect(r.node).toEqual({ version: process.version, required: '>=20.19', ok: true });
    expect(r.platform.os).toBe(process.platform);
    expect(r.platform.arch).toBe(process.arch);
    expect(r.cpu.cores).toBeGreaterThanOrEqual(1);
    expect(r.cpu.model.length).toBeGreaterThan(0);
    expect(r.memory.total_bytes).toBeGreaterThan(r.memory.free_bytes);
    expect(r.memory.free_bytes).toBeGreaterThan(0);

    expect(r.backend.name).toBe('wasm');
    expect(r.backend.requested).toBe('auto');
    expect(r.backend.simd).toBe(true);
    expect(r.backend.threads).toBe(1);
    expect(r.backend.added_kernels).toContain('UnsortedSegmentSum');
    expect(r.backend.reasons.find((x) => x.backend === '@tensorflow/tfjs-node')).toMatchObject({ status: 'skipped', why: expect.stringMatching(/^not installed/) });
    expect(r.backend.matmul.backend).toBe('wasm');
    expect(r.backend.matmul.gflops).toBeGreaterThan(0.5);
    expect(r.backend.matmul.seconds).toBeGreaterThanOrEqual(0.2);

    expect(r.duckdb.ok).toBe(true);
    expect(r.duckdb.version).toMatch(/^v\d+\.\d+\.\d+/);
    expect(r.onnxruntime).toEqual({ ok: true, version: '1.30.0', session: 'ok' });

    // The result is what --json prints: it must survive JSON.
    expect(JSON.parse(JSON.stringify(r))).toEqual(r);
    expect(tf.getBackend()).toBe('wasm');
  });

  it('prints an aligned table', async () => {
    const { text, result } = await doctorCommand({});
    const lines = text.split('\n');
    expect(lines[0]).toBe('gnnctl doctor: ok');
    const backend = lines.find((l) => l.startsWith('  backend '));
    expect(backend).toMatch(/^ {2}backend +wasm \(requested auto\), SIMD on, 1 thread, products in onnxruntime's MLAS$/);
    // Values of the summary table start in one column.
    const summary = lines.slice(2, lines.indexOf('', 2));
    expect(summary.length).toBeGreaterThanOrEqual(10);
    const valueColumns = new Set(summary.map((l) => /^ {2}\S+(?: \S+)? +/.exec(l)![0].length));
    expect(valueColumns.size).toBe(1);
    expect(text).toContain(`  gnnctl `);
    expect(text).toContain(result.duckdb.version!);
    expect(text).toMatch(/\n {2}@tensorflow\/tfjs-node-gpu +skipped +not installed/);
    expect(text).toMatch(/\n {2}cpu +available +pure-JS fallback/);
  });

  it('reports an unmet --backend tensorflow as a problem and checks the rest on auto', async () => {
    const { result, text } = await doctorCommand({ json: true, backend: 'tensorflow' });
    expect(result.ok).toBe(false);
    expect(result.problems).toHaveLength(1);
    expect(result.problems[0]).toContain('neither @tensorflow/tfjs-node-gpu nor @tensorflow/tfjs-node could be loaded');
    expect(result.problems[0]).toContain('npm install @tensorflow/tfjs-node');
    expect(result.backend.name).toBe('wasm');
    expect(text.split('\n')[0]).toBe('gnnctl doctor: 1 problem');
    expect(text).toContain('\nproblems\n  - --backend tensorflow: neither @tensorflow/tfjs-node-gpu nor @tensorflow/tfjs-node could be loaded (@tensorflow/tfjs-node-gpu: not installed; @tensorflow/tfjs-node: not installed)\n      hint: install it with `npm install @tensorflow/tfjs-node`');
  });

  it('reports --backend cpu without calling it a problem', async () => {
    const { result } = await doctorCommand({ json: true, backend: 'cpu' });
    expect(result.ok).toBe(true);
    expect(result.backend.name).toBe('cpu');
    expect(result.backend.matmul.m).toBe(128);
    expect(result.backend.matmul.gflops).toBeGreaterThan(0);
  });

  it('rejects an unknown --backend', async () => {
    await expect(doctorCommand({ backend: 'gpu' })).rejects.toBeInstanceOf(UsageError);
  });
});

describe('satisfiesMin', () => {
  it.each([
    ['20.19.0', '>=20.19', true],
    ['20.20.2', '>=20.19', true],
    ['22.1.0', '>=20.19', true],
    ['20.18.3', '>=20.19', false],
    ['18.20.0', '>=20.19', false],
    ['v20.19.0', '>=20.19.1', false],
  ])('node %s against %s → %s', (version, range, ok) => {
    expect(satisfiesMin(version, range)).toBe(ok);
  });
});
