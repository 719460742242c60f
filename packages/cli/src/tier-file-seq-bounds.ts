import { decodeIntBound, decodeLongBound, readAuditParquetFooter, SEQ_FIELD_ID, type ByteSource, type DataFile } from '@auditlake/format';
import type { CommitMarker } from '@auditlake/lake';

/**
 * The seqs a tier file holds, as declared before the file is fetched (inclusive): what lets
 * `auditlake verify` fetch and check each file once, in the order of its least seq. A claim
 * anyone who can write the bucket can edit, so each file is checked against it once fetched
 * (tier-proof.ts): the order never rests on it.
 */
export interface SeqBounds {
  lower: number;
  upper: number;
  /** Who declares them, for a message: "its manifest entry", "commit marker <key>", "its footer's statistics". */
  declaredBy: string;
}

function bounds(lower: number | bigint, upper: number | bigint, declaredBy: string): SeqBounds | undefined {
  const low = Number(lower);
  const high = Number(upper);
  return Number.isSafeInteger(low) && Number.isSafeInteger(high) && low <= high ? { lower: low, upper: high, declaredBy } : undefined;
}

/** A `long` bound as engines read it: 8 bytes, or 4 where the column was an `int` when it was written (Iceberg's promotion). */
function longBound(bytes: Uint8Array): bigint | undefined {
  if (bytes.byteLength === 8) return decodeLongBound(bytes);
  if (bytes.byteLength === 4) return BigInt(decodeIntBound(bytes));
  return undefined;
}

/**
 * The `seq` column's bounds an Iceberg manifest entry declares (field 13): undefined when it
 * declares none — a file without chained rows (its `seq` all null), or another writer's.
 */
export function icebergSeqBounds(declared: DataFile): SeqBounds | undefined {
  const lower = declared.lower_bounds?.find((entry) => entry.key === SEQ_FIELD_ID)?.value;
  const upper = declared.upper_bounds?.find((entry) => entry.key === SEQ_FIELD_ID)?.value;
  if (lower === undefined || upper === undefined) return undefined;
  const low = longBound(lower);
  const high = longBound(upper);
  return low === undefined || high === undefined ? undefined : bounds(low, high, 'its manifest entry');
}

/**
 * The seqs each file a Parquet commit marker commits lies within, by file key: the batch's
 * (`firstSeq` through the watermark's seq; a sweep splits one batch into a file per day, so its
 * files share them). A file two markers name (a batch retried under the same names, before
 * names were attempt-unique) takes the later one's, as the live files do. Markers without a
 * usable range give none.
 */
export function parquetMarkerSeqBounds(markers: ReadonlyArray<{ key?: string; marker: CommitMarker }>): Map<string, SeqBounds> {
  const byKey = new Map<string, SeqBounds>();
  for (const { key, marker } of markers) {
    const range = bounds(marker.firstSeq, marker.watermark?.seq, key === undefined ? 'its commit marker' : `commit marker ${key}`);
    for (const file of marker.files) {
      if (range === undefined) byKey.delete(file.key);
      else byKey.set(file.key, range);
    }
  }
  return byKey;
}

/**
 * The `seq` bounds a Parquet file's footer statistics declare (the least `min` and greatest
 * `max` over its row groups), read with one ranged GET of the file's end (two for a footer past
 * FOOTER_FETCH_BYTES): for a file no commit marker bounds (a compaction's or an erasure
 * rewrite's). Undefined when a row group that holds a seq declares no bounds for it, or when no
 * row group holds one.
 */
export async function parquetFooterSeqBounds(source: ByteSource): Promise<SeqBounds | undefined> {
  const footer = await readAuditParquetFooter(source);
  let lower: bigint | number | undefined;
  let upper: bigint | number | undefined;
  for (const group of footer.row_groups) {
    const chunk = group.columns.find((column) => column.meta_data?.path_in_schema.length === 1 && column.meta_data.path_in_schema[0] === 'seq');
    if (chunk === undefined) continue;
    const statistics = chunk.meta_data?.statistics;
    const min = statistics?.min_value ?? statistics?.min;
    const max = statistics?.max_value ?? statistics?.max;
    if ((typeof min === 'bigint' || typeof min === 'number') && (typeof max === 'bigint' || typeof max === 'number')) {
      if (lower === undefined || min < lower) lower = min;
      if (upper === undefined || max > upper) upper = max;
      continue;
    }
    // No bounds: only a group that declares every row without a seq holds none.
    if (statistics?.null_count === undefined || Number(statistics.null_count) !== Number(group.num_rows)) return undefined;
  }
  return lower === undefined || upper === undefined ? undefined : bounds(lower, upper, "its footer's statistics");
}
