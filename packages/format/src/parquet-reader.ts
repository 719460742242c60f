import { AuditError, AuditErrorCode, type ColumnValueSummary } from '@auditlake/model';
import { parquetMetadataAsync, parquetRead, parquetReadObjects, type FileMetaData, type RowGroup } from 'hyparquet';
import {
  AUDIT_COLUMNS,
  isAuditColumnName,
  isDecision,
  splitTables,
  type AuditColumnName,
  type TieredEvent,
} from './audit-columns.js';
import type { ByteSource } from './byte-source.js';
import { summarizeAuditColumns } from './column-value-summaries.js';
import { ICEBERG_SCHEMA_FOOTER_KEY } from './iceberg-schema.js';
import { PAGE_DECOMPRESSORS } from './page-codec.js';
import { checkFileIndexes, checkRowGroupDeclarations } from './row-group-declarations.js';

/**
 * Bytes fetched from the end of a file for its footer. Our footers are a few KB per row group
 * (12 column chunks with statistics); a larger footer costs one more request, a smaller
 * first fetch would not save a request. hyparquet's own default (512 KiB) would fetch most
 * small files whole and defeat pushdown.
 */
export const FOOTER_FETCH_BYTES = 64 * 1024;

/**
 * hyparquet decodes timestamps to JS Dates (ms precision) by default; `event_time` is kept as
 * its exact INT64 microseconds instead.
 */
const PARSERS = { timestampFromMicroseconds: (micros: bigint): bigint => micros } as const;

/** Options of {@link readAuditParquet}. */
export interface ReadAuditParquetOptions {
  /** Earliest event time to return, epoch ms, inclusive. */
  fromMs?: number;
  /** Latest event time to return, epoch ms, inclusive. */
  toMs?: number;
  /**
   * Columns to read (default: all). Only their column chunks are fetched. Events then carry
   * only the fields those columns hold (`tables` → `tables`, `ts` → `timestamp`, …); with a
   * time range, `ts` is read as well, because rows are filtered on it.
   */
  columns?: readonly AuditColumnName[];
  /** Read only these row groups (by index in the file); default all. */
  rowGroups?: readonly number[];
  /**
   * Read only rows [rowStart, rowEnd) of the file (within the row groups read). Pages wholly
   * outside are neither decompressed nor decoded.
   */
  rowStart?: number;
  rowEnd?: number;
}

/** Row count and `ts` bounds of one row group, from the footer statistics. */
export interface RowGroupStats {
  rows: number;
  /** Smallest `ts` (epoch ms) in the group; undefined when the file has no statistics. */
  tsMin: number | undefined;
  /** Largest `ts` (epoch ms) in the group; undefined when the file has no statistics. */
  tsMax: number | undefined;
}

/** What a file's footer says about its rows. */
export interface ParquetFileStats {
  rows: number;
  rowGroups: RowGroupStats[];
}

/** The TieredEvent field each column fills. `event_time` duplicates `ts`, so both fill `timestamp`. */
const EVENT_FIELD = {
  event_id: 'eventId',
  source: 'source',
  user_id: 'userId',
  action: 'action',
  resource: 'resource',
  tables: 'tables',
  query: 'query',
  details: 'details',
  ts: 'timestamp',
  event_time: 'timestamp',
  decision: 'decision',
  ingest_ts: 'ingestTs',
  seq: 'seq',
  term: 'term',
  source_id: 'sourceId',
  source_seq: 'sourceSeq',
  record_hash: 'recordHash',
  chain_hash: 'chainHash',
  field_check: 'fieldCheck',
  erased: 'erased',
  salt: 'salt',
} as const satisfies Record<AuditColumnName, keyof TieredEvent>;

/** Columns added by schema evolution: absent from older files, read as absent there. */
const EVOLVED_COLUMNS: ReadonlySet<string> = new Set(AUDIT_COLUMNS.filter((column) => 'evolved' in column).map((column) => column.name));

const ALL_COLUMNS: readonly AuditColumnName[] = AUDIT_COLUMNS.map((column) => column.name);

/**
 * Reads the events of a tiered Parquet file whose event time lies in [fromMs, toMs], fetching
 * as little as it can through `source`: the footer, then only the column chunks of the
 * requested columns in the row groups whose `ts` statistics overlap the range. Row groups
 * without statistics are read (never skipped on a guess). Events come back in file order,
 * which is event time ascending for files written by encodeAuditParquet, and within each row
 * group for a compacted file (its groups copied from several files: parquet-merge.ts).
 *
 * Throws AuditError AUDIT_TABLE_INVALID when the file is not a readable tiered file
 * (not Parquet, or a column missing or with another field id); TypeError for bad options.
 */
export function readAuditParquet(
  source: ByteSource,
  options?: ReadAuditParquetOptions & { columns?: undefined },
): Promise<TieredEvent[]>;
export function readAuditParquet(source: ByteSource, options: ReadAuditParquetOptions): Promise<Partial<TieredEvent>[]>;
export async function readAuditParquet(
  source: ByteSource,
  options: ReadAuditParquetOptions = {},
): Promise<Partial<TieredEvent>[]> {
  checkOptions(options);
  return readAuditRows(source, await readAuditParquetFooter(source), options);
}

function checkOptions(options: ReadAuditParquetOptions): void {
  checkRangeBound('fromMs', options.fromMs);
  checkRangeBound('toMs', options.toMs);
  for (const name of options.columns ?? []) {
    if (!isAuditColumnName(name)) throw new TypeError(`unknown tiered column: ${String(name)}`);
  }
  for (const index of options.rowGroups ?? []) {
    if (!Number.isSafeInteger(index) || index < 0) throw new TypeError(`rowGroups must hold row group indexes, got ${index}`);
  }
  for (const [name, row] of [['rowStart', options.rowStart], ['rowEnd', options.rowEnd]] as const) {
    if (row !== undefined && (!Number.isSafeInteger(row) || row < 0)) throw new TypeError(`${name} must be a non-negative integer, got ${row}`);
  }
}

/**
 * {@link readAuditParquet} over a footer already read (and perhaps cached: data files never
 * change once committed), so reading several row groups of one file parses its footer once.
 */
export async function readAuditRows(
  source: ByteSource,
  metadata: ParquetFooter,
  options: ReadAuditParquetOptions = {},
): Promise<Partial<TieredEvent>[]> {
  checkOptions(options);
  const fromMs = options.fromMs ?? -Infinity;
  const toMs = options.toMs ?? Infinity;
  const requested = options.columns ?? ALL_COLUMNS;
  if (fromMs > toMs) return [];

  const filtered = options.fromMs !== undefined || options.toMs !== undefined;
  const columns = presentColumns(metadata, filtered && !requested.includes('ts') ? [...requested, 'ts' as const] : [...requested]);

  const events: Partial<TieredEvent>[] = [];
  for (const run of rowGroupRuns(metadata, fromMs, toMs, options.rowGroups)) {
    const rowStart = Math.max(run.rowStart, options.rowStart ?? 0);
    const rowEnd = Math.min(run.rowEnd, options.rowEnd ?? Infinity);
    if (rowStart >= rowEnd) continue;
    const rows = await parquetReadObjects({
      file: source,
      metadata,
      columns,
      rowStart,
      rowEnd,
      parsers: PARSERS,
      compressors: PAGE_DECOMPRESSORS,
    });
    for (const row of rows) {
      const event = eventOf(row, columns);
      // Row groups overlap the range only partly at its edges: filter their rows exactly.
      const timestamp = event.timestamp;
      if (filtered && (timestamp === undefined || timestamp < fromMs || timestamp > toMs)) continue;
      events.push(event);
    }
  }
  return events;
}

/**
 * Every row of a tiered file, every column: {@link readAuditParquet} with no options, decoded
 * column by column instead of row by row. Building an object per row per column chunk was
 * measured as more than half of decoding a whole file; the rows here are built once, from
 * the columns' arrays.
 */
export async function readWholeAuditParquet(source: ByteSource): Promise<TieredEvent[]> {
  return rowsOf(await readRawColumns(source));
}

/**
 * A tiered file's rows as columns: each value converted as {@link readAuditParquet} converts
 * it, but no object built per row. For the verifier, which hashes straight from the columns
 * (building and then taking apart an object per row was a large share of its time).
 */
export interface AuditFileColumns {
  rowCount: number;
  eventId: readonly string[];
  source: readonly string[];
  userId: readonly string[];
  action: readonly string[];
  resource: readonly string[];
  /** The column's text as stored: the table names joined with commas (what `splitTables` splits). */
  tables: readonly string[];
  query: readonly string[];
  details: readonly string[];
  decision: readonly string[];
  /** From `ts` (epoch ms). */
  timestamp: readonly number[];
  ingestTs: readonly number[];
  /** undefined where a row has none (null, or a file written before the column existed). */
  seq: ReadonlyArray<number | undefined>;
  term: ReadonlyArray<number | undefined>;
  sourceId: ReadonlyArray<string | undefined>;
  sourceSeq: ReadonlyArray<number | undefined>;
  recordHash: ReadonlyArray<string | undefined>;
  chainHash: ReadonlyArray<string | undefined>;
  fieldCheck: ReadonlyArray<string | undefined>;
  erased: ReadonlyArray<Record<string, string> | undefined>;
  /** undefined for a record hashed unsalted (content format v2), or a file from before the column. */
  salt: ReadonlyArray<string | undefined>;
}

/** A tiered file's rows as columns, and what each column holds in sum (counts, least and greatest value). */
export interface SummarizedAuditColumns extends AuditFileColumns {
  summaries: ColumnValueSummary[];
}

/**
 * Every row of a tiered file as columns ({@link AuditFileColumns}): what
 * {@link readWholeAuditParquet} reads, refused where it refuses, with the same error. What the
 * verifier reads: a row whose `event_time` is not its `ts` is refused as well (TABLE_INVALID),
 * since the record hash covers `ts` only, while engines partition and filter by `event_time`.
 * Each column's summary comes with them, for checking what the file's commit declares of it.
 */
export async function readWholeAuditColumns(source: ByteSource): Promise<SummarizedAuditColumns> {
  const raw = await readRawColumns(source);
  let columns: AuditFileColumns;
  try {
    columns = columnsOf(raw);
  } catch (err) {
    // Converted column after column, a file with several bad values would name another one
    // first than the row reader does: row by row, it names the same one.
    rowsOf(raw);
    throw err;
  }
  checkFieldIds(raw.footer);
  checkEventTimes(raw.values.get('event_time'), columns);
  checkChainedStrings(raw.values, columns);
  checkRowGroupDeclarations(raw.footer, raw.values);
  await checkFileIndexes(source, raw.footer, raw.values);
  return { ...columns, summaries: summarizeAuditColumns(raw.values, raw.rowCount) };
}

/** Refuses the first row whose `event_time` (µs) is not its `ts` (ms) in microseconds. */
function checkEventTimes(eventTimes: unknown[] | undefined, columns: AuditFileColumns): void {
  if (eventTimes === undefined) return;
  const { timestamp, seq } = columns;
  for (let i = 0; i < columns.rowCount; i++) {
    const micros = eventTimes[i];
    // Null only in a row an outside engine wrote that way (no seq: ts still holds the time). A
    // chained row always has one: without it an engine filtering or partitioning on event_time
    // never returns the row while its hashes (over ts) still verify.
    if ((micros === null || micros === undefined) && seq[i] === undefined) continue;
    if (typeof micros !== 'bigint' || Number(micros) !== (timestamp[i] as number) * 1000) {
      const where = seq[i] === undefined ? `row ${i}` : `row ${i} (seq ${seq[i]})`;
      throw new AuditError(AuditErrorCode.TABLE_INVALID, `tiered file ${where} has event_time ${typeof micros === 'bigint' ? `${micros} µs` : micros === null || micros === undefined ? 'null' : typeof micros}, not its ts ${timestamp[i]} ms: altered (the record hash covers ts, engines read event_time)`);
    }
  }
}

/**
 * Refuses a file whose field ids would make a reader that resolves columns by id (Trino, Spark,
 * icebird) read another column than the verifier reads by name: a column carrying one of
 * auditlake's ids under another name, one id on two columns, or an `iceberg.schema` footer
 * (what icebird maps ids to names by) that names one of those ids otherwise or puts one of
 * those names under another id. presentColumns checks the columns read by name; this checks
 * every other column and the footer's schema (review: a footer patched in place, the same
 * size, made icebird show resource under user_id while every record verified).
 */
function checkFieldIds(footer: ParquetFooter): void {
  const nameOfId = new Map<number, string>(AUDIT_COLUMNS.map((column) => [column.fieldId, column.name]));
  const idOfName = new Map<string, number>(AUDIT_COLUMNS.map((column) => [column.name, column.fieldId]));
  const seen = new Set<number>();
  for (const element of footer.schema.slice(1)) {
    const id = element.field_id;
    if (id === undefined) continue;
    if (seen.has(id)) throw new AuditError(AuditErrorCode.TABLE_INVALID, `tiered file has two columns with field id ${id}: readers resolving columns by id cannot tell which one holds ${nameOfId.get(id) ?? 'it'}`);
    seen.add(id);
    const expected = nameOfId.get(id);
    if (expected !== undefined && element.name !== expected) throw new AuditError(AuditErrorCode.TABLE_INVALID, `tiered file column ${element.name} has field id ${id}, which is ${expected}'s: readers resolving columns by id would read it as ${expected}`);
  }
  const text = footer.key_value_metadata?.find((kv) => kv.key === ICEBERG_SCHEMA_FOOTER_KEY)?.value;
  if (text === undefined) return;
  let fields: unknown;
  try {
    fields = (JSON.parse(text) as { fields?: unknown }).fields;
  } catch {
    throw new AuditError(AuditErrorCode.TABLE_INVALID, `tiered file footer ${ICEBERG_SCHEMA_FOOTER_KEY} is not JSON`);
  }
  if (!Array.isArray(fields)) throw new AuditError(AuditErrorCode.TABLE_INVALID, `tiered file footer ${ICEBERG_SCHEMA_FOOTER_KEY} holds no fields array`);
  for (const field of fields as Array<{ id?: unknown; name?: unknown }>) {
    const expectedName = typeof field.id === 'number' ? nameOfId.get(field.id) : undefined;
    const expectedId = typeof field.name === 'string' ? idOfName.get(field.name) : undefined;
    if ((expectedName !== undefined && field.name !== expectedName) || (expectedId !== undefined && field.id !== expectedId)) {
      throw new AuditError(
        AuditErrorCode.TABLE_INVALID,
        `tiered file footer ${ICEBERG_SCHEMA_FOOTER_KEY} puts ${JSON.stringify(field.name)} under field id ${JSON.stringify(field.id)}; auditlake writes ${expectedName !== undefined ? `${expectedName} under ${String(field.id)}` : `${String(field.name)} under ${expectedId}`}: readers mapping ids by it would show another column under that name`,
      );
    }
  }
}

/** The string columns auditlake writes '' into, never NULL, that a record hash covers. */
const CHAINED_STRING_COLUMNS = ['source', 'user_id', 'action', 'resource', 'tables', 'query', 'details', 'decision'] as const;

/**
 * Refuses the first chained row (one with a record hash) holding NULL in a string column the
 * record hash covers: the reader takes NULL for '' (other writers write it for absent values,
 * in rows without a chain), so the hashes verified, while engines no longer match it by `= ''`
 * and show it as NULL (review).
 */
function checkChainedStrings(values: Map<string, unknown[]>, columns: AuditFileColumns): void {
  for (const name of CHAINED_STRING_COLUMNS) {
    const column = values.get(name);
    if (column === undefined) continue;
    for (let i = 0; i < columns.rowCount; i++) {
      if (column[i] !== null && column[i] !== undefined) continue;
      if (columns.recordHash[i] === undefined) continue;
      const where = columns.seq[i] === undefined ? `row ${i}` : `row ${i} (seq ${columns.seq[i]})`;
      throw new AuditError(AuditErrorCode.TABLE_INVALID, `tiered file ${where} has NULL in ${name}, which auditlake never writes into a chained row: altered (the record hash reads it as '', engines as NULL)`);
    }
  }
}

/** A file's decoded columns before their values are converted. */
interface RawColumns {
  /** Read with exact statistics (string bounds as their stored bytes). */
  footer: ParquetFooter;
  names: AuditColumnName[];
  rowCount: number;
  values: Map<string, unknown[]>;
}

async function readRawColumns(source: ByteSource): Promise<RawColumns> {
  // Exact statistics: the verifier compares string bounds with the values byte for byte
  // (checkRowGroupDeclarations); reading the pages does not look at them.
  const metadata = await readAuditParquetFooter(source, { exactStatistics: true });
  const names = presentColumns(metadata, ALL_COLUMNS);
  const rowCount = Number(metadata.num_rows);
  const values = new Map<string, unknown[]>(names.map((name) => [name, new Array<unknown>(rowCount)]));
  const filled = new Map<string, number>(names.map((name) => [name, 0]));
  await parquetRead({
    file: source,
    metadata,
    columns: names,
    parsers: PARSERS,
    compressors: PAGE_DECOMPRESSORS,
    onChunk: ({ columnName, columnData, rowStart }) => {
      const column = values.get(columnName);
      if (column === undefined) return;
      for (let i = 0; i < columnData.length; i++) column[rowStart + i] = columnData[i];
      filled.set(columnName, (filled.get(columnName) as number) + columnData.length);
    },
  });
  for (const [name, count] of filled) {
    if (count !== rowCount) throw new AuditError(AuditErrorCode.TABLE_INVALID, `tiered file column ${name} holds ${count} values for ${rowCount} rows`);
  }
  return { footer: metadata, names, rowCount, values };
}

function rowsOf({ names, rowCount, values }: RawColumns): TieredEvent[] {
  const events: TieredEvent[] = new Array<TieredEvent>(rowCount);
  // One row object, refilled for each row: eventOf reads it and keeps nothing of it.
  const row: Record<string, unknown> = {};
  const arrays = names.map((name) => [name, values.get(name) as unknown[]] as const);
  for (let i = 0; i < rowCount; i++) {
    for (const [name, column] of arrays) row[name] = column[i];
    events[i] = eventOf(row, names) as TieredEvent;
  }
  return events;
}

/** The columns converted value by value as {@link eventOf} converts them; throws what it throws. */
function columnsOf({ rowCount, values }: RawColumns): AuditFileColumns {
  const absent = (): undefined[] => new Array<undefined>(rowCount).fill(undefined);
  const strings = (name: AuditColumnName): string[] => {
    const column = values.get(name) as unknown[];
    // Most columns hold only strings: the decoded array is then the column as it is.
    let converted: string[] | undefined;
    for (let i = 0; i < rowCount; i++) {
      const value = column[i];
      if (typeof value === 'string') {
        if (converted !== undefined) converted[i] = value;
      } else {
        converted ??= column.slice(0, i) as string[];
        converted[i] = stringOf(name, value);
      }
    }
    return converted ?? (column as string[]);
  };
  const optional = <T>(name: AuditColumnName, convert: (name: AuditColumnName, value: unknown) => T): Array<T | undefined> => {
    const column = values.get(name);
    if (column === undefined) return absent();
    const converted = new Array<T | undefined>(rowCount);
    for (let i = 0; i < rowCount; i++) {
      const value = column[i];
      converted[i] = value === null || value === undefined ? undefined : convert(name, value);
    }
    return converted;
  };
  const numbers = (name: AuditColumnName): number[] => {
    const column = values.get(name) as unknown[];
    const converted = new Array<number>(rowCount);
    for (let i = 0; i < rowCount; i++) converted[i] = msOf(name, column[i]);
    return converted;
  };
  const decision = (values.get('decision') as unknown[]).map((value) => {
    const text = value ?? '';
    if (!isDecision(text)) {
      const shown = typeof text === 'string' ? JSON.stringify(text) : typeof text;
      throw new AuditError(AuditErrorCode.TABLE_INVALID, `tiered file has decision ${shown}`);
    }
    return text;
  });
  return {
    rowCount,
    eventId: strings('event_id'),
    source: strings('source'),
    userId: strings('user_id'),
    action: strings('action'),
    resource: strings('resource'),
    tables: strings('tables'),
    query: strings('query'),
    details: strings('details'),
    decision,
    timestamp: numbers('ts'),
    ingestTs: numbers('ingest_ts'),
    seq: optional('seq', msOf),
    term: optional('term', msOf),
    sourceId: optional('source_id', stringOf),
    sourceSeq: optional('source_seq', msOf),
    recordHash: optional('record_hash', stringOf),
    chainHash: optional('chain_hash', stringOf),
    fieldCheck: optional('field_check', stringOf),
    erased: optional('erased', (name, value) => erasedOf(stringOf(name, value))),
    salt: optional('salt', stringOf),
  };
}

/**
 * Row count and per-row-group `ts` bounds from a file's footer (one or two fetches, no data
 * pages). For tests and for planning reads.
 */
export async function parquetFileStats(source: ByteSource): Promise<ParquetFileStats> {
  return footerStats(await readAuditParquetFooter(source));
}

/** {@link parquetFileStats} of a footer already read. */
export function footerStats(metadata: ParquetFooter): ParquetFileStats {
  return {
    rows: Number(metadata.num_rows),
    rowGroups: metadata.row_groups.map((group) => {
      const { min, max } = tsBounds(group);
      return { rows: Number(group.num_rows), tsMin: min, tsMax: max };
    }),
  };
}

/** A parsed Parquet footer (hyparquet's FileMetaData): the schema, row groups and column chunks. */
export type ParquetFooter = FileMetaData;

/**
 * Parsers that keep string statistics as their stored bytes (decoded as text, a truncated
 * bound that is not whole UTF-8 would not come back byte for byte): for a footer whose row
 * groups are copied into another file (parquet-assembler.ts). Only the footer's statistics are
 * parsed with them.
 */
const EXACT_STATISTICS_PARSERS = { ...PARSERS, stringFromBytes: (bytes: Uint8Array): Uint8Array => bytes } as const;

/**
 * The values of one column in one row group as stored (strings as text, INT64 as bigint, null
 * where a row has none), none converted to an event field: for metrics computed from the
 * values themselves (iceberg-data-file.ts, where a footer statistic does not say enough).
 */
export async function readColumnValues(source: ByteSource, footer: ParquetFooter, column: AuditColumnName, rowGroup: number): Promise<unknown[]> {
  let rowStart = 0;
  for (let i = 0; i < rowGroup; i++) rowStart += Number(footer.row_groups[i]?.num_rows ?? 0);
  const group = footer.row_groups[rowGroup];
  if (group === undefined) throw new RangeError(`row group ${rowGroup} of ${footer.row_groups.length}`);
  const rows = await parquetReadObjects({ file: source, metadata: footer, columns: [column], rowStart, rowEnd: rowStart + Number(group.num_rows), parsers: PARSERS, compressors: PAGE_DECOMPRESSORS });
  return rows.map((row) => (row as Record<string, unknown>)[column]);
}

/**
 * Fetches and parses a file's footer. Throws AuditError AUDIT_TABLE_INVALID when the
 * bytes are not Parquet (hyparquet's plain errors turned into a coded one). With
 * `exactStatistics`, string statistics are kept as their stored bytes (Uint8Array), for a
 * footer whose row groups are copied; other readers want the text.
 */
export async function readAuditParquetFooter(source: ByteSource, options: { exactStatistics?: boolean } = {}): Promise<ParquetFooter> {
  try {
    return await parquetMetadataAsync(source, { initialFetchSize: FOOTER_FETCH_BYTES, parsers: options.exactStatistics === true ? EXACT_STATISTICS_PARSERS : PARSERS });
  } catch (err) {
    // The store's own errors (the object gone, the endpoint unreachable) say what happened; only
    // the parser's are about the bytes.
    if (err instanceof AuditError) throw err;
    throw new AuditError(AuditErrorCode.TABLE_INVALID, `tiered file is not readable Parquet: ${messageOf(err)}`, {
      cause: err,
    });
  }
}

function checkRangeBound(name: string, value: number | undefined): void {
  if (value !== undefined && !Number.isFinite(value)) {
    throw new TypeError(`${name} must be a finite number of epoch ms, got ${value}`);
  }
}

/**
 * Each column read must be in the file with our field id: never read another column by name.
 * Returns the requested columns the file has: a column added by schema evolution may be
 * missing from a file written before it, and is then read as absent.
 */
function presentColumns(metadata: FileMetaData, columns: readonly AuditColumnName[]): AuditColumnName[] {
  const present: AuditColumnName[] = [];
  for (const name of columns) {
    const expected = AUDIT_COLUMNS.find((column) => column.name === name);
    const element = metadata.schema.find((candidate, i) => i > 0 && candidate.name === name);
    if (element === undefined) {
      if (EVOLVED_COLUMNS.has(name)) continue;
      throw new AuditError(AuditErrorCode.TABLE_INVALID, `tiered file has no column ${name}`);
    }
    if (element.field_id !== undefined && element.field_id !== expected?.fieldId) {
      throw new AuditError(
        AuditErrorCode.TABLE_INVALID,
        `tiered file column ${name} has field id ${element.field_id}, expected ${expected?.fieldId}`,
      );
    }
    present.push(name);
  }
  return present;
}

/** Row range of consecutive row groups to read together. */
interface RowRun {
  rowStart: number;
  rowEnd: number;
}

/**
 * Runs of consecutive row groups whose `ts` bounds may overlap [fromMs, toMs]. Consecutive
 * groups are read in one call so hyparquet can coalesce their byte ranges.
 */
function rowGroupRuns(metadata: FileMetaData, fromMs: number, toMs: number, only: readonly number[] | undefined): RowRun[] {
  const runs: RowRun[] = [];
  const wanted = only === undefined ? undefined : new Set(only);
  let groupStart = 0;
  for (const [index, group] of metadata.row_groups.entries()) {
    const groupEnd = groupStart + Number(group.num_rows);
    const { min, max } = tsBounds(group);
    const disjoint = (max !== undefined && max < fromMs) || (min !== undefined && min > toMs);
    if (!disjoint && groupEnd > groupStart && (wanted === undefined || wanted.has(index))) {
      const last = runs.at(-1);
      if (last !== undefined && last.rowEnd === groupStart) last.rowEnd = groupEnd;
      else runs.push({ rowStart: groupStart, rowEnd: groupEnd });
    }
    groupStart = groupEnd;
  }
  return runs;
}

/** The `ts` min/max statistics of a row group, in epoch ms, where the file has them. */
function tsBounds(group: RowGroup): { min: number | undefined; max: number | undefined } {
  const chunk = group.columns.find((column) => column.meta_data?.path_in_schema[0] === 'ts');
  const statistics = chunk?.meta_data?.statistics;
  // min_value/max_value are the current fields; min/max are deprecated (signed order for INT64
  // is the same, so either is a valid bound when it is the only one present).
  return {
    min: toMs(statistics?.min_value ?? statistics?.min),
    max: toMs(statistics?.max_value ?? statistics?.max),
  };
}

function toMs(value: unknown): number | undefined {
  if (typeof value === 'bigint') return Number(value);
  if (typeof value === 'number') return value;
  return undefined;
}

/** The event fields that the read columns of one decoded row hold. */
function eventOf(row: Record<string, unknown>, columns: readonly AuditColumnName[]): Partial<TieredEvent> {
  const event: Partial<TieredEvent> = {};
  for (const name of columns) {
    const value = row[name];
    switch (name) {
      case 'tables':
        event.tables = splitTables(stringOf(name, value));
        break;
      case 'decision': {
        const decision = value ?? '';
        if (!isDecision(decision)) {
          const shown = typeof decision === 'string' ? JSON.stringify(decision) : typeof decision;
          throw new AuditError(AuditErrorCode.TABLE_INVALID, `tiered file has decision ${shown}`);
        }
        event.decision = decision;
        break;
      }
      case 'ts':
        event.timestamp = msOf(name, value);
        break;
      case 'event_time':
        // ts is the exact ms value; event_time fills timestamp only when ts was not read.
        if (!columns.includes('ts')) event.timestamp = msOf(name, value, 1000n);
        break;
      case 'ingest_ts':
        event.ingestTs = msOf(name, value);
        break;
      case 'seq':
      case 'term':
      case 'source_seq':
        // Null where the file has the column but the event had no value (or before the chain).
        if (value !== null && value !== undefined) event[EVENT_FIELD[name]] = msOf(name, value);
        break;
      case 'source_id':
      case 'record_hash':
      case 'chain_hash':
      case 'field_check':
      case 'salt':
        if (value !== null && value !== undefined) event[EVENT_FIELD[name]] = stringOf(name, value);
        break;
      case 'erased':
        if (value !== null && value !== undefined) event.erased = erasedOf(stringOf(name, value));
        break;
      default:
        event[EVENT_FIELD[name]] = stringOf(name, value);
    }
  }
  return event;
}

/** The `erased` column's JSON: field name → kept field hash. */
function erasedOf(text: string): Record<string, string> {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new AuditError(AuditErrorCode.TIER_TARGET_UNUSABLE, 'tiered file column erased holds text that is not JSON');
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value) || !Object.values(value).every((v) => typeof v === 'string')) {
    throw new AuditError(AuditErrorCode.TIER_TARGET_UNUSABLE, 'tiered file column erased must hold a JSON object of strings');
  }
  return value as Record<string, string>;
}

/** A string column's value; NULL (written by other writers for absent values) reads as ''. */
function stringOf(name: AuditColumnName, value: unknown): string {
  if (value === null || value === undefined) return '';
  if (typeof value !== 'string') {
    throw new AuditError(AuditErrorCode.TABLE_INVALID, `tiered file column ${name} holds ${typeof value}, not string`);
  }
  return value;
}

/** An INT64 column's value as epoch ms (dividing micros by `perMs`, flooring toward -∞). */
function msOf(name: AuditColumnName, value: unknown, perMs = 1n): number {
  if (typeof value !== 'bigint') {
    throw new AuditError(AuditErrorCode.TABLE_INVALID, `tiered file column ${name} holds ${typeof value}, not INT64`);
  }
  const quotient = value / perMs;
  const ms = value < 0n && quotient * perMs !== value ? quotient - 1n : quotient;
  return Number(ms);
}

function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
