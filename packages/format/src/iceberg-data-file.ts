import { parquetMetadata, type FileMetaData } from 'hyparquet';
import { AUDIT_COLUMNS, toRow, type AuditRow, type TieredEvent } from './audit-columns.js';
import {
  compareCodePoints,
  encodeLongBound,
  encodeStringBound,
  encodeTimestamptzBound,
  truncateLowerBound,
  truncateUpperBound,
  wellFormed,
} from './iceberg-bounds.js';
import { DATA_FILE_CONTENT_DATA, FILE_FORMAT_PARQUET, type DataFile, type IcebergMapEntry } from './iceberg-manifest.js';
import { AUDIT_SORT_ORDER_ID, dayOrdinal } from './iceberg-schema.js';

/** What {@link dataFileFromParquet} describes: one Parquet data file and the events in it. */
export interface DataFileInput {
  /** Exactly the events encoded into the file (any order). */
  events: readonly TieredEvent[];
  /** Absolute URI the file is stored at. */
  filePath: string;
  /** Exact size of the stored object in bytes. */
  fileSizeBytes: number;
  /**
   * The encoded file itself. When given, `column_sizes` and `split_offsets` are taken from its
   * footer, and its size and row count are checked against `fileSizeBytes` and `events`;
   * without it both fields are null (they are optional and must never be guessed).
   */
  parquetBytes?: Uint8Array;
}

/**
 * The `data_file` of a Parquet file of the table, with exact metrics computed from its events:
 * `record_count`, per-column `value_counts` and `null_value_counts` (every column of
 * every file, ids 1..12), and lower/upper bounds for every column:
 * - `long` (`ts`, `ingest_ts`) and `timestamptz` (`event_time`, µs): exact min/max;
 * - `string`: min/max in code-point (UTF-8 byte) order, truncated to
 *   `STRING_BOUND_CODE_POINTS_MAX` (16) code points like Java's default `truncate(16)` — the
 *   lower bound a prefix, the upper bound a prefix with its last code point incremented (and
 *   omitted when no such string exists), so both stay true bounds.
 * Partition `event_time_day` = {@link dayOrdinal} of the events' time; `sort_order_id` 0.
 *
 * Throws TypeError for no events (0-row files must never be committed), events from more than
 * one day (one partition value per file), a bad size, or `parquetBytes` that disagree with the
 * size or the event count.
 */
export function dataFileFromParquet(input: DataFileInput): DataFile {
  const { events, filePath, fileSizeBytes } = input;
  if (events.length === 0) throw new TypeError(`data file ${filePath}: no events (0-row files must not be committed)`);
  if (!Number.isSafeInteger(fileSizeBytes) || fileSizeBytes <= 0) {
    throw new TypeError(`data file ${filePath}: fileSizeBytes must be a positive integer, got ${fileSizeBytes}`);
  }
  const rows = events.map(toRow);
  const day = dayOrdinal((rows[0] as AuditRow).ts);
  for (const row of rows) {
    if (dayOrdinal(row.ts) !== day) {
      throw new TypeError(`data file ${filePath}: events of more than one day (partition value must be one per file)`);
    }
  }

  let footer: FileMetaData | undefined;
  if (input.parquetBytes !== undefined) {
    const bytes = input.parquetBytes;
    if (bytes.byteLength !== fileSizeBytes) {
      throw new TypeError(`data file ${filePath}: fileSizeBytes ${fileSizeBytes} but parquetBytes has ${bytes.byteLength}`);
    }
    footer = parquetMetadata(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer);
    if (Number(footer.num_rows) !== rows.length) {
      throw new TypeError(`data file ${filePath}: the file holds ${footer.num_rows} rows but ${rows.length} events were given`);
    }
  }

  const valueCounts: IcebergMapEntry<number>[] = [];
  const nullCounts: IcebergMapEntry<number>[] = [];
  const lowerBounds: IcebergMapEntry<Uint8Array>[] = [];
  const upperBounds: IcebergMapEntry<Uint8Array>[] = [];
  for (const column of AUDIT_COLUMNS) {
    const values = rows.map((row) => row[column.name]);
    const nonNull = values.filter((value) => value !== null && value !== undefined);
    valueCounts.push({ key: column.fieldId, value: values.length });
    nullCounts.push({ key: column.fieldId, value: values.length - nonNull.length });
    const bounds = columnBounds(column.icebergType, nonNull);
    if (bounds.lower !== undefined) lowerBounds.push({ key: column.fieldId, value: bounds.lower });
    if (bounds.upper !== undefined) upperBounds.push({ key: column.fieldId, value: bounds.upper });
  }

  return {
    content: DATA_FILE_CONTENT_DATA,
    file_path: filePath,
    file_format: FILE_FORMAT_PARQUET,
    partition: { event_time_day: day },
    record_count: rows.length,
    file_size_in_bytes: fileSizeBytes,
    column_sizes: footer === undefined ? null : columnSizes(footer),
    value_counts: valueCounts,
    null_value_counts: nullCounts,
    // No float/double columns: NaN counts do not apply.
    nan_value_counts: null,
    lower_bounds: lowerBounds,
    upper_bounds: upperBounds,
    key_metadata: null,
    split_offsets: footer === undefined ? null : splitOffsets(footer),
    equality_ids: null,
    sort_order_id: AUDIT_SORT_ORDER_ID,
    referenced_data_file: null,
  };
}

/** Serialized lower/upper bounds of a column's non-null values; undefined where none exists. */
function columnBounds(type: 'string' | 'long' | 'timestamptz', values: readonly unknown[]): { lower?: Uint8Array; upper?: Uint8Array } {
  if (values.length === 0) return {};
  if (type === 'string') {
    // Bounds over the values as stored: a lone surrogate is written as U+FFFD.
    const strings = values.map((value) => wellFormed(value as string));
    let min = strings[0] as string;
    let max = min;
    for (const value of strings) {
      if (compareCodePoints(value, min) < 0) min = value;
      if (compareCodePoints(value, max) > 0) max = value;
    }
    const upper = truncateUpperBound(max);
    return {
      lower: encodeStringBound(truncateLowerBound(min)),
      ...(upper === undefined ? {} : { upper: encodeStringBound(upper) }),
    };
  }
  const longs = values.map((value) => BigInt(value as number | bigint));
  let min = longs[0] as bigint;
  let max = min;
  for (const value of longs) {
    if (value < min) min = value;
    if (value > max) max = value;
  }
  return type === 'timestamptz'
    ? { lower: encodeTimestamptzBound(min), upper: encodeTimestamptzBound(max) }
    : { lower: encodeLongBound(min), upper: encodeLongBound(max) };
}

/** Per column id, the compressed size of its chunks over all row groups (footer excluded, per spec). */
function columnSizes(footer: FileMetaData): IcebergMapEntry<number>[] {
  return AUDIT_COLUMNS.map((column) => {
    let size = 0n;
    for (const group of footer.row_groups) {
      for (const chunk of group.columns) {
        if (chunk.meta_data?.path_in_schema[0] === column.name) size += chunk.meta_data.total_compressed_size;
      }
    }
    return { key: column.fieldId, value: Number(size) };
  });
}

/**
 * Start offset of each row group: where its first column chunk begins (the dictionary page if
 * there is one, else the first data page), which is Java's `BlockMetaData.getStartingPos`.
 */
function splitOffsets(footer: FileMetaData): number[] | null {
  const offsets: number[] = [];
  for (const group of footer.row_groups) {
    const meta = group.columns[0]?.meta_data;
    if (meta === undefined) return null;
    offsets.push(Number(meta.dictionary_page_offset ?? meta.data_page_offset));
  }
  return offsets;
}
