/**
 * Feature-parallel histogram building on two cores: the calling thread builds the first half of the
 * features and one worker thread the second half, over the same shared arrays (binned columns, row
 * partition, ordered gradients, histogram slots). A node's histogram is one job of a few milliseconds to
 * a few hundred, so the threads hand jobs over through `Atomics.wait`/`notify` on a shared control block
 * instead of messages (a message round trip costs ~0.1 ms, thousands of times per model), and `fit`
 * stays synchronous. The worker runs the same `buildHistogramRange` as the serial builder, from its source.
 */
import { Worker } from 'node:worker_threads';
import { buildHistogramRange, FEATURE_SLOTS, histogramSlots, type HistogramBuilder, type HistogramInputs } from './histogram.js';

// Control block slots (Int32): job sequence number, command, row range, histogram offset, done, ready.
const SEQ = 0;
const CMD = 1;
const START = 2;
const END = 3;
const OFFSET = 4;
const DONE = 5;
const READY = 6;

const WORKER_SOURCE = (kernel: string): string => `
const { workerData } = require('node:worker_threads');
const kernel = (${kernel});
const { binned, n, partition, og, oh, hist, control, f0, f1 } = workerData;
Atomics.store(control, ${READY}, 1);
Atomics.notify(control, ${READY});
let seen = 0;
for (;;) {
  Atomics.wait(control, ${SEQ}, seen);
  seen = Atomics.load(control, ${SEQ});
  if (control[${CMD}] === 0) break;
  kernel(binned, n, partition, control[${START}], control[${END}], og, oh, hist, control[${OFFSET}], f0, f1);
  Atomics.store(control, ${DONE}, seen);
  Atomics.notify(control, ${DONE});
}
`;

/** How long the worker may take to start before fitting gives up on it (it then runs on one thread). */
const START_TIMEOUT_MS = 10_000;

export class ParallelHistogramBuilder implements HistogramBuilder {
  readonly hist: Float64Array;
  private readonly control = new Int32Array(new SharedArrayBuffer(8 * 4));
  private readonly worker: Worker;
  private readonly split: number;
  private seq = 0;

  private constructor(
    private readonly inp: HistogramInputs,
    slots: number,
  ) {
    this.hist = histogramSlots(inp.features, slots, true);
    this.split = Math.ceil(inp.features / 2);
    this.worker = new Worker(WORKER_SOURCE(buildHistogramRange.toString()), {
      eval: true,
      workerData: {
        binned: inp.binned,
        n: inp.rows,
        partition: inp.partition,
        og: inp.og,
        oh: inp.oh,
        hist: this.hist,
        control: this.control,
        f0: this.split,
        f1: inp.features,
      },
    });
    this.worker.unref();
  }

  /** A started builder, or null when the worker did not come up (the caller then builds serially). */
  static start(inp: HistogramInputs, slots: number): ParallelHistogramBuilder | null {
    for (const a of [inp.binned, inp.partition, inp.og, inp.oh]) {
      if (!(a.buffer instanceof SharedArrayBuffer)) throw new Error('parallel histograms need inputs in SharedArrayBuffers');
    }
    const b = new ParallelHistogramBuilder(inp, slots);
    if (Atomics.wait(b.control, READY, 0, START_TIMEOUT_MS) === 'timed-out' && Atomics.load(b.control, READY) === 0) {
      b.close();
      return null;
    }
    return b;
  }

  build(start: number, end: number, slot: number): void {
    const { binned, rows, features, partition, og, oh } = this.inp;
    const offset = slot * features * FEATURE_SLOTS;
    const c = this.control;
    c[CMD] = 1;
    c[START] = start;
    c[END] = end;
    c[OFFSET] = offset;
    const seq = ++this.seq;
    Atomics.store(c, SEQ, seq);
    Atomics.notify(c, SEQ);
    buildHistogramRange(binned, rows, partition, start, end, og, oh, this.hist, offset, 0, this.split);
    for (;;) {
      const done = Atomics.load(c, DONE);
      if (done === seq) break;
      Atomics.wait(c, DONE, done);
    }
  }

  close(): void {
    this.control[CMD] = 0;
    Atomics.add(this.control, SEQ, 1);
    Atomics.notify(this.control, SEQ);
    void this.worker.terminate();
  }
}
