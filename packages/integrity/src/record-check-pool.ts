import { Worker } from 'node:worker_threads';
import { AuditError, AuditErrorCode } from '@auditlake/model';
import type { CheckedBatch } from './checked-batch.js';
import type { VerifyRecord } from './checked-record.js';

/** A job the default check worker serves: records as values, or as the JSON lines a node pages its log in. */
export type IntegrityCheckJob = { records: readonly VerifyRecord[] } | { jsonLines: string };

/** What a check worker is sent: a job its reader turns into records. */
export interface RecordCheckRequest {
  id: number;
  job: unknown;
}

/** A check worker's answer: the checked records, or the failure (an AuditError keeps its code). */
export type RecordCheckResponse = { id: number; batch: CheckedBatch } | { id: number; error: string; code?: string };

export interface RecordCheckPoolOptions {
  /** Worker threads at most (at least 1). */
  threads: number;
  /**
   * The worker module (default: this package's, which checks records given as values or as
   * JSON lines). Another package's worker serves other jobs (a Parquet file) through
   * {@link serveRecordChecks}.
   */
  workerUrl?: URL;
}

interface PendingCheck {
  resolve: (batch: CheckedBatch) => void;
  reject: (err: Error) => void;
}

interface PoolWorker {
  worker: Worker;
  pending: Map<number, PendingCheck>;
}

/**
 * The worker next to this module. Under the test runner this module runs from `src/*.ts`, which
 * a worker thread cannot load; the built sibling in `dist/` is the same code.
 */
function defaultWorkerUrl(): URL {
  const here = import.meta.url;
  return here.endsWith('.ts') ? new URL('../dist/record-check-worker.js', here) : new URL('./record-check-worker.js', here);
}

function verifierFailed(message: string, cause?: unknown): AuditError {
  return new AuditError(AuditErrorCode.VERIFIER_FAILED, message, cause === undefined ? {} : { cause });
}

/**
 * Recomputes record hashes on worker threads ({@link checkRecord} over each job's records),
 * so verification uses every core: each job comes back as a {@link CheckedBatch} in seq order,
 * its chain links within the batch already tested. Workers start on demand; a worker holds the
 * process open only while it has a job. A job whose reader or records fail is refused with
 * that error (an AuditError keeps its code); a worker that dies fails its jobs with
 * AUDIT_VERIFIER_FAILED and leaves the pool (the next job starts another). `close()` fails what
 * is pending, stops every worker and refuses later jobs; it is idempotent.
 */
export class RecordCheckPool {
  readonly threads: number;
  readonly #workerUrl: URL;
  readonly #workers: PoolWorker[] = [];
  #nextId = 1;
  #closed = false;

  constructor(options: RecordCheckPoolOptions) {
    if (!Number.isSafeInteger(options.threads) || options.threads < 1) throw new TypeError(`threads must be a positive integer, got ${options.threads}`);
    this.threads = options.threads;
    this.#workerUrl = options.workerUrl ?? defaultWorkerUrl();
  }

  /** Worker threads running now. */
  get running(): number {
    return this.#workers.length;
  }

  /** Checks the records `job` names; `transfer` lists buffers the job hands over (no copy). */
  check(job: unknown, transfer: readonly ArrayBuffer[] = []): Promise<CheckedBatch> {
    if (this.#closed) return Promise.reject(verifierFailed('the verifier pool is closed'));
    const poolWorker = this.#pick();
    const id = this.#nextId++;
    return new Promise<CheckedBatch>((resolve, reject) => {
      poolWorker.pending.set(id, { resolve, reject });
      poolWorker.worker.ref();
      try {
        const request: RecordCheckRequest = { id, job };
        poolWorker.worker.postMessage(request, [...transfer]);
      } catch (err) {
        poolWorker.pending.delete(id);
        if (poolWorker.pending.size === 0) poolWorker.worker.unref();
        reject(verifierFailed(`a verifier worker could not be given its job: ${err instanceof Error ? err.message : String(err)}`, err));
      }
    });
  }

  /** Stops every worker; pending jobs fail; later jobs are refused. Idempotent. */
  async close(): Promise<void> {
    this.#closed = true;
    const workers = this.#workers.splice(0);
    await Promise.all(workers.map((w) => this.#stop(w, verifierFailed('the verifier pool was closed with this job pending'))));
  }

  /** Test hook: terminates a running worker as a crash would. */
  async crashWorkerForTest(index = 0): Promise<void> {
    await this.#workers[index]?.worker.terminate();
  }

  /** An idle worker, or a new one while below the maximum, else the least loaded. */
  #pick(): PoolWorker {
    const idle = this.#workers.find((w) => w.pending.size === 0);
    if (idle) return idle;
    if (this.#workers.length < this.threads) return this.#start();
    return this.#workers.reduce((a, b) => (b.pending.size < a.pending.size ? b : a));
  }

  #start(): PoolWorker {
    const worker = new Worker(this.#workerUrl);
    worker.unref();
    const poolWorker: PoolWorker = { worker, pending: new Map() };
    worker.on('message', (response: RecordCheckResponse) => {
      const pending = poolWorker.pending.get(response.id);
      if (!pending) return;
      poolWorker.pending.delete(response.id);
      if (poolWorker.pending.size === 0) worker.unref();
      if ('error' in response) {
        const known = Object.values(AuditErrorCode).find((code) => code === response.code);
        pending.reject(known ? new AuditError(known, response.error) : verifierFailed(`a verifier worker failed: ${response.error}`));
      } else pending.resolve(response.batch);
    });
    // A worker that dies fails its jobs and leaves the pool; the next job starts another.
    const fail = (err: Error) => {
      this.#forget(poolWorker);
      for (const pending of poolWorker.pending.values()) pending.reject(err);
      poolWorker.pending.clear();
    };
    worker.on('error', (err) => fail(verifierFailed(`a verifier worker failed: ${err.message}`, err)));
    worker.on('exit', (code) => fail(verifierFailed(`a verifier worker exited (code ${code}) with a job pending; the job was not done`)));
    this.#workers.push(poolWorker);
    return poolWorker;
  }

  #forget(poolWorker: PoolWorker): void {
    const at = this.#workers.indexOf(poolWorker);
    if (at !== -1) this.#workers.splice(at, 1);
  }

  async #stop(poolWorker: PoolWorker, reason: Error): Promise<void> {
    for (const pending of poolWorker.pending.values()) pending.reject(reason);
    poolWorker.pending.clear();
    await poolWorker.worker.terminate();
  }
}
