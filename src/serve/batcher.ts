/**
 * Triton-style dynamic batching for one model version: requests that arrive close together are merged
 * into one onnxruntime run and each gets its own rows of the outputs back.
 *
 * When a batch is formed (an instance is free and the queue is not empty), the batcher takes queued
 * requests in arrival order whose `batchKey` matches the oldest one's, up to `max_batch_size` rows
 * (others wait their turn, in order). It runs the batch at once when it is full, when its size is one
 * of `preferred_batch_size`, when the oldest request has waited `max_queue_delay_microseconds`, or when
 * the model is draining; otherwise it sleeps until the oldest request's delay runs out. Batches are
 * formed in a `setImmediate` after a request arrives, so with a delay of 0 every request parsed in the
 * same event-loop turn still shares the batch. Timers have millisecond resolution in Node, so a delay
 * below 1 ms waits about 1 ms.
 *
 * With `default_queue_policy { max_queue_size }` a request that finds the queue full is refused at once
 * with 503, as Triton does, rather than waiting ever longer behind an overload.
 *
 * Variable dimensions are padded with each input's pad value (see `merge.ts`). If a merged run fails,
 * each request is run again alone, so that one bad request (one the model itself rejects) cannot fail
 * the others in its batch.
 */
import type { HostTensor } from './datatypes.js';
import type { InferRequest } from './decode.js';
import { HttpError } from './http_error.js';
import { mergeTensors, sliceRows } from './merge.js';
import type { ServedModelSpec } from './model_spec.js';

export type RunBatch = (feeds: Map<string, HostTensor>, outputs: readonly string[]) => Promise<Map<string, HostTensor>>;

/** Timings the batcher reports, in seconds. */
export interface BatcherObserver {
  /** Per request: from `submit` to the start of its batch. */
  queue?(seconds: number): void;
  /** Per batch: merging the requests' tensors. */
  merge?(seconds: number): void;
  /** Per batch: the `run` call (onnxruntime, plus the worker round trip when sessions live in a worker). */
  compute?(seconds: number): void;
  /** Per batch: cutting the outputs into the requests' rows. */
  split?(seconds: number): void;
  /** Per batch: rows in it. */
  batch?(rows: number, requests: number): void;
  /** Per successful batch, once it is split: its rows and requests, and its merge, run and split times. */
  executed?(rows: number, requests: number, inputSeconds: number, inferSeconds: number, outputSeconds: number): void;
}

export interface BatcherOptions {
  spec: ServedModelSpec;
  run: RunBatch;
  /** Batches that may run at the same time (the model's instance count). */
  instances?: number;
  observer?: BatcherObserver;
  /** Turns a failed run into the error a request gets. */
  describeError?: (e: unknown) => Error;
}

interface Item {
  req: InferRequest;
  enqueuedAt: number;
  /** `performance.now()` by which the request must be answered (Infinity: no deadline). */
  deadline: number;
  resolve: (outputs: Map<string, HostTensor>) => void;
  reject: (e: Error) => void;
}

export class DynamicBatcher {
  private readonly spec: ServedModelSpec;
  private readonly runBatch: RunBatch;
  private readonly instances: number;
  private readonly observer: BatcherObserver;
  private readonly describeError: (e: unknown) => Error;
  private readonly maxRows: number;
  private readonly delayMs: number;
  private readonly preferred: readonly number[];
  private readonly maxQueue: number;
  private readonly outputNames: string[];
  private queue: Item[] = [];
  private running = 0;
  private flushScheduled = false;
  private timer: NodeJS.Timeout | undefined;
  private timerDue = Infinity;
  private draining = false;
  /** Queued requests with a deadline (only then does a flush look for expired ones). */
  private withDeadline = 0;
  private idleWaiters: (() => void)[] = [];

  constructor(options: BatcherOptions) {
    const { spec } = options;
    this.spec = spec;
    this.runBatch = options.run;
    this.instances = Math.max(1, options.instances ?? 1);
    this.observer = options.observer ?? {};
    this.describeError = options.describeError ?? ((e) => (e instanceof Error ? e : new Error(String(e))));
    // Without dynamic batching (or without a batch dimension) every request runs on its own.
    const batching = spec.dynamicBatching !== undefined && spec.maxBatchSize > 0;
    this.maxRows = batching ? spec.maxBatchSize : 0;
    this.delayMs = batching ? spec.dynamicBatching!.maxQueueDelayUs / 1000 : 0;
    this.preferred = batching ? spec.dynamicBatching!.preferredBatchSizes : [];
    this.maxQueue = spec.dynamicBatching?.maxQueueSize ?? 0;
    this.outputNames = spec.outputs.map((o) => o.name);
  }

  /** Requests waiting for a batch. */
  get queued(): number {
    return this.queue.length;
  }

  /**
   * Queues a request; resolves with its outputs (the requested ones, or all). A request still queued at
   * its `deadline` (a `performance.now()` time) is taken out and rejected with 504 instead of running.
   */
  submit(req: InferRequest, deadline = Infinity): Promise<Map<string, HostTensor>> {
    if (this.maxQueue > 0 && this.queue.length >= this.maxQueue) {
      return Promise.reject(new HttpError(503, `model "${this.spec.name}": the request queue is full (max_queue_size ${this.maxQueue}); try again later`));
    }
    return new Promise((resolve, reject) => {
      this.queue.push({ req, enqueuedAt: performance.now(), deadline, resolve, reject });
      if (deadline !== Infinity) this.withDeadline++;
      this.scheduleFlush();
    });
  }

  /** Runs everything queued without waiting for the queue delay; resolves when nothing is queued or running. */
  drain(): Promise<void> {
    this.draining = true;
    this.scheduleFlush();
    if (this.queue.length === 0 && this.running === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  private scheduleFlush(): void {
    if (this.flushScheduled) return;
    this.flushScheduled = true;
    setImmediate(() => {
      this.flushScheduled = false;
      this.flush();
    });
  }

  private flush(): void {
    if (this.withDeadline > 0) this.expire(performance.now());
    while (this.running < this.instances && this.queue.length > 0) {
      const picked = this.pick();
      if (!picked) break;
      void this.execute(picked);
    }
    if (this.queue.length === 0 && this.running === 0) {
      for (const w of this.idleWaiters.splice(0)) w();
    }
  }

  /**
   * Takes the next batch out of the queue, or returns undefined (after arming the timer) when it should
   * wait for more requests.
   */
  private pick(): Item[] | undefined {
    const head = this.queue[0]!;
    if (this.maxRows === 0) {
      this.queue.shift();
      if (head.deadline !== Infinity) this.withDeadline--;
      return [head];
    }
    const key = head.req.batchKey;
    const chosen: number[] = [];
    let rows = 0;
    // Prefix sums at each chosen request, to cut at a preferred size.
    const cuts: number[] = [];
    const scanLimit = Math.min(this.queue.length, 4 * this.maxRows + 16);
    for (let i = 0; i < scanLimit && rows < this.maxRows; i++) {
      const it = this.queue[i]!;
      if (it.req.batchKey !== key || rows + it.req.batch > this.maxRows) continue;
      chosen.push(i);
      rows += it.req.batch;
      cuts.push(rows);
    }
    let take = chosen.length;
    const waited = performance.now() - head.enqueuedAt;
    const due = this.draining || rows >= this.maxRows || waited >= this.delayMs;
    if (!due) {
      // A preferred size reachable exactly by a prefix of the chosen requests runs now (the largest).
      let cut = -1;
      for (let c = cuts.length - 1; c >= 0 && cut < 0; c--) if (this.preferred.includes(cuts[c]!)) cut = c;
      if (cut < 0) {
        this.armTimer(head.enqueuedAt + this.delayMs);
        return undefined;
      }
      take = cut + 1;
    }
    const items = new Array<Item>(take);
    const taken = new Set<number>();
    for (let c = 0; c < take; c++) {
      items[c] = this.queue[chosen[c]!]!;
      taken.add(chosen[c]!);
    }
    this.queue = taken.size === this.queue.length ? [] : this.queue.filter((_, i) => !taken.has(i));
    if (this.withDeadline > 0) for (const it of items) if (it.deadline !== Infinity) this.withDeadline--;
    return items;
  }

  /** Rejects the queued requests whose deadline has passed: they would be answered too late anyway. */
  private expire(now: number): void {
    const kept: Item[] = [];
    for (const it of this.queue) {
      if (it.deadline > now) {
        kept.push(it);
        continue;
      }
      it.reject(new HttpError(504, `model "${this.spec.name}": the request's deadline passed after ${(now - it.enqueuedAt).toFixed(1)} ms in the queue, before a batch could run it`, undefined, 'REJECTED'));
    }
    if (kept.length !== this.queue.length) this.queue = kept;
    this.withDeadline = kept.reduce((n, it) => n + (it.deadline !== Infinity ? 1 : 0), 0);
  }

  private armTimer(due: number): void {
    if (this.timer && this.timerDue <= due) return;
    if (this.timer) clearTimeout(this.timer);
    this.timerDue = due;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.timerDue = Infinity;
      this.flush();
    }, Math.max(0, due - performance.now()));
  }

  private async execute(items: Item[], alone = false): Promise<void> {
    this.running++;
    const t0 = performance.now();
    const obs = this.observer;
    if (!alone && obs.queue) for (const it of items) obs.queue((t0 - it.enqueuedAt) / 1000);
    try {
      const feeds = new Map<string, HostTensor>();
      const first = items[0]!.req;
      for (const [name] of first.inputs) {
        feeds.set(name, items.length === 1 ? first.inputs.get(name)! : mergeTensors(items.map((it) => it.req.inputs.get(name)!), this.spec.inputByName.get(name)!.pad));
      }
      const t1 = performance.now();
      obs.merge?.((t1 - t0) / 1000);
      let rows = 0;
      for (const it of items) rows += it.req.batch;
      obs.batch?.(rows, items.length);
      const outputs = await this.runBatch(feeds, this.outputNames);
      const t2 = performance.now();
      obs.compute?.((t2 - t1) / 1000);
      this.resolveItems(items, outputs, rows);
      const t3 = performance.now();
      obs.split?.((t3 - t2) / 1000);
      obs.executed?.(rows, items.length, (t1 - t0) / 1000, (t2 - t1) / 1000, (t3 - t2) / 1000);
    } catch (e) {
      if (items.length > 1) {
        // One request may have made the whole batch fail: give each its own run.
        for (const it of items) await this.execute([it], true);
      } else {
        items[0]!.reject(this.describeError(e));
      }
    } finally {
      this.running--;
      if (this.queue.length > 0 || this.idleWaiters.length > 0) this.scheduleFlush();
    }
  }

  private resolveItems(items: Item[], outputs: Map<string, HostTensor>, rows: number): void {
    const batching = this.spec.maxBatchSize > 0;
    for (const [name, t] of outputs) {
      if (batching && t.shape[0] !== rows) {
        throw new HttpError(500, `model "${this.spec.name}" returned output "${name}" with ${t.shape[0]} rows for a batch of ${rows}`);
      }
    }
    let row = 0;
    for (const it of items) {
      const want = it.req.outputs ?? this.outputNames;
      const mine = new Map<string, HostTensor>();
      for (const name of want) {
        const t = outputs.get(name)!;
        mine.set(name, batching ? sliceRows(t, row, it.req.batch) : t);
      }
      row += it.req.batch;
      it.resolve(mine);
    }
  }
}
