import { parentPort } from 'node:worker_threads';
import { isAuditError } from '@auditlake/model';
import { checkedBatchTransfer, checkRecordsToBatch } from './checked-batch.js';
import type { VerifyRecord } from './checked-record.js';
import type { RecordCheckRequest, RecordCheckResponse } from './record-check-pool.js';
import { RecordHasher } from './record-hasher.js';

/** The records a job holds, and how many rows it held without a seq. */
export interface JobRecords {
  records: Iterable<VerifyRecord>;
  skipped?: number;
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
    void (async () => {
      const { records, skipped } = await read(request.job);
      return checkRecordsToBatch(records, hasher, skipped);
    })().then(
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
