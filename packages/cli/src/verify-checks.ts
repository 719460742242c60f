import { bytesSource, readWholeAuditColumns } from '@auditlake/format';
import { checkJobRecords, parseRecordLines, RecordCheckPool, RecordHasher, type CheckedBatch, type JobRecords } from '@auditlake/integrity';

/** What `auditlake verify` has checked: a tier data file (its whole bytes), or a page of a node's log. */
export type VerifyCheckJob = { parquet: ArrayBuffer } | { jsonLines: string };

/**
 * The records a job holds: a data file's rows as columns (a row without a seq was written
 * before the chain and is only counted; a row without a term reads as term 0) with each
 * column's summary, or a page's lines.
 */
export async function readVerifyJob(job: VerifyCheckJob): Promise<JobRecords> {
  if ('jsonLines' in job) return { records: parseRecordLines(job.jsonLines) };
  // Hashed from the decoded columns: an object per row, taken apart again to hash it, was
  // measured as a large share of verify's time.
  const { summaries, ...columns } = await readWholeAuditColumns(bytesSource(new Uint8Array(job.parquet)));
  const term = columns.term.map((value) => value ?? 0);
  return { columns: { ...columns, count: columns.rowCount, term }, columnSummaries: summaries };
}

/**
 * The worker module. Under the test runner this module runs from `src/*.ts`, which a worker
 * thread cannot load; the built sibling in `dist/` is the same code.
 */
function workerUrl(): URL {
  const here = import.meta.url;
  return here.endsWith('.ts') ? new URL('../dist/verify-check-worker.js', here) : new URL('./verify-check-worker.js', here);
}

/**
 * Where verify's jobs are decoded and hashed: on `threads` worker threads, or (0) on this
 * thread. Either way a job comes back as the same {@link CheckedBatch}.
 */
export class VerifyChecks {
  readonly threads: number;
  readonly #pool: RecordCheckPool | undefined;
  readonly #hasher = new RecordHasher();

  constructor(threads: number) {
    if (!Number.isSafeInteger(threads) || threads < 0) throw new TypeError(`threads must be a non-negative integer, got ${threads}`);
    this.threads = threads;
    this.#pool = threads === 0 ? undefined : new RecordCheckPool({ threads, workerUrl: workerUrl() });
  }

  /** Checks a job; a Parquet job's buffer is handed over (unusable here afterwards). */
  async check(job: VerifyCheckJob): Promise<CheckedBatch> {
    if (this.#pool === undefined) {
      return checkJobRecords(await readVerifyJob(job), this.#hasher);
    }
    return this.#pool.check(job, 'parquet' in job ? [job.parquet] : []);
  }

  /** Stops the worker threads (pending jobs fail). Idempotent. */
  async close(): Promise<void> {
    await this.#pool?.close();
  }
}
