import { decodeLongBound, INGEST_TS_FIELD_ID, SEQ_FIELD_ID, type IcebergTableMetadata } from '@auditlake/format';
import { currentManifests, isLive } from './iceberg-table-files.js';
import type { IcebergTableRef } from './iceberg-table-ref.js';
import type { ObjectStore } from './object-store.js';
import type { Watermark } from './watermark.js';

/**
 * Where tiering stopped, as the current snapshot's live data files show it: the greatest `seq`
 * upper bound of their manifest entries, with the `ingest_ts` upper bound of the file holding
 * it (a file is one sweep batch's rows of one day, and ingest time grows with seq, so that is
 * the ingest time of the row at that seq). Undefined when no live file has seq bounds.
 *
 * For a table whose retained snapshots all lack the watermark summary: our writer copies it
 * into every snapshot it makes and our expiry keeps the ancestor that carries it, but another
 * engine may commit on top and then expire every older snapshot itself (Spark's
 * `expire_snapshots` with `retain_last` 1). A node with no watermark of its own (a successor,
 * a node whose data was lost) would then tier every event of its log again. The bound can be
 * below the true watermark only where rows at the top were deleted by another engine; those
 * few are then tiered again, which is what the table's owner asked for by deleting them.
 */
export async function watermarkFromLiveFiles(objects: ObjectStore, table: IcebergTableRef, metadata: IcebergTableMetadata): Promise<Watermark | undefined> {
  let found: Watermark | undefined;
  for (const manifest of await currentManifests(objects, table, metadata)) {
    for (const entry of manifest.entries) {
      if (!isLive(entry)) continue;
      const file = entry.data_file;
      const seqBound = file.upper_bounds?.find((bound) => bound.key === SEQ_FIELD_ID)?.value;
      if (seqBound === undefined) continue;
      const seq = Number(decodeLongBound(seqBound));
      if (found !== undefined && seq <= found.seq) continue;
      const ingestBound = file.upper_bounds?.find((bound) => bound.key === INGEST_TS_FIELD_ID)?.value;
      found = { seq, ingestTs: ingestBound === undefined ? 0 : Number(decodeLongBound(ingestBound)) };
    }
  }
  return found;
}
