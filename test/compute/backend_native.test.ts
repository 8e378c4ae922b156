/**
 * The native (tfjs-node / tfjs-node-gpu) paths of `selectBackend`, on a machine that cannot install
 * them: a fake loader registers a `tensorflow` backend the way tfjs-node does, backed by a cpu backend
 * instance with the cpu kernels copied under the `tensorflow` name. Its own file (one process per test
 * file) so the extra backend never leaks into other tests.
 */
import { tf } from '../../src/core/tf.js';
import { describe, expect, it } from 'vitest';
import { selectBackend, type NativeLoader } from '../../src/compute/backend.js';

const GPU = '@tensorflow/tfjs-node-gpu';
const NODE = '@tensorflow/tfjs-node';

function registerFakeTensorflowBackend(): void {
  if (tf.findBackendFactory('tensorflow') !== null) return;
  const cpuFactory = tf.findBackendFactory('cpu');
  tf.registerBackend('tensorflow', () => cpuFactory() as tf.KernelBackend, 3);
  for (const k of tf.getKernelsForBackend('cpu')) tf.registerKernel({ ...k, backendName: 'tensorflow' });
}

/** A loader for which `installed` packages import fine; the GPU one reports a GPU device when `gpu`. */
function fakeNative(installed: string[], gpu: boolean): NativeLoader {
  return {
    isInstalled: (pkg) => installed.includes(pkg),
    load: async (pkg) => {
      registerFakeTensorflowBackend();
      const backend = tf.findBackend('tensorflow') as unknown as { isUsingGpuDevice?: boolean };
      backend.isUsingGpuDevice = pkg === GPU && gpu;
    },
  };
}

describe('selectBackend with a native tensorflow backend', () => {
  it('auto prefers tfjs-node over wasm', async () => {
    const info = await selectBackend('auto', { native: fakeNative([NODE], false) });
    expect(info.name).toBe('tensorflow');
    expect(tf.getBackend()).toBe('tensorflow');
    expect(info.reasons.map((r) => [r.backend, r.status])).toEqual([
      [GPU, 'skipped'],
      [NODE, 'active'],
      ['@tensorflow/tfjs-backend-wasm', 'available'],
      ['cpu', 'available'],
    ]);
    expect(info.reasons[1]!.why).toBe('loaded; libtensorflow on the CPU');
  });

  it('auto prefers tfjs-node-gpu and reports tensorflow-gpu when TensorFlow uses a GPU', async () => {
    const info = await selectBackend('auto', { native: fakeNative([GPU, NODE], true) });
    expect(info.name).toBe('tensorflow-gpu');
    expect(info.reasons.slice(0, 2)).toEqual([
      { backend: GPU, status: 'active', why: 'loaded; TensorFlow uses a GPU device' },
      { backend: NODE, status: 'skipped', why: `not needed: ${GPU} is active` },
    ]);
  });

  it('says so when tfjs-node-gpu loads but finds no GPU', async () => {
    const info = await selectBackend('tensorflow', { native: fakeNative([GPU], false) });
    expect(info.name).toBe('tensorflow');
    expect(info.reasons[0]!.status).toBe('active');
    expect(info.reasons[0]!.why).toContain('found no usable GPU (needs CUDA 11.2 + cuDNN 8.1)');
  });

  it('an explicit wasm request leaves an installed tfjs-node unused', async () => {
    const info = await selectBackend('wasm', { native: fakeNative([NODE], false) });
    expect(info.name).toBe('wasm');
    expect(tf.getBackend()).toBe('wasm');
    expect(info.reasons[1]).toEqual({ backend: NODE, status: 'available', why: 'installed, not requested' });
  });
});
