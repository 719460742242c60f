import { AUDIT_COLUMNS, type AuditRow, type TieredEvent } from './audit-columns.js';
import { assembleColumnChunks, encodeColumnChunks, packColumn, unpackColumn, type EncodedColumnChunks, type PackedColumn } from './column-chunk-writer.js';
import { auditColumnSources, auditRows, checkedRowGroupSize, SKETCHED_COLUMNS, tierFileKvMetadata, type EncodeAuditParquetOptions } from './parquet-writer.js';

/**
 * The columns a second thread encodes when one file is encoded on two
 * ({@link splitAuditParquet}): the costliest ones that are mostly distinct (each value's bytes
 * packed once, no shared arrays lost) or INT64 arrays that travel as they are. Chosen by
 * measured cost: on the bench's 5,000 events these are about half of the column-writing time,
 * which with the row-group sketch the first thread builds meanwhile balances the two threads.
 */
export const SECOND_THREAD_COLUMNS: readonly string[] = ['event_id', 'ts', 'query', 'details', 'event_time', 'ingest_ts', 'record_hash', 'chain_hash', 'field_check'];

/** Options of {@link splitAuditParquet}. */
export interface SplitAuditParquetOptions extends EncodeAuditParquetOptions {
  /**
   * The columns the second thread encodes (default {@link SECOND_THREAD_COLUMNS}): byte-array
   * or non-null INT64 columns, and none of {@link SKETCHED_COLUMNS} (the sketches are built
   * here, from the distinct values found while transposing those).
   */
  secondColumns?: readonly string[];
  /**
   * `events.map(toRow)`, when the caller built it already (a worker does, part by part, while
   * the rest of the events are still being handed over); sorted here.
   */
  rows?: AuditRow[];
}

/**
 * One tier file being encoded on two threads. This thread built the rows and packed the
 * second thread's columns ({@link second}, whose arrays are transferable); the second thread
 * encodes them with {@link encodePackedColumns}; meanwhile this one calls {@link encodeFirst};
 * {@link assemble} then gives the file, byte for byte what {@link encodeAuditParquet} writes.
 */
export interface SplitAuditParquet {
  readonly rowGroupSize: number;
  readonly second: PackedColumn[];
  /** Encodes this thread's columns and the row-group sketches (once, after `second` is sent). */
  encodeFirst(): void;
  /** The file, given the chunks of the second thread's columns. */
  assemble(second: EncodedColumnChunks): Uint8Array;
}

/**
 * Starts encoding `events` as a tier file on two threads (see {@link SplitAuditParquet}).
 * Throws as encodeAuditParquet does.
 */
export function splitAuditParquet(events: readonly TieredEvent[], options: SplitAuditParquetOptions = {}): SplitAuditParquet {
  const rowGroupSize = checkedRowGroupSize(events, options);
  const secondNames = new Set(options.secondColumns ?? SECOND_THREAD_COLUMNS);
  const sketched = SKETCHED_COLUMNS.filter((name) => secondNames.has(name));
  if (sketched.length > 0) throw new TypeError(`the row-group sketches are built on the first thread, so ${sketched.join(', ')} cannot be encoded on the second`);
  const firstNames = new Set<string>(AUDIT_COLUMNS.map((c) => c.name).filter((name) => !secondNames.has(name)));
  if (options.rows !== undefined && options.rows.length !== events.length) throw new Error('assertion failed: a row per event');
  // Array.prototype.sort is stable: as auditRows orders them.
  const rows: AuditRow[] = options.rows !== undefined ? options.rows.sort((a, b) => a.ts - b.ts) : auditRows(events);
  const second = auditColumnSources(rows, rowGroupSize, false, secondNames).columns.map(packColumn);
  let first: { chunks: EncodedColumnChunks; kv: ReturnType<typeof tierFileKvMetadata> } | undefined;
  return {
    rowGroupSize,
    second,
    encodeFirst() {
      if (first !== undefined) throw new Error('assertion failed: encodeFirst called twice');
      const { columns, sketches } = auditColumnSources(rows, rowGroupSize, options.rowGroupSketches !== false, firstNames);
      first = { chunks: encodeColumnChunks(columns, rowGroupSize), kv: tierFileKvMetadata(options.kvMetadata, sketches) };
    },
    assemble(secondChunks) {
      if (first === undefined) throw new Error('assertion failed: assemble before encodeFirst');
      return assembleColumnChunks([first.chunks, secondChunks], first.kv);
    },
  };
}

/** The second thread's part of a {@link SplitAuditParquet}: its packed columns' chunks. */
export function encodePackedColumns(columns: readonly PackedColumn[], rowGroupSize: number): EncodedColumnChunks {
  return encodeColumnChunks(columns.map(unpackColumn), rowGroupSize);
}
