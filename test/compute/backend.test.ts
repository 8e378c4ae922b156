import { tf } from '../../src/core/tf.js';
import { describe, expect, it } from 'vitest';
import { parseBackendRequest, selectBackend, type BackendInfo, type NativeLoader } from '../../src/compute/backend.js';
import { FUSED_KERNELS } from '../../src/compute/fused.js';
import { probeMatmul } from '../../src/compute/probe.js';
import { UsageError } from '../../src/core/errors.js';
import { takeWarnings } from '../../src/core/log.js';

function reason(info: BackendInfo, backend: string) {
  const r = info.reasons.find((x) => x.backend === backend);
  if (!r) throw new Error(`no reason for ${backend} in ${JSON.stringify(info.reasons)}`);
  return r;
}

describe('selectBackend on this machine (no tfjs-node)', () => {
  it('auto picks wasm with SIMD, one thread, the added kernels, and says why the native backends were skipped', async () => {
    const info = await selectBackend('auto');
    expect(info.name).toBe('wasm');
    expect(info.requested).toBe('auto');
    expect(tf.getBackend()).toBe('wasm');
    expect(info.simd).toBe(true);
    expect(info.threads).toBe(1);
    expect(info.added_kernels).toContain('UnsortedSegmentSum');
    // The fused ops (fused.ts) follow the kernels wasm lacks.
    expect(info.added_kernels!.slice(-FUSED_KERNELS.length)).toEqual([...FUSED_KERNELS]);
    expect(info.replaced_kernels).toEqual(['GatherV2', 'Transpose', 'BatchMatMul', 'SplitV', 'Concat', 'Sum', 'Identity']);
    expect(info.matmul_library).toBe('onnxruntime');
    expect(info.tfjs_version).toBe('4.22.0');
    expect(info.reasons.map((r) => [r.backend, r.status])).toEqual([
      ['@tensorflow/tfjs-node-gpu', 'skipped'],
      ['@tensorflow/tfjs-node', 'skipped'],
      ['@tensorflow/tfjs-backend-wasm', 'active'],
      ['cpu', 'available'],
    ]);
    expect(reason(info, '@tensorflow/tfjs-node-gpu').why).toMatch(/^not installed .*npm install @tensorflow\/tfjs-node-gpu.*CUDA 11\.2/);
    expect(reason(info, '@tensorflow/tfjs-node').why).toMatch(/^not installed .*npm install @tensorflow\/tfjs-node`.*downloads libtensorflow/);
    expect(reason(info, '@tensorflow/tfjs-backend-wasm').why).toContain('SIMD, 1 thread');
  });

  it('leaves no tensors behind when switching backends', async () => {
    await selectBackend('auto');
    const before = tf.memory().numTensors;
    await selectBackend('cpu');
    await selectBackend('wasm');
    await selectBackend('auto');
    expect(tf.memory().numTensors).toBe(before);
    takeWarnings();
  });

  it('is idempotent: the same request returns the cached result', async () => {
    const a = await selectBackend('auto');
    const b = await selectBackend('auto');
    expect(b).toBe(a);
  });

  it('re-selects when someone switched the TF.js backend behind its back', async () => {
    const a = await selectBackend('auto');
    await tf.setBackend('cpu');
    const b = await selectBackend('auto');
    expect(b).not.toBe(a);
    expect(tf.getBackend()).toBe('wasm');
  });

  it('runs a gather gradient on the selected wasm backend (UnsortedSegmentSum is registered)', async () => {
    await selectBackend('auto');
    const g = tf.tidy(() =>
      Array.from(tf.grad((t: tf.Tensor) => tf.sum(tf.gather(t, tf.tensor1d([2, 0, 2], 'int32'))))(tf.zeros([3, 2])).dataSync()),
    );
    expect(g).toEqual([1, 1, 0, 0, 2, 2]);
  });

  it('cpu works but warns that it is ~30× slower than wasm', async () => {
    takeWarnings();
    const info = await selectBackend('cpu');
    expect(info.name).toBe('cpu');
    expect(tf.getBackend()).toBe('cpu');
    expect(reason(info, 'cpu')).toEqual({ backend: 'cpu', status: 'active', why: 'requested with --backend cpu; ~30× slower than wasm' });
    expect(reason(info, '@tensorflow/tfjs-backend-wasm').status).toBe('available');
    expect(info.added_kernels).toEqual([...FUSED_KERNELS]);
    expect(takeWarnings()).toEqual([expect.stringMatching(/cpu backend is active: it is ~30× slower than wasm/)]);
    const p = probeMatmul({ seconds: 0.05 });
    expect(p.backend).toBe('cpu');
    expect(p.gflops).toBeGreaterThan(0);
    await selectBackend('wasm');
    expect(tf.getBackend()).toBe('wasm');
  });

  it('tensorflow fails with a UsageError naming the install command and why it may fail', async () => {
    const err = await selectBackend('tensorflow').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UsageError);
    const e = err as UsageError;
    expect(e.message).toContain('neither @tensorflow/tfjs-node-gpu nor @tensorflow/tfjs-node could be loaded');
    expect(e.hint).toContain('npm install @tensorflow/tfjs-node');
    expect(e.hint).toContain('downloads libtensorflow');
    expect(e.hint).toContain('--backend wasm');
    expect(e.describe()).toContain('not installed');
    // The failed request leaves the previous backend usable.
    expect((await selectBackend('wasm')).name).toBe('wasm');
  });

  it('reports a native package that is installed but broken as "failed to load" with its message', async () => {
    const broken: NativeLoader = {
      isInstalled: (pkg) => pkg === '@tensorflow/tfjs-node',
      load: async () => {
        throw new Error('libtensorflow.so.2: cannot open shared object file: No such file or directory\n    at Module._extensions');
      },
    };
    const info = await selectBackend('auto', { native: broken });
    expect(info.name).toBe('wasm');
    expect(reason(info, '@tensorflow/tfjs-node')).toEqual({
      backend: '@tensorflow/tfjs-node',
      status: 'skipped',
      why: 'installed but failed to load: libtensorflow.so.2: cannot open shared object file: No such file or directory',
    });
    expect(reason(info, '@tensorflow/tfjs-node-gpu').why).toMatch(/^not installed/);
  });

  it('an explicit wasm request lists installed native packages as available without loading them', async () => {
    let loads = 0;
    const present: NativeLoader = {
      isInstalled: () => true,
      load: async () => {
        loads++;
      },
    };
    const info = await selectBackend('wasm', { native: present });
    expect(loads).toBe(0);
    expect(info.reasons.slice(0, 2)).toEqual([
      { backend: '@tensorflow/tfjs-node-gpu', status: 'available', why: 'installed, not requested' },
      { backend: '@tensorflow/tfjs-node', status: 'available', why: 'installed, not requested' },
    ]);
  });
});

describe('parseBackendRequest', () => {
  it.each(['auto', 'tensorflow', 'wasm', 'cpu'])('accepts %s', (v) => {
    expect(parseBackendRequest(v)).toBe(v);
  });

  it('defaults to auto', () => {
    expect(parseBackendRequest(undefined)).toBe('auto');
  });

  it('rejects an unknown name with a suggestion', () => {
    expect(() => parseBackendRequest('wsam')).toThrow(UsageError);
    try {
      parseBackendRequest('wsam');
    } catch (e) {
      expect((e as UsageError).describe()).toBe('--backend: unknown tensor backend (got "wsam")\n  hint: did you mean "wasm"?');
    }
  });
});
