import { ChainVerifier, type ChainVerifierOptions, type VerifyReport } from './chain-verifier.js';
import { CheckedBatchReader, type CheckedBatch } from './checked-batch.js';
import type { CheckedRecord, VerifyRecord } from './checked-record.js';
import type { RecordCheckPool } from './record-check-pool.js';

export interface ParallelVerifyOptions {
  pool: RecordCheckPool;
  /** Records per job (a range of consecutive records). */
  rangeSize: number;
  /** Jobs given to the pool ahead of the fold, at most (default twice the pool's threads). */
  jobsAhead?: number;
}

/**
 * {@link ChainVerifier} over records in seq order, their hashes recomputed on the pool's threads
 * range by range and folded in order here: the same report as adding them one by one.
 */
export async function verifyInParallel(records: readonly VerifyRecord[], options: ChainVerifierOptions, parallel: ParallelVerifyOptions): Promise<VerifyReport> {
  const verifier = new ChainVerifier(options);
  for await (const record of checkInParallel(records, parallel)) verifier.addChecked(record);
  return verifier.finish();
}

/** The records, checked on the pool's threads, in their order. */
export async function* checkInParallel(records: readonly VerifyRecord[], parallel: ParallelVerifyOptions): AsyncGenerator<CheckedRecord> {
  const { pool, rangeSize } = parallel;
  if (!Number.isSafeInteger(rangeSize) || rangeSize < 1) throw new TypeError(`rangeSize must be a positive integer, got ${rangeSize}`);
  const ahead = parallel.jobsAhead ?? 2 * pool.threads;
  const jobs: Array<Promise<CheckedBatch>> = [];
  let next = 0;
  const fill = () => {
    while (jobs.length < ahead && next < records.length) {
      const job = pool.check({ records: records.slice(next, next + rangeSize) });
      // Awaited in order below; a failure meanwhile must not count as unhandled.
      job.catch(() => undefined);
      jobs.push(job);
      next += rangeSize;
    }
  };
  fill();
  while (jobs.length > 0) {
    const reader = new CheckedBatchReader(await (jobs.shift() as Promise<CheckedBatch>));
    fill();
    for (let record = reader.next(); record !== undefined; record = reader.next()) yield record;
  }
}
