/**
 * Choosing and initialising the TensorFlow.js backend that train, embed and distill run on.
 *
 * Order for `--backend auto` (docs/architecture.md, "Compute"): `@tensorflow/tfjs-node-gpu`, `@tensorflow/tfjs-node`,
 * `@tensorflow/tfjs-backend-wasm`, the pure-JS cpu backend. Every candidate not chosen gets a reason, so
 * `gnnctl doctor` and run manifests can say why training ran where it ran.
 *
 * - The native packages download libtensorflow when they install (the GPU build also needs CUDA 11.2 and
 *   cuDNN 8.1), so they are not dependencies of gnnctl. They are imported with a computed specifier, which
 *   keeps TypeScript and bundlers from requiring them; "installed" is decided by resolving the package
 *   first, so a package that is present but broken (binding missing, libtensorflow.so not found) is
 *   reported as "failed to load" with its message, not as "not installed". tfjs-node-gpu silently runs on
 *   the CPU when TensorFlow finds no usable GPU; `isUsingGpuDevice` on its backend tells the two apart.
 * - wasm: the package's Node entry is a CommonJS bundle whose Emscripten loader reads the `.wasm` file
 *   from its own `__dirname`, which already works from any working directory. We still point
 *   `setWasmPaths` at the folder resolved with `createRequire(import.meta.url)`: it is the same folder for
 *   `src/` under vitest and for `dist/`, and it keeps working if gnnctl is ever bundled (where `__dirname`
 *   would be the bundle's). On Node the backend is single-threaded: TF.js reports
 *   `WASM_HAS_MULTITHREAD_SUPPORT = false` when `IS_NODE` (tfjs#3830), and forcing the flag fails because
 *   the threaded build starts its workers from Blob URLs, which Node's worker_threads cannot load. SIMD
 *   is on (`tfjs-backend-wasm-simd.wasm`, XNNPACK): ≈29 GFLOP/s matmul on this kind of machine. Use the
 *   second core for sampling and gathering in a worker instead.
 * - Kernels the wasm backend lacks (`UnsortedSegmentSum`, the gradient of `tf.gather`, among others) are
 *   registered by `wasm_kernels.ts` before the backend is chosen, along with a ~10× faster `GatherV2`.
 *   The fused ops of `fused.ts` (layerNorm, neighbour sums, dropout, attention) are registered for wasm
 *   and cpu; on the native backends those ops run as composites of standard ops.
 * - cpu works everywhere but its matmul is ≈0.85 GFLOP/s, about 30× slower than wasm: it is chosen only
 *   on request (or when wasm cannot start) and then says so in a warning.
 *
 * `selectBackend` is idempotent: the same request returns the cached result (after checking that nobody
 * switched the TF.js backend since), so every stage can call it without paying twice.
 */
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { tf } from '../core/tf.js';
import { UsageError, suggest, assertUnreachable } from '../core/errors.js';
import { warn } from '../core/log.js';
import { cpuBackend, registerWasmKernels } from './wasm_kernels.js';
import { matMulLibrary, registerFastWasmKernels } from './wasm_fast_kernels.js';
import { registerFusedKernels } from './fused.js';
import type { BackendWasm } from '@tensorflow/tfjs-backend-wasm';

export const BACKEND_REQUESTS = ['auto', 'tensorflow', 'wasm', 'cpu'] as const;
/** What the user asks for with `--backend`. */
export type BackendRequest = (typeof BACKEND_REQUESTS)[number];
/** What actually runs. `tensorflow-gpu` only when libtensorflow really uses a GPU device. */
export type BackendName = 'tensorflow-gpu' | 'tensorflow' | 'wasm' | 'cpu';

export interface BackendReason {
  /** A package name (`@tensorflow/tfjs-node-gpu`, …) or `cpu`. */
  backend: string;
  /** `active`: in use; `available`: could be used but was not chosen; `skipped`: cannot be used. */
  status: 'active' | 'skipped' | 'available';
  why: string;
}

export interface BackendInfo {
  name: BackendName;
  requested: BackendRequest;
  /** One entry per candidate, in order of preference. */
  reasons: BackendReason[];
  /** Threads the backend computes with, where known (wasm: XNNPACK's thread pool; always 1 on Node). */
  threads?: number;
  /** Whether the wasm SIMD binary is in use (wasm only). */
  simd?: boolean;
  /**
   * Kernels gnnctl registered: on wasm those it lacked (`UnsortedSegmentSum`, …); on wasm and cpu the
   * fused ops of `fused.ts` (`GnnctlLayerNorm`, …). Absent on the native backends.
   */
  added_kernels?: string[];
  /** Backend kernels gnnctl replaced with faster ones (wasm only: `GatherV2`). */
  replaced_kernels?: string[];
  /** wasm only: the library its matrix products run in (onnxruntime's MLAS unless unavailable or `GNNCTL_ORT_MATMUL=0`). */
  matmul_library?: 'onnxruntime' | 'xnnpack';
  /** The TF.js version (`@tensorflow/tfjs`). */
  tfjs_version: string;
}

const GPU_PKG = '@tensorflow/tfjs-node-gpu';
const NODE_PKG = '@tensorflow/tfjs-node';
const WASM_PKG = '@tensorflow/tfjs-backend-wasm';
// With require, as core/tf.ts loads TF.js: Node skips lexing the CommonJS bundle for its ESM exports (~30 ms).
const requireHere = createRequire(import.meta.url);
const { getThreadsCount, setWasmPaths } = requireHere(WASM_PKG) as typeof import('@tensorflow/tfjs-backend-wasm');

const NOT_INSTALLED_WHY: Record<string, string> = {
  [GPU_PKG]:
    'not installed (optional: `npm install @tensorflow/tfjs-node-gpu`; it downloads libtensorflow at install time and needs CUDA 11.2 + cuDNN 8.1)',
  [NODE_PKG]:
    'not installed (optional: `npm install @tensorflow/tfjs-node`; it downloads libtensorflow at install time, so it fails offline and on platforms without a prebuilt binary)',
};

/**
 * How optional native packages are found and loaded. The default resolves from this file and imports
 * with a computed specifier; tests inject a fake to exercise the native paths on machines without them.
 */
export interface NativeLoader {
  /** Whether the package can be resolved (is installed). */
  isInstalled(pkg: string): boolean;
  /** Imports the package; throws when it is broken. */
  load(pkg: string): Promise<unknown>;
}

export interface SelectOptions {
  native?: NativeLoader;
}

const defaultLoader: NativeLoader = {
  isInstalled(pkg) {
    try {
      requireHere.resolve(pkg);
      return true;
    } catch {
      return false;
    }
  },
  async load(pkg) {
    // A computed specifier: TypeScript and bundlers leave it alone, so the package stays optional.
    const specifier: string = pkg;
    return import(specifier);
  },
};

/** Checks a `--backend` value and narrows its type. */
export function parseBackendRequest(value: string | undefined): BackendRequest {
  if (value === undefined) return 'auto';
  if ((BACKEND_REQUESTS as readonly string[]).includes(value)) return value as BackendRequest;
  throw new UsageError('unknown tensor backend', { where: '--backend', value, hint: suggest(value, BACKEND_REQUESTS) });
}

let cached: { requested: BackendRequest; info: Promise<BackendInfo> } | undefined;

/**
 * Makes the requested backend (or the best available one, for `auto`) the active TF.js backend and says
 * why. Throws `UsageError` when an explicit request (`tensorflow`, `wasm`) cannot be met, naming what to
 * install or what to use instead.
 */
export async function selectBackend(requested: BackendRequest = 'auto', options: SelectOptions = {}): Promise<BackendInfo> {
  if (cached && cached.requested === requested && options.native === undefined) {
    const info = await cached.info.catch(() => undefined);
    if (info && tf.getBackend() === backendRegistryName(info.name)) return info;
  }
  const info = choose(requested, options.native ?? defaultLoader);
  // A result from an injected loader (tests) is never reused by a later default call.
  cached = options.native === undefined ? { requested, info } : undefined;
  try {
    return await info;
  } catch (e) {
    cached = undefined;
    throw e;
  }
}

function backendRegistryName(name: BackendName): string {
  return name === 'tensorflow-gpu' ? 'tensorflow' : name;
}

async function choose(requested: BackendRequest, loader: NativeLoader): Promise<BackendInfo> {
  const reasons: BackendReason[] = [];
  const done = (name: BackendName, extra: Partial<BackendInfo> = {}): BackendInfo => ({
    name,
    requested,
    reasons,
    tfjs_version: tf.version.tfjs,
    ...extra,
  });

  switch (requested) {
    case 'auto': {
      const native = await tryNative(loader, reasons);
      if (native) {
        reasons.push({ backend: WASM_PKG, status: 'available', why: `not needed: ${native} is faster` });
        reasons.push({ backend: 'cpu', status: 'available', why: 'pure-JS fallback, ~30× slower than wasm' });
        return done(native);
      }
      const wasm = await tryWasm();
      if (wasm.ok) {
        reasons.push({ backend: WASM_PKG, status: 'active', why: wasmWhy(wasm) });
        reasons.push({ backend: 'cpu', status: 'available', why: 'pure-JS fallback, ~30× slower than wasm' });
        return done('wasm', { threads: wasm.threads, simd: wasm.simd, added_kernels: wasm.added_kernels, replaced_kernels: wasm.replaced_kernels, matmul_library: wasm.matmul_library });
      }
      reasons.push({ backend: WASM_PKG, status: 'skipped', why: wasm.why });
      const addedKernels = await activateCpu(reasons, 'the fallback: every faster backend was skipped');
      return done('cpu', { added_kernels: addedKernels });
    }
    case 'tensorflow': {
      const native = await tryNative(loader, reasons);
      if (!native) {
        const short = reasons.map((r) => `${r.backend}: ${r.why.startsWith('not installed') ? 'not installed' : r.why}`);
        throw new UsageError(`neither @tensorflow/tfjs-node-gpu nor @tensorflow/tfjs-node could be loaded (${short.join('; ')})`, {
          where: '--backend tensorflow',
          hint:
            'install it with `npm install @tensorflow/tfjs-node` (its install script downloads libtensorflow from ' +
            'storage.googleapis.com, which fails without internet access or on platforms without a prebuilt binary); ' +
            'or run with --backend wasm (or auto), which needs nothing extra',
        });
      }
      reasons.push({ backend: WASM_PKG, status: 'available', why: 'not requested (--backend tensorflow)' });
      reasons.push({ backend: 'cpu', status: 'available', why: 'pure-JS fallback, ~30× slower than wasm' });
      return done(native);
    }
    case 'wasm': {
      noteAvailable(reasons, loader, [GPU_PKG, NODE_PKG]);
      const wasm = await tryWasm();
      if (!wasm.ok) {
        throw new UsageError(`the TF.js wasm backend could not start: ${wasm.why}`, {
          where: '--backend wasm',
          hint: 'reinstall dependencies (`npm ci`) so node_modules/@tensorflow/tfjs-backend-wasm/dist holds its .wasm files; or run with --backend cpu',
        });
      }
      reasons.push({ backend: WASM_PKG, status: 'active', why: wasmWhy(wasm) });
      reasons.push({ backend: 'cpu', status: 'available', why: 'pure-JS fallback, ~30× slower than wasm' });
      return done('wasm', { threads: wasm.threads, simd: wasm.simd, added_kernels: wasm.added_kernels, replaced_kernels: wasm.replaced_kernels, matmul_library: wasm.matmul_library });
    }
    case 'cpu': {
      noteAvailable(reasons, loader, [GPU_PKG, NODE_PKG]);
      reasons.push({ backend: WASM_PKG, status: 'available', why: 'not requested (--backend cpu)' });
      const addedKernels = await activateCpu(reasons, 'requested with --backend cpu');
      return done('cpu', { added_kernels: addedKernels });
    }
    default:
      return assertUnreachable(requested);
  }
}

/** Tries tfjs-node-gpu, then tfjs-node; records a reason for each. Returns the active name or undefined. */
async function tryNative(loader: NativeLoader, reasons: BackendReason[]): Promise<BackendName | undefined> {
  for (const pkg of [GPU_PKG, NODE_PKG]) {
    if (!loader.isInstalled(pkg)) {
      reasons.push({ backend: pkg, status: 'skipped', why: NOT_INSTALLED_WHY[pkg]! });
      continue;
    }
    try {
      await loader.load(pkg);
      if (!(await tf.setBackend('tensorflow'))) throw new Error('the `tensorflow` backend it registers did not initialise');
      probeOp();
    } catch (e) {
      reasons.push({ backend: pkg, status: 'skipped', why: `installed but failed to load: ${firstLine(e)}` });
      continue;
    }
    const usingGpu = (tf.backend() as { isUsingGpuDevice?: boolean }).isUsingGpuDevice === true;
    if (pkg === GPU_PKG && !usingGpu) {
      reasons.push({
        backend: pkg,
        status: 'active',
        why: 'loaded, but TensorFlow found no usable GPU (needs CUDA 11.2 + cuDNN 8.1), so libtensorflow runs on the CPU',
      });
    } else {
      reasons.push({ backend: pkg, status: 'active', why: usingGpu ? 'loaded; TensorFlow uses a GPU device' : 'loaded; libtensorflow on the CPU' });
    }
    // tfjs-node-gpu and tfjs-node register the same `tensorflow` backend; once one loads, the other is moot.
    if (pkg === GPU_PKG) reasons.push({ backend: NODE_PKG, status: 'skipped', why: `not needed: ${GPU_PKG} is active` });
    return usingGpu ? 'tensorflow-gpu' : 'tensorflow';
  }
  return undefined;
}

/** For explicit requests: lists the native packages as available or skipped without loading them. */
function noteAvailable(reasons: BackendReason[], loader: NativeLoader, pkgs: string[]): void {
  for (const pkg of pkgs) {
    if (loader.isInstalled(pkg)) reasons.push({ backend: pkg, status: 'available', why: 'installed, not requested' });
    else reasons.push({ backend: pkg, status: 'skipped', why: NOT_INSTALLED_WHY[pkg]! });
  }
}

type WasmResult = { ok: true; simd: boolean; threads: number; added_kernels: string[]; replaced_kernels: string[]; matmul_library: 'onnxruntime' | 'xnnpack' } | { ok: false; why: string };

function wasmWhy(w: { simd: boolean; threads: number }): string {
  const simd = w.simd ? 'SIMD' : 'no SIMD (the plain build: expect several times slower matmul)';
  return `${simd}, ${w.threads} thread${w.threads === 1 ? '' : 's'} (Node runs the wasm backend single-threaded)`;
}

let wasmPathsSet = false;

async function tryWasm(): Promise<WasmResult> {
  let folder: string;
  try {
    folder = dirname(requireHere.resolve(WASM_PKG));
  } catch (e) {
    return { ok: false, why: `not installed: ${firstLine(e)}` };
  }
  const simd = await tf.env().getAsync('WASM_HAS_SIMD_SUPPORT') as boolean;
  const binary = simd ? 'tfjs-backend-wasm-simd.wasm' : 'tfjs-backend-wasm.wasm';
  if (!existsSync(join(folder, binary))) return { ok: false, why: `${join(folder, binary)} is missing` };
  if (!wasmPathsSet) {
    // Set once, before the first initialisation; TF.js refuses new paths after a failed start.
    setWasmPaths(`${folder}/`);
    wasmPathsSet = true;
  }
  const kernels = registerWasmKernels();
  // Transposed matmuls (every matmul gradient) and transposes run 10× faster in TypeScript than as shipped.
  kernels.replaced.push(...registerFastWasmKernels());
  // One kernel each for layerNorm, the masked neighbour sum, dropout and GAT attention (and their gradients).
  kernels.added.push(...registerFusedKernels());
  try {
    if (!(await tf.setBackend('wasm'))) return { ok: false, why: 'initialisation failed (TF.js returned false from setBackend)' };
    probeOp();
  } catch (e) {
    return { ok: false, why: `initialisation failed: ${firstLine(e)}` };
  }
  return { ok: true, simd, threads: getThreadsCount(), added_kernels: kernels.added, replaced_kernels: kernels.replaced, matmul_library: matMulLibrary() };
}

const cpuWarning =
  'the TF.js cpu backend is active: it is ~30× slower than wasm (≈0.85 vs ≈29 GFLOP/s matmul); use it for debugging only';

/** Activates cpu; returns the fused kernels registered for it (`BackendInfo.added_kernels`). */
async function activateCpu(reasons: BackendReason[], why: string): Promise<string[]> {
  cpuBackend(); // initialises it and silences its "install tfjs-node" banner
  const added = registerFusedKernels();
  if (!(await tf.setBackend('cpu'))) throw new Error('the TF.js cpu backend did not initialise');
  reasons.push({ backend: 'cpu', status: 'active', why: `${why}; ~30× slower than wasm` });
  warn(cpuWarning);
  return added;
}

/** Runs one tiny op so a backend that registers but cannot compute is caught here, not mid-training. */
function probeOp(): void {
  const v = tf.tidy(() => tf.matMul(tf.ones([2, 2]), tf.ones([2, 2])).dataSync()[0]);
  if (v !== 2) throw new Error(`a 2×2 matmul returned ${v} instead of 2`);
}

function firstLine(e: unknown): string {
  const msg = e instanceof Error ? e.message : String(e);
  return msg.split('\n')[0]!.trim();
}

/**
 * Copies a float32 tensor's values into `out` from `offset`. On wasm they are read through a view of the
 * heap: `dataSync` would first copy them into a new array (a fresh 256 KB for every sampled batch of the
 * embedding workers, pages the kernel maps one by one).
 */
export function copyOut(t: tf.Tensor, out: Float32Array, offset: number): void {
  if (t.dtype !== 'float32') throw new Error(`copyOut: a ${t.dtype} tensor`);
  const backend = tf.backend();
  const values = tf.getBackend() === 'wasm' ? ((backend as BackendWasm).typedArrayFromHeap(t) as Float32Array) : (t.dataSync() as Float32Array);
  out.set(values, offset);
}
