import { parquetWriteBuffer, type ColumnSource, type KeyValue } from 'hyparquet-writer';
import { AUDIT_COLUMNS, toRow, type AuditRow, type TieredEvent } from './audit-columns.js';
import { compressTierPage, TIER_PAGE_CODEC } from './page-codec.js';
import { auditParquetSchema } from './parquet-schema.js';
import { encodeRowGroupSketches, ROW_GROUP_SKETCH_KEY, RowGroupSketch } from './row-group-sketch.js';

/** Rows per row group unless the caller says otherwise. */
export const ROW_GROUP_SIZE_DEFAULT = 10_000;

/**
 * Target uncompressed size of a data page (hyparquet-writer's default is 1 MiB). A reader
 * that wants a group's newest rows (a one-day window, newest first) decompresses and decodes
 * only the pages holding them, so smaller pages mean less work: at 128 KiB the query column of
 * a 10,000-row group is about 14 pages, not 2. Pages this size compress within a few per cent of
 * 1 MiB ones.
 */
export const PAGE_SIZE_BYTES = 128 * 1024;

/**
 * Longest string min/max kept in column statistics, in UTF-8 bytes. Long enough that the
 * short columns (a UUID event_id is 36 bytes; source, user_id, action) keep exact bounds;
 * long free text (query, details) gets truncated bounds, which hyparquet-writer rounds
 * correctly (a prefix for min, a successor for max) and flags as inexact. Integer and
 * timestamp statistics are never truncated.
 */
export const STATISTICS_STRING_BYTES_MAX = 64;

/** `created_by` in the file footer, so a file found in a bucket says what wrote it. */
export const PARQUET_CREATED_BY = 'auditlake @auditlake/format (hyparquet-writer)';

/** Options of {@link encodeAuditParquet}. */
export interface EncodeAuditParquetOptions {
  /** Rows per row group (default {@link ROW_GROUP_SIZE_DEFAULT}); a positive integer. */
  rowGroupSize?: number;
  /**
   * Footer key-value metadata, e.g. `iceberg.schema` for Iceberg data files
   * (docs/iceberg-layout.md §5).
   */
  kvMetadata?: Readonly<Record<string, string>>;
  /**
   * Write each row group's sketch into the footer (row-group-sketch.ts); default true. Off
   * only to produce files as writers before it did, for tests of reading them.
   */
  rowGroupSketches?: boolean;
}

/**
 * Encodes events (StoredEvents, or TieredEvents read back) as one Parquet data file of the
 * tiered layout: the columns of {@link AUDIT_COLUMNS} with their Iceberg field
 * ids, GZIP-compressed (page-codec.ts says why), with min/max/null-count statistics on every column chunk
 * and, in the footer, a sketch of each row group (users, engines, tables, decisions, action
 * kinds and free-text trigrams: row-group-sketch.ts) that lets readers skip groups without a match.
 *
 * Rows are sorted by event time (`ts`) ascending, ties kept in input order, so each row group
 * covers a narrow time range and its `ts`/`event_time` statistics prune well.
 *
 * Throws TypeError for no events (a 0-row data file must never be committed) or an event the
 * columns cannot hold exactly (see {@link toRow}).
 */
export function encodeAuditParquet(
  events: readonly TieredEvent[],
  options: EncodeAuditParquetOptions = {},
): Uint8Array {
  const rowGroupSize = options.rowGroupSize ?? ROW_GROUP_SIZE_DEFAULT;
  if (!Number.isSafeInteger(rowGroupSize) || rowGroupSize < 1) {
    throw new TypeError(`rowGroupSize must be a positive integer, got ${rowGroupSize}`);
  }
  if (events.length === 0) throw new TypeError('encodeAuditParquet needs at least one event');

  // Array.prototype.sort is stable, so events with equal ts keep their (seq) order.
  const rows = events.map(toRow).sort((a, b) => a.ts - b.ts);
  const kvMetadata: KeyValue[] = Object.entries(options.kvMetadata ?? {}).map(([key, value]) => ({ key, value }));
  if (options.rowGroupSketches !== false) {
    // hyparquet-writer cuts row groups of exactly rowGroupSize rows, the last one shorter.
    const sketches: RowGroupSketch[] = [];
    for (let start = 0; start < rows.length; start += rowGroupSize) sketches.push(RowGroupSketch.of(rows.slice(start, start + rowGroupSize)));
    kvMetadata.push({ key: ROW_GROUP_SKETCH_KEY, value: encodeRowGroupSketches(sketches) });
  }

  const buffer = parquetWriteBuffer({
    schema: auditParquetSchema(),
    columnData: columnData(rows),
    codec: TIER_PAGE_CODEC,
    compressors: { [TIER_PAGE_CODEC]: compressTierPage },
    statistics: true,
    statisticsTruncateLength: STATISTICS_STRING_BYTES_MAX,
    rowGroupSize,
    pageSize: PAGE_SIZE_BYTES,
    createdBy: PARQUET_CREATED_BY,
    ...(kvMetadata.length > 0 ? { kvMetadata } : {}),
  });
  return new Uint8Array(buffer);
}

/** Transposes rows into one column array per tiered column, in schema order. */
function columnData(rows: readonly AuditRow[]): ColumnSource[] {
  return AUDIT_COLUMNS.map((column): ColumnSource => {
    const name = column.name;
    switch (name) {
      case 'ts':
      case 'ingest_ts':
        // INT64 columns take bigints; ms values are safe integers (checked in toRow).
        return { name, data: BigInt64Array.from(rows, (row) => BigInt(row[name])) };
      case 'event_time':
        return { name, data: BigInt64Array.from(rows, (row) => row.event_time) };
      case 'user_id':
        // A standard Parquet split-block Bloom filter (1% false positives, ~256 bytes per row
        // group for a few hundred users): other engines (DuckDB, Spark, Trino) skip row groups
        // by it for `user_id = …`. Our reader uses the footer's row-group sketch instead: a
        // Bloom filter lies outside the footer, one more request per file.
        return { name, data: rows.map((row) => row[name]), bloomFilter: true };
      case 'seq':
      case 'term':
      case 'source_seq':
        // Optional INT64: a plain array, where null marks a value the event does not have.
        return { name, data: rows.map((row) => (row[name] === null ? null : BigInt(row[name]))) };
      default:
        return { name, data: rows.map((row) => row[name]) };
    }
  });
}
