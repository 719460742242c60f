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
  STRING_BOUND_CODE_POINTS_MAX,
} from './iceberg-bounds.js';
import { DATA_FILE_CONTENT_DATA, FILE_FORMAT_PARQUET, type DataFile, type IcebergMapEntry } from './iceberg-manifest.js';
import { AUDIT_SORT_ORDER_ID, dayOrdinal } from './iceberg-schema.js';
import { bytesSource } from './byte-source.js';
import { readAuditParquetFooter, readColumnValues, type ParquetFooter } from './parquet-reader.js';

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
 *
 * The writers (sweep and compaction) build the record from the file's footer instead
 * ({@link dataFileFromParquetFooter}, forty times faster); this one, computed from the rows
 * alone, is the reference the tests hold that one to.
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

/** What {@link dataFileFromParquetFooter} describes: one encoded Parquet data file. */
export interface FooterDataFileInput {
  /** Absolute URI the file is stored at. */
  filePath: string;
  /** The whole file, as stored. */
  parquetBytes: Uint8Array;
}

/** One row group's contribution to a column's metrics. */
interface GroupMetrics {
  values: number;
  nulls: number;
  /** Iceberg bounds of the group's non-null values: longs as bigint, strings truncated (upper null: none exists). */
  lower?: bigint | string;
  upper?: bigint | string | null;
}

/**
 * The `data_file` of a Parquet file of the table, with the same metrics as
 * {@link dataFileFromParquet} gives for its events, computed from its footer instead of its
 * rows: a compacted file's row groups are copied, never decoded (parquet-assembler.ts), and its
 * record must be as exact as a freshly written one's.
 *
 * - `value_counts`: each chunk's `num_values` (flat columns: nulls included);
 *   `null_value_counts`: each chunk's statistics' `null_count`;
 * - `long`/`timestamptz` bounds: the least `min_value` and greatest `max_value` of the groups
 *   (INT64 statistics are never truncated);
 * - `string` bounds: Iceberg truncates to 16 code points, our writer's statistics to 64 bytes
 *   (`STATISTICS_STRING_BYTES_MAX`, on a code point boundary: a prefix for a min, a prefix with
 *   its last code point incremented for a max, flagged inexact). An exact statistic, or a
 *   truncated min of at least 16 code points or max of more than 16, has the same first 16
 *   code points as the value it stands for, so the Iceberg bound follows from it exactly; the
 *   file's bound is the least (greatest) of its groups', as truncation keeps order. Where a
 *   statistic does not say enough (a truncated value of 4-byte characters, a missing
 *   statistic), that one column of that group is decoded and its bound computed from the values.
 *
 * Meant for files whose statistics our writer wrote (encodeAuditParquet, or row groups copied
 * from its files). Throws TypeError for a file with no rows, a column missing, or rows of more
 * than one day.
 */
export async function dataFileFromParquetFooter(input: FooterDataFileInput): Promise<DataFile> {
  const { filePath, parquetBytes } = input;
  const source = bytesSource(parquetBytes);
  const footer = await readAuditParquetFooter(source, { exactStatistics: true });
  const recordCount = Number(footer.num_rows);
  if (recordCount === 0) throw new TypeError(`data file ${filePath}: no rows (0-row files must not be committed)`);
  const valueCounts: IcebergMapEntry<number>[] = [];
  const nullCounts: IcebergMapEntry<number>[] = [];
  const lowerBounds: IcebergMapEntry<Uint8Array>[] = [];
  const upperBounds: IcebergMapEntry<Uint8Array>[] = [];
  let tsRange: { lower?: bigint; upper?: bigint } = {};
  for (const column of AUDIT_COLUMNS) {
    let values = 0;
    let nulls = 0;
    let lower: bigint | string | undefined;
    let upper: bigint | string | null | undefined;
    for (let group = 0; group < footer.row_groups.length; group++) {
      const metrics = await groupMetrics(source, footer, column, group, filePath);
      values += metrics.values;
      nulls += metrics.nulls;
      if (metrics.lower !== undefined && (lower === undefined || less(metrics.lower, lower))) lower = metrics.lower;
      if (metrics.upper !== undefined && upper !== null) {
        if (metrics.upper === null) upper = null;
        else if (upper === undefined || less(upper, metrics.upper)) upper = metrics.upper;
      }
    }
    if (values !== recordCount) throw new TypeError(`data file ${filePath}: column ${column.name} holds ${values} values for ${recordCount} rows`);
    valueCounts.push({ key: column.fieldId, value: values });
    nullCounts.push({ key: column.fieldId, value: nulls });
    if (lower !== undefined) lowerBounds.push({ key: column.fieldId, value: encodeBound(column.icebergType, lower) });
    if (upper !== undefined && upper !== null) upperBounds.push({ key: column.fieldId, value: encodeBound(column.icebergType, upper) });
    if (column.name === 'ts') tsRange = { ...(typeof lower === 'bigint' ? { lower } : {}), ...(typeof upper === 'bigint' ? { upper } : {}) };
  }
  if (tsRange.lower === undefined || tsRange.upper === undefined) throw new TypeError(`data file ${filePath}: no ts bounds`);
  const day = dayOrdinal(Number(tsRange.lower));
  if (dayOrdinal(Number(tsRange.upper)) !== day) throw new TypeError(`data file ${filePath}: events of more than one day (partition value must be one per file)`);
  return {
    content: DATA_FILE_CONTENT_DATA,
    file_path: filePath,
    file_format: FILE_FORMAT_PARQUET,
    partition: { event_time_day: day },
    record_count: recordCount,
    file_size_in_bytes: parquetBytes.byteLength,
    column_sizes: columnSizes(footer),
    value_counts: valueCounts,
    null_value_counts: nullCounts,
    nan_value_counts: null,
    lower_bounds: lowerBounds,
    upper_bounds: upperBounds,
    key_metadata: null,
    split_offsets: splitOffsets(footer),
    equality_ids: null,
    sort_order_id: AUDIT_SORT_ORDER_ID,
    referenced_data_file: null,
  };
}

function less(a: bigint | string, b: bigint | string): boolean {
  return typeof a === 'bigint' ? a < (b as bigint) : compareCodePoints(a, b as string) < 0;
}

function encodeBound(type: 'string' | 'long' | 'timestamptz', value: bigint | string): Uint8Array {
  if (type === 'string') return encodeStringBound(value as string);
  return type === 'timestamptz' ? encodeTimestamptzBound(value as bigint) : encodeLongBound(value as bigint);
}

const UTF8 = new TextDecoder('utf-8', { fatal: true });

/** A string statistic's text, or undefined when it is not whole UTF-8. */
function statisticText(value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  if (!(value instanceof Uint8Array)) return undefined;
  try {
    return UTF8.decode(value);
  } catch {
    return undefined;
  }
}

function codePoints(text: string): number {
  let count = 0;
  for (const _ of text) count++;
  return count;
}

/** One column's metrics in one row group: from the footer where it says enough, else from the decoded values. */
async function groupMetrics(source: ReturnType<typeof bytesSource>, footer: ParquetFooter, column: (typeof AUDIT_COLUMNS)[number], group: number, filePath: string): Promise<GroupMetrics> {
  const chunk = footer.row_groups[group]?.columns.find((c) => c.meta_data?.path_in_schema[0] === column.name)?.meta_data;
  if (chunk === undefined) throw new TypeError(`data file ${filePath}: row group ${group} has no column ${column.name}`);
  const values = Number(chunk.num_values);
  const stats = chunk.statistics;
  const nullCount = stats?.null_count;
  if (nullCount !== undefined) {
    const nulls = Number(nullCount);
    if (nulls === values) return { values, nulls };
    const min = stats?.min_value;
    const max = stats?.max_value;
    if (column.icebergType !== 'string') {
      if (typeof min === 'bigint' && typeof max === 'bigint') return { values, nulls, lower: min, upper: max };
    } else {
      const minText = statisticText(min);
      const maxText = statisticText(max);
      const minExact = stats?.is_min_value_exact !== false;
      const maxExact = stats?.is_max_value_exact !== false;
      if (minText !== undefined && maxText !== undefined && (minExact || codePoints(minText) >= STRING_BOUND_CODE_POINTS_MAX) && (maxExact || codePoints(maxText) > STRING_BOUND_CODE_POINTS_MAX)) {
        return { values, nulls, lower: truncateLowerBound(minText), upper: truncateUpperBound(maxText) ?? null };
      }
    }
  }
  // The footer does not say enough: this column of this group, decoded.
  const decoded = (await readColumnValues(source, footer, column.name, group)).filter((value) => value !== null && value !== undefined);
  const metrics: GroupMetrics = { values, nulls: values - decoded.length };
  if (decoded.length === 0) return metrics;
  if (column.icebergType === 'string') {
    const strings = decoded.map((value) => wellFormed(value as string));
    let min = strings[0] as string;
    let max = min;
    for (const value of strings) {
      if (compareCodePoints(value, min) < 0) min = value;
      if (compareCodePoints(value, max) > 0) max = value;
    }
    return { ...metrics, lower: truncateLowerBound(min), upper: truncateUpperBound(max) ?? null };
  }
  const longs = decoded.map((value) => BigInt(value as bigint));
  return { ...metrics, lower: longs.reduce((a, b) => (b < a ? b : a)), upper: longs.reduce((a, b) => (b > a ? b : a)) };
}
