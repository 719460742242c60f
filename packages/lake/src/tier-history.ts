import { readAuditParquet, type TieredEvent } from '@auditlake/format';
import type { TierSource } from './tier-source.js';

/** A tier's records as a verifier reads them: those with a seq in seq order, and the count without. */
export interface TierHistory {
  /** Every row that has a seq, in ascending seq order (copies of one seq stay side by side). */
  records: TieredEvent[];
  /** Rows written before the record chain (no seq): counted, not verifiable. */
  legacyRows: number;
  files: number;
}

/** Files read at once: enough to keep a remote store busy, few enough to bound memory. */
const FILES_IN_FLIGHT = 4;

/**
 * Reads every committed file of `source` whole (every column) and orders the rows by seq.
 * Day partitioning spreads one seq range over several files, so the rows are gathered first.
 */
export async function readTierHistory(source: TierSource): Promise<TierHistory> {
  const files = await source.listFiles();
  const records: TieredEvent[] = [];
  let legacyRows = 0;
  for (let i = 0; i < files.length; i += FILES_IN_FLIGHT) {
    const read = await Promise.all(files.slice(i, i + FILES_IN_FLIGHT).map(async (file) => readAuditParquet(await source.open(file))));
    for (const rows of read) {
      for (const row of rows) {
        if (row.seq === undefined) legacyRows++;
        else records.push(row);
      }
    }
  }
  records.sort((a, b) => (a.seq as number) - (b.seq as number));
  return { records, legacyRows, files: files.length };
}
