/**
 * A synthetic model repository shaped like `gnnctl export`'s, for the serve tests and benchmark: a
 * distilled-model graph built with the export stage's ONNX helpers, and the `config.pbtxt` the export
 * contract describes (pad values included).
 *
 * The model: `transactions.customer_id` (BYTES or INT64) → LabelEncoder + Gather into an embedding table
 * (unknown keys get the mean row); the RTI sequence (`…:price`, `…:t_dat`) → time since the anchor,
 * masked where `t_dat` is the INT64-min pad value → masked mean and masked attention pooling; the fact
 * row's price; a 3-layer MLP with a sigmoid head → `probability`.
 */
import { join } from 'node:path';
import { mkdirSync, renameSync, rmSync } from 'node:fs';
import {
  OnnxGraphBuilder,
  concat,
  dense,
  keyedEmbedding,
  maskedAttentionPool,
  maskedMeanPool,
  relativeTime,
  squeeze,
  INT64_MIN,
} from '../artifacts/onnx/index.js';
import { writeModelConfig, type TritonModelConfig } from '../artifacts/triton/pbtxt.js';
import { tempSibling, writeFileAtomic } from '../core/atomic.js';
import { Rng } from '../core/rng.js';

export const RTI_PATH = 'transactions.customer_id->customers.customer_id->transactions.customer_id';
export const KEY_INPUT = 'transactions.customer_id';

export interface SyntheticModelOptions {
  /** Rows of the embedding table (known keys). Default 1000. */
  rows?: number;
  /** Embedding dimension. Default 16. */
  dim?: number;
  /** Hidden units of the MLP's two hidden layers. Default 32. */
  hidden?: number;
  /** Key type: BYTES keys `c000000…`, or INT64 keys `7·i + 3`. Default `string`. */
  keyType?: 'string' | 'int64';
  /** Seed of the weights (a different seed gives a different model, e.g. a new version). Default 1. */
  seed?: number;
  /** Name of the output. Default `probability`. */
  outputName?: string;
  /**
   * Extra numeric RTI columns (`<path>:f1` … `:fK`, FP32 `[batch, seq, 1]`), pooled with the price: wider
   * requests, like the several columns per interaction of Kumo's benchmark payloads. Default 0.
   */
  rtiColumns?: number;
}

export interface SyntheticRepositoryOptions extends SyntheticModelOptions {
  /** Model name (folder). Default `online-model`. */
  name?: string;
  /** Version folder. Default 1. */
  version?: number;
  maxBatchSize?: number;
  /** `max_queue_delay_microseconds`; undefined leaves `dynamic_batching` out. Default 500. */
  maxQueueDelayUs?: number | null;
  preferredBatchSizes?: number[];
  /** Extra config fields (override the generated ones). */
  config?: Partial<TritonModelConfig>;
}

/** The key of row `i` of the synthetic embedding table. */
export function syntheticKey(i: number, keyType: 'string' | 'int64' = 'string'): string | bigint {
  return keyType === 'string' ? `c${String(i).padStart(7, '0')}` : BigInt(i * 7 + 3);
}

/** Builds the model and returns its serialized bytes. */
export function buildSyntheticModel(options: SyntheticModelOptions = {}): Uint8Array {
  const rows = options.rows ?? 1000;
  const dim = options.dim ?? 16;
  const hidden = options.hidden ?? 32;
  const keyType = options.keyType ?? 'string';
  const rng = new Rng(options.seed ?? 1);
  const rand = (): number => rng.next();
  const g = new OnnxGraphBuilder();
  const anchor = g.addInput('anchor_time', 'INT64', ['batch', 1]);
  const key = g.addInput(KEY_INPUT, keyType === 'string' ? 'STRING' : 'INT64', ['batch', 1]);
  const price = g.addInput('transactions.price', 'FLOAT', ['batch', 1]);
  const rtiPrice = g.addInput(`${RTI_PATH}:price`, 'FLOAT', ['batch', 'seq', 1]);
  const rtiTime = g.addInput(`${RTI_PATH}:t_dat`, 'INT64', ['batch', 'seq', 1]);
  const extra = Array.from({ length: options.rtiColumns ?? 0 }, (_, k) => g.addInput(`${RTI_PATH}:f${k + 1}`, 'FLOAT', ['batch', 'seq', 1]));

  const vocab = keyType === 'string' ? Array.from({ length: rows }, (_, i) => syntheticKey(i, 'string') as string) : BigInt64Array.from({ length: rows }, (_, i) => syntheticKey(i, 'int64') as bigint);
  const table = { data: floats(rows * dim, rand, 0.5), rows, dim, name: 'customers' };
  const emb = squeeze(g, keyedEmbedding(g, key, { vocab, table, fallback: 'mean' }), [1]);
  const rel = relativeTime(g, rtiTime, anchor, { tRank: 3 });
  const seqFeatures = concat(g, [rtiPrice, rel.value, ...extra], 2);
  const seqDim = 2 + extra.length;
  const mask = squeeze(g, rel.mask, [2]);
  const mean = maskedMeanPool(g, seqFeatures, mask);
  const attention = maskedAttentionPool(g, seqFeatures, mask, { weight: floats(seqDim, rand, 1) });
  const x = concat(g, [price, emb, mean, attention], 1);
  const inDim = 1 + dim + 2 * seqDim;
  let h = dense(g, x, { kernel: floats(inDim * hidden, rand, 0.3), bias: floats(hidden, rand, 0.1), inputDim: inDim, units: hidden, activation: 'relu', name: 'mlp1' });
  h = dense(g, h, { kernel: floats(hidden * hidden, rand, 0.3), bias: floats(hidden, rand, 0.1), inputDim: hidden, units: hidden, activation: 'relu', name: 'mlp2' });
  const y = dense(g, h, { kernel: floats(hidden, rand, 0.3), bias: floats(1, rand, 0.1), inputDim: hidden, units: 1, activation: 'sigmoid', name: 'head' });
  g.addOutput(options.outputName ?? 'probability', 'FLOAT', ['batch', 1], { from: y });
  return g.toBytes();
}

/** The config.pbtxt contents the export contract prescribes for the synthetic model. */
export function syntheticConfig(options: SyntheticRepositoryOptions = {}): TritonModelConfig {
  const delay = options.maxQueueDelayUs === undefined ? 500 : options.maxQueueDelayUs;
  return {
    name: options.name ?? 'online-model',
    platform: 'onnxruntime_onnx',
    max_batch_size: options.maxBatchSize ?? 64,
    input: [
      { name: 'anchor_time', data_type: 'TYPE_INT64', dims: [1] },
      { name: KEY_INPUT, data_type: options.keyType === 'int64' ? 'TYPE_INT64' : 'TYPE_STRING', dims: [1] },
      { name: 'transactions.price', data_type: 'TYPE_FP32', dims: [1] },
      { name: `${RTI_PATH}:price`, data_type: 'TYPE_FP32', dims: [-1, 1] },
      { name: `${RTI_PATH}:t_dat`, data_type: 'TYPE_INT64', dims: [-1, 1] },
      ...Array.from({ length: options.rtiColumns ?? 0 }, (_, k) => ({ name: `${RTI_PATH}:f${k + 1}`, data_type: 'TYPE_FP32' as const, dims: [-1, 1] })),
    ],
    output: [{ name: options.outputName ?? 'probability', data_type: 'TYPE_FP32', dims: [1] }],
    ...(delay === null ? {} : { dynamic_batching: { max_queue_delay_microseconds: delay, ...(options.preferredBatchSizes ? { preferred_batch_size: options.preferredBatchSizes } : {}) } }),
    instance_group: [{ kind: 'KIND_CPU', count: 1 }],
    parameters: { [`pad_value:${RTI_PATH}:t_dat`]: { string_value: String(INT64_MIN) } },
    ...options.config,
  };
}

/**
 * Writes `<root>/<name>/config.pbtxt` and `<root>/<name>/<version>/model.onnx`, the version folder
 * atomically (built under a `.tmp-` name, then renamed), as the exporter does. Returns the version folder.
 */
export function writeSyntheticRepository(root: string, options: SyntheticRepositoryOptions = {}): string {
  const name = options.name ?? 'online-model';
  const modelDir = join(root, name);
  mkdirSync(modelDir, { recursive: true });
  writeFileAtomic(join(modelDir, 'config.pbtxt'), writeModelConfig(syntheticConfig(options)));
  return writeVersionFolder(modelDir, options.version ?? 1, buildSyntheticModel(options));
}

/** Writes `<modelDir>/<version>/model.onnx` atomically (a `.tmp-` folder renamed into place). */
export function writeVersionFolder(modelDir: string, version: number, model: Uint8Array): string {
  const target = join(modelDir, String(version));
  const tmp = tempSibling(target);
  try {
    mkdirSync(tmp, { recursive: true });
    writeFileAtomic(join(tmp, 'model.onnx'), model);
    renameSync(tmp, target);
  } catch (e) {
    rmSync(tmp, { recursive: true, force: true });
    throw e;
  }
  return target;
}

function floats(n: number, rand: () => number, scale: number): Float32Array {
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) out[i] = (rand() * 2 - 1) * scale;
  return out;
}
