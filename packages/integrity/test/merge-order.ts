import { CheckedBatchReader, type CheckedBatch, type CheckedRecord } from '../src/index.js';

/**
 * The merge order the merges of checked-merge.ts give, written the obvious way as the
 * reference they are checked against: every batch's records, concatenated in batch order,
 * stably sorted by seq (so copies of one seq keep the order of their batches, then within one).
 */
export function inMergeOrder(batches: readonly CheckedBatch[]): CheckedRecord[] {
  const records: CheckedRecord[] = [];
  for (const batch of batches) {
    const reader = new CheckedBatchReader(batch);
    for (let record = reader.next(); record !== undefined; record = reader.next()) records.push(record);
  }
  return records.sort((a, b) => a.seq - b.seq);
}
