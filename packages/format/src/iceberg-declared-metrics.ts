import { AuditError, AuditErrorCode, type ColumnValueSummary } from '@auditlake/model';
import { AUDIT_COLUMNS, auditFieldId, type IcebergType } from './audit-columns.js';
import { compareCodePoints, decodeIntBound, decodeLongBound, decodeStringBound } from './iceberg-bounds.js';
import type { FieldSummary, ManifestFile } from './iceberg-manifest-list.js';
import { ManifestEntryStatus, type DataFile, type ManifestEntry } from './iceberg-manifest.js';
import { dayDate, EVENT_TIME_DAY_FIELD_NAME } from './iceberg-schema.js';

/**
 * What an Iceberg table's metadata declares of its data, checked against the data: engines
 * (Trino, Spark, pyiceberg) skip a data file whose manifest entry's metrics rule a predicate
 * out, and a whole manifest whose partition summary in the manifest list does. The record chain
 * covers the rows, not these declarations: one narrowed by whoever holds the bucket hides rows
 * from those engines while every record still verifies. A declaration wider than the values
 * (as another engine's writer may make it: a truncated string bound, bounds kept from before a
 * delete) hides nothing and passes; only one that excludes a value is refused.
 */

const COLUMNS_BY_ID = new Map<number, (typeof AUDIT_COLUMNS)[number]>(AUDIT_COLUMNS.map((column) => [column.fieldId, column]));

const EVENT_TIME_FIELD_ID = auditFieldId('event_time');

const MICROS_PER_MS = 1000n;

/** The largest epoch-ms magnitude a Date holds. */
const DATE_MS_MAX = 8_640_000_000_000_000n;

/** Code points of a string value shown in a message; a query text can be long. */
const SHOWN_CODE_POINTS_MAX = 64;

/**
 * Throws AUDIT_INTEGRITY_MISMATCH unless every count and bound `declared` (a data file's
 * manifest entry) gives for a tiered column holds of the file's values (`actual`, one summary
 * per column):
 * - `value_counts` and `null_value_counts` equal the file's (an engine skips a file for
 *   `x IS NULL` when it declares no nulls, and for any comparison when it declares only nulls);
 * - each `lower_bounds` value is at most the column's least value and each `upper_bounds` value
 *   at least its greatest, compared as Iceberg reads them (Appendix D single-value
 *   serialization; strings in code point order, which accepts a bound truncated as the spec
 *   allows: a prefix of the least value is below it, a truncated greatest value with its last
 *   code point incremented is above it);
 * - the `event_time_day` partition is null exactly when the file's event times are (an engine
 *   projects `event_time IS NULL` onto the partition).
 * A bound of a column whose values are all null excludes nothing; ids of columns this table
 * does not write are not checked. Throws AUDIT_TABLE_INVALID for a bound that is not a value of
 * its column's type (wrong length, not UTF-8). `where` names the file, as messages begin.
 */
export function checkDeclaredMetrics(where: string, declared: DataFile, actual: readonly ColumnValueSummary[]): void {
  const summaries = new Map(actual.map((summary) => [summary.fieldId, summary]));
  const altered = (detail: string, skippedBy: string) =>
    new AuditError(AuditErrorCode.INTEGRITY_MISMATCH, `${where} ${detail}: a search that skips files by ${skippedBy} would miss it; the table's metadata was altered`);
  for (const [map, counted] of [
    [declared.value_counts, 'values'],
    [declared.null_value_counts, 'nulls'],
  ] as const) {
    for (const { key, value } of map ?? []) {
      const column = COLUMNS_BY_ID.get(key);
      const summary = summaries.get(key);
      if (column === undefined || summary === undefined) continue;
      const held = counted === 'values' ? summary.values : summary.nulls;
      if (held !== value) throw altered(`holds ${held} ${counted} in column ${column.name}, but its commit declares ${value}`, `their ${counted === 'values' ? 'value' : 'null'} counts`);
    }
  }
  for (const [map, side] of [
    [declared.lower_bounds, 'lower'],
    [declared.upper_bounds, 'upper'],
  ] as const) {
    for (const { key, value } of map ?? []) {
      const column = COLUMNS_BY_ID.get(key);
      const summary = summaries.get(key);
      if (column === undefined || summary === undefined) continue;
      const bound = boundValue(where, column.name, column.icebergType, side, value);
      const held = side === 'lower' ? summary.min : summary.max;
      if (held === undefined || typeof held !== typeof bound) continue;
      const order = typeof held === 'bigint' ? (held < (bound as bigint) ? -1 : held > (bound as bigint) ? 1 : 0) : compareCodePoints(held, bound as string);
      if (side === 'lower' ? order < 0 : order > 0) {
        const type = column.icebergType;
        throw altered(`holds ${column.name} ${shown(type, held)}, ${side === 'lower' ? 'below' : 'above'} the ${side} bound its commit declares for the column (${shown(type, bound)})`, 'those bounds');
      }
    }
  }
  const day = declared.partition.event_time_day;
  const eventTimes = summaries.get(EVENT_TIME_FIELD_ID);
  if (eventTimes !== undefined) {
    if (day === null && eventTimes.min !== undefined) {
      throw altered(`holds event_time ${shown('timestamptz', eventTimes.min)}, but its commit declares no ${EVENT_TIME_DAY_FIELD_NAME} (null)`, 'their partition');
    }
    if (day !== null && eventTimes.nulls > 0) {
      throw altered(`holds ${eventTimes.nulls} rows without an event_time, but its commit declares ${EVENT_TIME_DAY_FIELD_NAME} ${dayDate(day)}, not null`, 'their partition');
    }
  }
}

/**
 * A declared bound as engines read it: a long is 8 bytes, or 4 where the column was an int
 * when the bound was written (Iceberg's int → long promotion; Java reads it so); a timestamptz
 * 8 bytes of µs; a string its UTF-8 bytes.
 */
function boundValue(where: string, name: string, type: IcebergType, side: 'lower' | 'upper', bytes: Uint8Array): bigint | string {
  if (type === 'string') {
    try {
      return decodeStringBound(bytes);
    } catch {
      throw new AuditError(AuditErrorCode.TABLE_INVALID, `${where}: its commit declares a ${side} bound for column ${name} that is not UTF-8: the table's metadata is damaged`);
    }
  }
  if (bytes.byteLength === 8) return decodeLongBound(bytes);
  if (bytes.byteLength === 4 && type === 'long') return BigInt(decodeIntBound(bytes));
  throw new AuditError(AuditErrorCode.TABLE_INVALID, `${where}: its commit declares a ${side} bound of ${bytes.byteLength} bytes for column ${name}, not a ${type}: the table's metadata is damaged`);
}

/** A value as a message shows it: a string quoted (cut when long), a timestamp as a time and its µs. */
function shown(type: IcebergType, value: bigint | string): string {
  if (typeof value === 'string') {
    const codePoints = Array.from(value);
    return JSON.stringify(codePoints.length <= SHOWN_CODE_POINTS_MAX ? value : `${codePoints.slice(0, SHOWN_CODE_POINTS_MAX).join('')}…`);
  }
  if (type !== 'timestamptz') return String(value);
  const ms = value / MICROS_PER_MS;
  return ms >= -DATE_MS_MAX && ms <= DATE_MS_MAX ? `${new Date(Number(ms)).toISOString()} (${value} µs)` : `${value} µs`;
}

/**
 * Throws AUDIT_INTEGRITY_MISMATCH unless a manifest's partition summary in the manifest list
 * (`manifest.partitions`, one field summary: `event_time_day`, the only field of the spec the
 * manifest was decoded with) covers the partition value of every live file the manifest lists:
 * each day within its lower and upper bound (engines take a null bound to mean the manifest
 * holds only nulls), and `contains_null` true when a file's day is null. A manifest without
 * summaries is read by every search and not checked. `where` names the manifest list; throws
 * AUDIT_TABLE_INVALID for a bound that is not a 4-byte date.
 */
export function checkPartitionSummary(where: string, manifest: ManifestFile, entries: readonly ManifestEntry[]): void {
  const summary: FieldSummary | undefined = manifest.partitions?.[0];
  if (summary === undefined) return;
  const lower = summaryBound(where, manifest, 'lower', summary.lower_bound);
  const upper = summaryBound(where, manifest, 'upper', summary.upper_bound);
  for (const entry of entries) {
    if (entry.status === ManifestEntryStatus.DELETED) continue;
    const day = entry.data_file.partition.event_time_day;
    const covered = day === null ? summary.contains_null : lower !== undefined && upper !== undefined && day >= lower && day <= upper;
    if (covered) continue;
    const declared = `${lower === undefined || upper === undefined ? 'no day' : `${dayDate(lower)}..${dayDate(upper)}`}${summary.contains_null ? ' or null' : ', no nulls'}`;
    throw new AuditError(
      AuditErrorCode.INTEGRITY_MISMATCH,
      `${where}: its summary of manifest ${manifest.manifest_path} declares ${EVENT_TIME_DAY_FIELD_NAME} ${declared}, but the manifest lists data file ${entry.data_file.file_path} of ${day === null ? 'a null day' : `day ${dayDate(day)}`}: a search that skips manifests by their partition summaries would miss it; the table's metadata was altered`,
    );
  }
}

/** The manifest list's counts of a manifest's entries, by the status they count. */
const MANIFEST_COUNTS = [
  { status: ManifestEntryStatus.ADDED, files: 'added_files_count', rows: 'added_rows_count', what: 'added' },
  { status: ManifestEntryStatus.EXISTING, files: 'existing_files_count', rows: 'existing_rows_count', what: 'existing' },
  { status: ManifestEntryStatus.DELETED, files: 'deleted_files_count', rows: 'deleted_rows_count', what: 'deleted' },
] as const;

/**
 * Checks what a manifest list says a manifest holds — its content (data), and its counts of
 * added, existing and deleted files and rows — against the manifest's entries. Java's scans
 * (Spark, Trino, Flink) skip a data manifest whose list entry counts neither added nor existing
 * files, and read a manifest of delete content as deletes: a list rewritten so hid every file of
 * the manifest from them while verify passed (review). Every writer of v2 tables writes these
 * exactly. Throws AUDIT_INTEGRITY_MISMATCH naming the manifest and the count.
 */
export function checkManifestCounts(where: string, manifest: ManifestFile, entries: readonly ManifestEntry[]): void {
  const altered = (what: string) =>
    new AuditError(AuditErrorCode.INTEGRITY_MISMATCH, `${where}: its entry for manifest ${manifest.manifest_path} ${what}: an engine that plans its scans by these would miss the manifest's files; the table's metadata was altered`);
  if (manifest.content !== 0) throw altered(`declares content ${manifest.content} (deletes), but the manifest lists data files`);
  for (const { status, files, rows, what } of MANIFEST_COUNTS) {
    let fileCount = 0;
    let rowCount = 0;
    for (const entry of entries) {
      if (entry.status !== status) continue;
      fileCount++;
      rowCount += entry.data_file.record_count;
    }
    if (manifest[files] !== fileCount) throw altered(`declares ${files} ${manifest[files]}, but the manifest holds ${fileCount} ${what} ${fileCount === 1 ? 'file' : 'files'}`);
    if (manifest[rows] !== rowCount) throw altered(`declares ${rows} ${manifest[rows]}, but the manifest's ${what} files hold ${rowCount} rows`);
  }
}

function summaryBound(where: string, manifest: ManifestFile, side: 'lower' | 'upper', bytes: Uint8Array | null): number | undefined {
  if (bytes === null) return undefined;
  try {
    return decodeIntBound(bytes);
  } catch {
    throw new AuditError(AuditErrorCode.TABLE_INVALID, `${where}: its summary of manifest ${manifest.manifest_path} declares a ${side} bound of ${bytes.byteLength} bytes for ${EVENT_TIME_DAY_FIELD_NAME}, not a date: the table's metadata is damaged`);
  }
}
