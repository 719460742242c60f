import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import type { ColumnMetaData } from 'hyparquet';

/** A chunk of the span to probe: [start, end) relative to the span, and its column's metadata. */
export interface TextProbeChunk {
  start: number;
  end: number;
  meta: ColumnMetaData;
}

/**
 * What a worker is asked, per row group: may any of its chunks of `span` hold `needle`
 * (UTF-8, lower-case)?
 */
export interface TextProbeRequest {
  id: number;
  span: ArrayBuffer;
  groups: TextProbeChunk[][];
  needle: Uint8Array;
}

export type TextProbeResponse = { id: number; mayMatch: boolean[] } | { id: number; error: string };

/** Options of {@link TextProbePool}. */
export interface TextProbePoolOptions {
  /** Worker threads at most (default: the machine's parallelism, at most 4). */
  threadsMax?: number;
  /** A worker idle this long exits (default 30 s); the next probe starts a new one. */
  idleMs?: number;
}

interface PendingProbe {
  resolve: (mayMatch: boolean[]) => void;
  reject: (err: Error) => void;
}

interface PoolWorker {
  worker: Worker;
  pending: Map<number, PendingProbe>;
  idleTimer: NodeJS.Timeout | undefined;
}

/**
 * The worker file next to this module. Under the test runner this module runs from `src/*.ts`,
 * which a worker thread cannot load; the built sibling in `dist/` is the same code.
 */
function workerUrl(): URL {
  const here = import.meta.url;
  return here.endsWith('.ts') ? new URL('../dist/text-probe-worker.js', here) : new URL('./text-probe-worker.js', here);
}

/**
 * Worker threads for the free-text prefilter, so a scan searches on more than one core (the
 * prefilter is CPU work: decompression, folding and byte search; the reader's thread keeps the
 * I/O). Workers start on demand, take probes round robin by load, and exit when idle, so an
 * idle pool holds no thread; they are unref'd, so a pool never keeps a process alive.
 * `close()` terminates them and fails what is still pending; the pool may be used again after.
 */
export class TextProbePool {
  readonly threadsMax: number;
  readonly idleMs: number;
  readonly #workers: PoolWorker[] = [];
  #nextId = 1;

  constructor(options: TextProbePoolOptions = {}) {
    this.threadsMax = options.threadsMax ?? Math.min(4, availableParallelism());
    this.idleMs = options.idleMs ?? 30_000;
    if (!Number.isSafeInteger(this.threadsMax) || this.threadsMax < 1) throw new TypeError(`threadsMax must be a positive integer, got ${this.threadsMax}`);
    if (!Number.isFinite(this.idleMs) || this.idleMs < 0) throw new TypeError(`idleMs must be a non-negative number, got ${this.idleMs}`);
  }

  /** Worker threads running now. */
  get threads(): number {
    return this.#workers.length;
  }

  /**
   * Runs the probe of each group's chunks in a worker, answering per group; `span` is copied to
   * it (the caller's buffer stays usable).
   */
  probe(span: Uint8Array, groups: TextProbeChunk[][], needle: Uint8Array): Promise<boolean[]> {
    const poolWorker = this.#pick();
    const id = this.#nextId++;
    const request: TextProbeRequest = { id, span: span.slice().buffer, groups, needle };
    return new Promise<boolean[]>((resolve, reject) => {
      poolWorker.pending.set(id, { resolve, reject });
      if (poolWorker.idleTimer !== undefined) clearTimeout(poolWorker.idleTimer);
      poolWorker.idleTimer = undefined;
      poolWorker.worker.postMessage(request, [request.span]);
    });
  }

  /** Terminates every worker; probes still pending fail. */
  async close(): Promise<void> {
    const workers = this.#workers.splice(0);
    await Promise.all(workers.map((w) => this.#stop(w, new Error('text probe pool closed'))));
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  /** The least loaded worker, or a new one while below the maximum. */
  #pick(): PoolWorker {
    const idle = this.#workers.find((w) => w.pending.size === 0);
    if (idle) return idle;
    if (this.#workers.length < this.threadsMax) return this.#start();
    return this.#workers.reduce((a, b) => (b.pending.size < a.pending.size ? b : a));
  }

  #start(): PoolWorker {
    const worker = new Worker(workerUrl());
    worker.unref();
    const poolWorker: PoolWorker = { worker, pending: new Map(), idleTimer: undefined };
    worker.on('message', (response: TextProbeResponse) => {
      const pending = poolWorker.pending.get(response.id);
      if (!pending) return;
      poolWorker.pending.delete(response.id);
      if ('error' in response) pending.reject(new Error(`text probe failed: ${response.error}`));
      else pending.resolve(response.mayMatch);
      if (poolWorker.pending.size === 0) this.#armIdle(poolWorker);
    });
    // A worker that dies fails its probes and leaves the pool; the next probe starts another.
    const fail = (err: Error) => {
      this.#forget(poolWorker);
      for (const pending of poolWorker.pending.values()) pending.reject(err);
      poolWorker.pending.clear();
    };
    worker.on('error', fail);
    worker.on('exit', (code) => fail(new Error(`text probe worker exited (code ${code})`)));
    this.#workers.push(poolWorker);
    return poolWorker;
  }

  #armIdle(poolWorker: PoolWorker): void {
    poolWorker.idleTimer = setTimeout(() => {
      this.#forget(poolWorker);
      void this.#stop(poolWorker, new Error('text probe worker idle'));
    }, this.idleMs);
    poolWorker.idleTimer.unref();
  }

  #forget(poolWorker: PoolWorker): void {
    const at = this.#workers.indexOf(poolWorker);
    if (at !== -1) this.#workers.splice(at, 1);
  }

  async #stop(poolWorker: PoolWorker, reason: Error): Promise<void> {
    if (poolWorker.idleTimer !== undefined) clearTimeout(poolWorker.idleTimer);
    poolWorker.idleTimer = undefined;
    for (const pending of poolWorker.pending.values()) pending.reject(reason);
    poolWorker.pending.clear();
    await poolWorker.worker.terminate();
  }
}
