/**
 * TensorFlow.js, loaded with `require`. Use `import { tf } from '…/core/tf.js'` where other code would write
 * `import * as tf from '@tensorflow/tfjs'`: the same object, values and types under the same name.
 *
 * Why not the ESM import: `@tensorflow/tfjs` is a CommonJS bundle that re-exports tfjs-core, -layers,
 * -converter, -data and the backends, and Node lists the named exports of a CommonJS module it imports
 * into ESM by lexing its source and every module it re-exports (~6 MB of JavaScript). That takes ~200 ms
 * of the ~400 ms the import cost, in every process and worker thread that computes (each `gnnctl`
 * command, each training, embedding and distillation worker); `require` skips it (measured on Node 20:
 * 391–457 ms against 193–199 ms). The module is the same one either way, so code that still imports it
 * as ESM (a test, a bench script) shares its engine and backends.
 */
import { createRequire } from 'node:module';
import type * as TF from '@tensorflow/tfjs';

export const tf: typeof TF = createRequire(import.meta.url)('@tensorflow/tfjs');

/** The TF.js types written as `tf.X`; add one here when code needs another. */
// eslint-disable-next-line @typescript-eslint/no-namespace
export declare namespace tf {
  export type Rank = TF.Rank;
  export type Tensor<R extends Rank = Rank> = TF.Tensor<R>;
  export type Scalar = TF.Scalar;
  export type Tensor1D = TF.Tensor1D;
  export type Tensor2D = TF.Tensor2D;
  export type Tensor3D = TF.Tensor3D;
  export type Tensor4D = TF.Tensor4D;
  export type TensorContainer = TF.TensorContainer;
  export type Variable<R extends Rank = Rank> = TF.Variable<R>;
  export type TensorInfo = TF.TensorInfo;
  export type NamedTensorMap = TF.NamedTensorMap;
  export type NamedTensorInfoMap = TF.NamedTensorInfoMap;
  export type NamedAttrMap = TF.NamedAttrMap;
  export type KernelFunc = TF.KernelFunc;
  export type KernelBackend = TF.KernelBackend;
  export type GradConfig = TF.GradConfig;
  export type Optimizer = TF.Optimizer;
}
