import { parentPort } from 'node:worker_threads';
import { isAuditError, type ColumnValueSummary } from '@auditlake/model';
import { checkedBatchTransfer, checkRecordsToBatch, type CheckedBatch } from './checked-batch.js';
import { checkColumnsToBatch, type RecordColumns } from './checked-columns.js';
import type { VerifyRecord } from './checked-record.js';
import type { RecordCheckRequest, RecordCheckResponse } from './record-check-pool.js';
import { RecordHasher } from './record-hasher.js';

/**
 * The records a job holds, and how many rows it held without a seq; or its records as columns,
 * with what each column of the file holds in sum where the reader gave it.
 */
export type JobRecords = { records: Iterable<VerifyRecord>; skipped?: number } | { columns: RecordColumns; columnSummaries?: readonly ColumnValueSummary[] };

/**
 * Checks a job's records ({@link checkRecordsToBatch} or {@link checkColumnsToBatch}); a job of
 * columns also reports its rows' event-time range (CheckedBatch.eventTime) and passes its
 * column summaries on (CheckedBatch.columnSummaries).
 */
export function checkJobRecords(job: JobRecords, hasher: RecordHasher): CheckedBatch {
  if (!('columns' in job)) return checkRecordsToBatch(job.records, hasher, job.skipped);
  const batch = checkColumnsToBatch(job.columns, hasher);
  const eventTime = eventTimeRange(job.columns.timestamp, job.columns.count);
  return { ...batch, ...(eventTime === undefined ? {} : { eventTime }), ...(job.columnSummaries === undefined ? {} : { columnSummaries: job.columnSummaries }), ...rowsBySeq(job.columns) };
}

/** A file's first row by seq, and what its rows without a seq say of when they came (CheckedBatch.withoutSeq). */
function rowsBySeq(columns: RecordColumns): Pick<CheckedBatch, 'withoutSeq' | 'firstRow'> {
  let withoutSeq: CheckedBatch['withoutSeq'];
  let firstRow: CheckedBatch['firstRow'];
  for (let i = 0; i < columns.count; i++) {
    const seq = columns.seq[i];
    const ingestTs = columns.ingestTs[i] as number;
    if (seq === undefined) {
      if (withoutSeq === undefined || !(ingestTs <= withoutSeq.ingestTsMax)) withoutSeq = { ingestTsMax: ingestTs, eventId: columns.eventId[i] as string };
    } else if (firstRow === undefined || seq < firstRow.seq) {
      firstRow = { seq, ingestTs };
    }
  }
  return { ...(withoutSeq === undefined ? {} : { withoutSeq }), ...(firstRow === undefined ? {} : { firstRow }) };
}

/** The least and greatest of the first `count` timestamps; undefined for none. */
function eventTimeRange(timestamps: ArrayLike<number>, count: number): { min: number; max: number } | undefined {
  if (count === 0) return undefined;
  let min = Infinity;
  let max = -Infinity;
  for (let i = 0; i < count; i++) {
    const ts = timestamps[i] as number;
    if (ts < min) min = ts;
    if (ts > max) max = ts;
  }
  return { min, max };
}

/**
 * Runs in a check worker ({@link RecordCheckPool}): answers every job with its records checked
 * ({@link checkRecordsToBatch}), or with the failure. `read` turns a job into records: given
 * values, JSON lines, a Parquet file's bytes.
 */
export function serveRecordChecks(read: (job: unknown) => Promise<JobRecords> | JobRecords): void {
  const port = parentPort;
  if (port === null) throw new Error('a record check worker must run in a worker thread');
  // One hasher per thread: its field-hash caches carry over from job to job.
  const hasher = new RecordHasher();
  port.on('message', (request: RecordCheckRequest) => {
    void (async () => checkJobRecords(await read(request.job), hasher))().then(
      (batch) => {
        const response: RecordCheckResponse = { id: request.id, batch };
        port.postMessage(response, checkedBatchTransfer(batch));
      },
      (err: unknown) => {
        const response: RecordCheckResponse = { id: request.id, error: err instanceof Error ? err.message : String(err), ...(isAuditError(err) ? { code: err.code } : {}) };
        port.postMessage(response);
      },
    );
  });
}

/** Records from the JSON lines a node pages its log in (`GET /admin/audit/integrity/records`). */
export function parseRecordLines(text: string): VerifyRecord[] {
  const records: VerifyRecord[] = [];
  for (const line of text.split('\n')) if (line !== '') records.push(JSON.parse(line) as VerifyRecord);
  return records;
}
