import type { ColumnSource, KeyValue } from 'hyparquet-writer';
import { assembleColumnChunks, encodeColumnChunks } from './column-chunk-writer.js';
import type { Decision } from '@auditlake/model';
import { AUDIT_COLUMNS, toRow, type AuditRow, type TieredEvent } from './audit-columns.js';
import { encodeRowGroupSketches, ROW_GROUP_SKETCH_KEY, RowGroupSketch } from './row-group-sketch.js';

/** Rows per row group unless the caller says otherwise. */
export const ROW_GROUP_SIZE_DEFAULT = 10_000;

export { PAGE_SIZE_BYTES, PARQUET_CREATED_BY, STATISTICS_STRING_BYTES_MAX } from './parquet-write-settings.js';

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
  const rowGroupSize = checkedRowGroupSize(events, options);
  const rows = auditRows(events);
  const { columns, sketches } = auditColumnSources(rows, rowGroupSize, options.rowGroupSketches !== false);
  return assembleColumnChunks([encodeColumnChunks(columns, rowGroupSize)], tierFileKvMetadata(options.kvMetadata, sketches));
}

/** The options' row group size; TypeError for an invalid one or for no events. */
export function checkedRowGroupSize(events: readonly TieredEvent[], options: EncodeAuditParquetOptions): number {
  const rowGroupSize = options.rowGroupSize ?? ROW_GROUP_SIZE_DEFAULT;
  if (!Number.isSafeInteger(rowGroupSize) || rowGroupSize < 1) {
    throw new TypeError(`rowGroupSize must be a positive integer, got ${rowGroupSize}`);
  }
  if (events.length === 0) throw new TypeError('encodeAuditParquet needs at least one event');
  return rowGroupSize;
}

/**
 * The rows of `events` in the order a tier file holds them: by event time (`ts`) ascending,
 * ties in input order (Array.prototype.sort is stable, so events with equal ts keep their seq
 * order). Throws TypeError for an event the columns cannot hold exactly (see {@link toRow}).
 */
export function auditRows(events: readonly TieredEvent[]): AuditRow[] {
  return events.map(toRow).sort((a, b) => a.ts - b.ts);
}

/** A tier file's footer key-value metadata: the caller's, then the row-group sketches if any. */
export function tierFileKvMetadata(kvMetadata: Readonly<Record<string, string>> | undefined, sketches: readonly RowGroupSketch[] | undefined): KeyValue[] | undefined {
  const kv: KeyValue[] = Object.entries(kvMetadata ?? {}).map(([key, value]) => ({ key, value }));
  if (sketches !== undefined) kv.push({ key: ROW_GROUP_SKETCH_KEY, value: encodeRowGroupSketches(sketches) });
  return kv.length > 0 ? kv : undefined;
}

/** The name of a tiered column of strings. */
type StringColumnName = Extract<(typeof AUDIT_COLUMNS)[number], { icebergType: 'string' }>['name'];

/**
 * The value of each string column in a row: one function per column, so each reads one
 * property (a property looked up by a name that varies is several times slower).
 */
const STRING_VALUE: { readonly [Name in StringColumnName]: (row: AuditRow) => AuditRow[Name] } = {
  event_id: (row) => row.event_id,
  source: (row) => row.source,
  user_id: (row) => row.user_id,
  action: (row) => row.action,
  resource: (row) => row.resource,
  tables: (row) => row.tables,
  query: (row) => row.query,
  details: (row) => row.details,
  decision: (row) => row.decision,
  source_id: (row) => row.source_id,
  record_hash: (row) => row.record_hash,
  chain_hash: (row) => row.chain_hash,
  field_check: (row) => row.field_check,
  erased: (row) => row.erased,
  salt: (row) => row.salt,
};

/**
 * String columns whose values repeat from row to row (a few engines, actions and decisions, a
 * few hundred users, resources and table lists in a batch): each distinct value of a row group
 * becomes one byte array, found again by a Map. The other string columns (ids, hashes, query
 * and details text) are mostly distinct, where the Map would cost more than it saves.
 */
const REPEATING_STRING_COLUMNS: ReadonlySet<StringColumnName> = new Set<StringColumnName>(['source', 'user_id', 'action', 'resource', 'tables', 'decision', 'source_id']);

/** The columns whose distinct values a row-group sketch is built from (with query and details, read from the rows). */
export const SKETCHED_COLUMNS: readonly string[] = ['decision', 'user_id', 'source', 'action', 'resource', 'tables'];

/** The tiered columns, and the sketch of each row group when asked for. */
export interface FileColumns {
  columns: ColumnSource[];
  sketches: RowGroupSketch[] | undefined;
}

/**
 * Transposes rows into one column array per tiered column (or only those named in `only`; the
 * sketches need the columns they sketch), in schema order, and sketches each
 * row group of `rowGroupSize` rows (hyparquet-writer cuts row groups of exactly that many rows,
 * the last one shorter) from the distinct values found while transposing it.
 *
 * String values are given as their UTF-8 bytes, built with Buffer.from. hyparquet-writer takes
 * byte arrays as they are, but encodes each string value with TextEncoder (once per row, not per
 * distinct value), which on Node 20 costs many times Buffer.from: it was a tenth of a file's
 * encoding time. Reusing one array per distinct value also lets its dictionary builder match
 * repeats by identity instead of hashing their bytes. The file comes out byte for byte the same:
 * it orders byte arrays for statistics by their bytes, which is the UTF-8 (code point) order it
 * gives strings, and Buffer.from writes a lone surrogate as U+FFFD just as TextEncoder does.
 */
export function auditColumnSources(rows: readonly AuditRow[], rowGroupSize: number, withSketches: boolean, only?: ReadonlySet<string>): FileColumns {
  const wanted = (name: string) => only === undefined || only.has(name);
  if (withSketches && !SKETCHED_COLUMNS.every(wanted)) throw new Error('assertion failed: row-group sketches need the columns they sketch');
  const strings = new Map<StringColumnName, Array<Uint8Array | null>>();
  for (const name of Object.keys(STRING_VALUE) as StringColumnName[]) if (wanted(name)) strings.set(name, new Array<Uint8Array | null>(rows.length));
  const sketches: RowGroupSketch[] | undefined = withSketches ? [] : undefined;
  for (let start = 0; start < rows.length; start += rowGroupSize) {
    const end = Math.min(rows.length, start + rowGroupSize);
    const distinct = new Map<StringColumnName, ReadonlyMap<string, Uint8Array>>();
    for (const [name, out] of strings) {
      const value = STRING_VALUE[name];
      if (REPEATING_STRING_COLUMNS.has(name)) distinct.set(name, repeatedUtf8(rows, value, start, end, out));
      else distinctUtf8(rows, value, start, end, out);
    }
    if (sketches !== undefined) {
      const keys = (name: StringColumnName) => [...(distinct.get(name) as ReadonlyMap<string, Uint8Array>).keys()];
      sketches.push(
        RowGroupSketch.fromDistinct(rows.slice(start, end), {
          decisions: keys('decision') as Iterable<Decision | ''>,
          users: keys('user_id'),
          engines: keys('source'),
          actions: keys('action'),
          resources: keys('resource'),
          tableLists: keys('tables'),
        }),
      );
    }
  }
  // INT64 columns take bigints; ms values are safe integers (checked in toRow).
  const longs = (value: (row: AuditRow) => number): BigInt64Array => {
    const out = new BigInt64Array(rows.length);
    for (let i = 0; i < rows.length; i++) out[i] = BigInt(value(rows[i] as AuditRow));
    return out;
  };
  // Optional INT64: a plain array, where null marks a value the event does not have.
  const optionalLongs = (value: (row: AuditRow) => number | null): Array<bigint | null> =>
    rows.map((row) => {
      const v = value(row);
      return v === null ? null : BigInt(v);
    });
  const columns = AUDIT_COLUMNS.filter((column) => wanted(column.name)).map((column): ColumnSource => {
    const name = column.name;
    switch (name) {
      case 'ts':
        return { name, data: longs((row) => row.ts) };
      case 'ingest_ts':
        return { name, data: longs((row) => row.ingest_ts) };
      case 'event_time':
        return { name, data: BigInt64Array.from(rows, (row) => row.event_time) };
      case 'seq':
        return { name, data: optionalLongs((row) => row.seq) };
      case 'term':
        return { name, data: optionalLongs((row) => row.term) };
      case 'source_seq':
        return { name, data: optionalLongs((row) => row.source_seq) };
      case 'user_id':
        // A standard Parquet split-block Bloom filter (1% false positives, ~256 bytes per row
        // group for a few hundred users): other engines (DuckDB, Spark, Trino) skip row groups
        // by it for `user_id = …`. Our reader uses the footer's row-group sketch instead: a
        // Bloom filter lies outside the footer, one more request per file.
        return { name, data: strings.get(name) as Uint8Array[], bloomFilter: true };
      default:
        return { name, data: strings.get(name) as Array<Uint8Array | null> };
    }
  });
  return { columns, sketches };
}

/**
 * Fills `out[start..end)` with the UTF-8 bytes of those rows' `value` (mostly distinct values).
 * When every value is ASCII, which the UTF-8 of all of them joined tells at once (it is as many
 * bytes as the joined text has code units exactly then), each value is a view of that one
 * array: one conversion instead of one per value, which allocates an array each. Otherwise
 * each value is converted on its own (joined, a lone surrogate at the end of one value could
 * pair with one at the start of the next).
 */
function distinctUtf8(rows: readonly AuditRow[], value: (row: AuditRow) => string | null, start: number, end: number, out: Array<Uint8Array | null>): void {
  const texts = new Array<string | null>(end - start);
  for (let i = start; i < end; i++) texts[i - start] = value(rows[i] as AuditRow);
  const joined = texts.join('');
  const bytes = Buffer.from(joined, 'utf8');
  if (bytes.byteLength !== joined.length) {
    for (let i = start; i < end; i++) out[i] = utf8(texts[i - start] as string | null);
    return;
  }
  let at = 0;
  for (let i = start; i < end; i++) {
    const text = texts[i - start] as string | null;
    if (text === null) {
      out[i] = null;
      continue;
    }
    out[i] = bytes.subarray(at, at + text.length);
    at += text.length;
  }
}

/** The UTF-8 bytes of a string value, or null for a null one. */
function utf8(text: string | null): Uint8Array | null {
  return text === null ? null : Buffer.from(text, 'utf8');
}

/**
 * Fills `out[start..end)` with the UTF-8 bytes of those rows' `value`, one array per
 * distinct value; returns the distinct values (in order of first appearance) with their bytes.
 */
function repeatedUtf8(
  rows: readonly AuditRow[],
  value: (row: AuditRow) => string | null,
  start: number,
  end: number,
  out: Array<Uint8Array | null>,
): Map<string, Uint8Array> {
  const distinct = new Map<string, Uint8Array>();
  for (let i = start; i < end; i++) {
    const text = value(rows[i] as AuditRow);
    if (text === null) {
      out[i] = null;
      continue;
    }
    let bytes = distinct.get(text);
    if (bytes === undefined) {
      bytes = Buffer.from(text, 'utf8');
      distinct.set(text, bytes);
    }
    out[i] = bytes;
  }
  return distinct;
}
