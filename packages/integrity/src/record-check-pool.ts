import { AuditError, AuditErrorCode } from '@auditlake/model';
import type { CheckedBatch } from './checked-batch.js';
import type { VerifyRecord } from './checked-record.js';
import { WorkerPool } from '@auditlake/worker-pool';

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
  readonly #pool: WorkerPool<RecordCheckResponse, CheckedBatch>;

  constructor(options: RecordCheckPoolOptions) {
    if (!Number.isSafeInteger(options.threads) || options.threads < 1) throw new TypeError(`threads must be a positive integer, got ${options.threads}`);
    this.threads = options.threads;
    this.#pool = new WorkerPool<RecordCheckResponse, CheckedBatch>({
      workerUrl: options.workerUrl ?? defaultWorkerUrl(),
      threadsMax: options.threads,
      refWhilePending: true,
      outcome: (response) => {
        if (!('error' in response)) return { value: response.batch };
        const known = Object.values(AuditErrorCode).find((code) => code === response.code);
        return { error: known ? new AuditError(known, response.error) : verifierFailed(`a verifier worker failed: ${response.error}`) };
      },
      errors: {
        closed: () => verifierFailed('the verifier pool is closed'),
        closedWhilePending: () => verifierFailed('the verifier pool was closed with this job pending'),
        crashed: (err) => verifierFailed(`a verifier worker failed: ${err.message}`, err),
        exited: (code) => verifierFailed(`a verifier worker exited (code ${code}) with a job pending; the job was not done`),
        notSent: (err) => verifierFailed(`a verifier worker could not be given its job: ${err instanceof Error ? err.message : String(err)}`, err),
      },
    });
  }

  /** Worker threads running now. */
  get running(): number {
    return this.#pool.running;
  }

  /** Checks the records `job` names; `transfer` lists buffers the job hands over (no copy). */
  check(job: unknown, transfer: readonly ArrayBuffer[] = []): Promise<CheckedBatch> {
    const checking = this.#pool.begin(undefined);
    const request: RecordCheckRequest = { id: checking.id, job };
    checking.post(request, transfer);
    return checking.answer;
  }

  /** Stops every worker; pending jobs fail; later jobs are refused. Idempotent. */
  async close(): Promise<void> {
    await this.#pool.close();
  }

  /** Test hook: terminates a running worker as a crash would. */
  async crashWorkerForTest(index = 0): Promise<void> {
    await this.#pool.crashWorkerForTest(index);
  }
}
