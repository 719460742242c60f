import { AuditParquetFile, bytesSource, dataFileFromParquet, encodeAuditParquet, type DataFile, type TieredEvent } from '@auditlake/format';
import { AuditError, AuditErrorCode } from '@auditlake/model';

/** What a data file needs beside its bytes: where it goes and what its footer says. */
export interface TierFileShape {
  /** Footer key-value metadata (`iceberg.schema` for Iceberg data files, `auditlake.firstSeq` for Parquet mode). */
  kvMetadata: Readonly<Record<string, string>>;
  /** Also build the Iceberg `data_file` record (its `file_path` is left empty: the caller names the file). */
  icebergDataFile: boolean;
}

/** One encoded tier file: its bytes and what a commit records about it. */
export interface EncodedTierFile {
  bytes: Uint8Array;
  rows: number;
  /** Least and greatest event time (epoch ms) of its rows. */
  tsMin: number;
  tsMax: number;
  /** The Iceberg `data_file` record with an empty `file_path`, when asked for. */
  dataFile?: DataFile;
}

/** One input of a rewrite: a tier file's bytes, its name (for messages) and the rows it must hold. */
export interface RewriteInput {
  bytes: Uint8Array;
  name: string;
  expectedRows: number;
}

/**
 * Encodes tier files: the CPU-heavy part of a sweep and of a compaction (about 40 µs an event
 * to encode, a tenth of that to build the data-file record, as much again to decode a file
 * being compacted). {@link INLINE_TIER_FILE_ENCODER} does it on the calling thread;
 * `TierEncodePool` in worker threads, so the event loop that ingests is not blocked by it.
 */
export interface TierFileEncoder {
  /** One Parquet tier file of `events` (all of one event day when an Iceberg record is asked for). */
  encode(events: readonly TieredEvent[], shape: TierFileShape): Promise<EncodedTierFile>;
  /**
   * The rows of `inputs`, in input order, rewritten as files of at most `rowsPerFile` rows (a
   * compaction). Each input must hold exactly `expectedRows` rows, else AUDIT_TABLE_INVALID
   * naming it; the rows out always equal the rows in. The inputs' bytes are the encoder's
   * from then on (a worker pool moves them to its thread): the caller must not read them again.
   */
  rewrite(inputs: readonly RewriteInput[], rowsPerFile: number, shape: TierFileShape): Promise<EncodedTierFile[]>;
}

/** The placeholder path of a data-file record built before its file is named. */
const UNNAMED = '';

/** {@link TierFileEncoder.encode} on this thread. */
export function encodeTierFile(events: readonly TieredEvent[], shape: TierFileShape): EncodedTierFile {
  const bytes = encodeAuditParquet(events, { kvMetadata: shape.kvMetadata });
  let tsMin = Number.MAX_SAFE_INTEGER;
  let tsMax = 0;
  for (const event of events) {
    if (event.timestamp < tsMin) tsMin = event.timestamp;
    if (event.timestamp > tsMax) tsMax = event.timestamp;
  }
  const file: EncodedTierFile = { bytes, rows: events.length, tsMin, tsMax };
  if (shape.icebergDataFile) file.dataFile = dataFileFromParquet({ events, filePath: UNNAMED, fileSizeBytes: bytes.byteLength, parquetBytes: bytes });
  return file;
}

/** {@link TierFileEncoder.rewrite} on this thread. */
export async function rewriteTierFiles(inputs: readonly RewriteInput[], rowsPerFile: number, shape: TierFileShape): Promise<EncodedTierFile[]> {
  if (!Number.isSafeInteger(rowsPerFile) || rowsPerFile < 1) throw new TypeError(`rowsPerFile must be a positive integer, got ${rowsPerFile}`);
  const rows: TieredEvent[] = [];
  for (const input of inputs) {
    const events = await (await AuditParquetFile.open(bytesSource(input.bytes))).read({});
    if (events.length !== input.expectedRows) {
      throw new AuditError(AuditErrorCode.TABLE_INVALID, `${input.name} holds ${events.length} rows, its manifest entry says ${input.expectedRows}`);
    }
    for (const event of events) rows.push(event);
  }
  const files: EncodedTierFile[] = [];
  for (let start = 0; start < rows.length; start += rowsPerFile) files.push(encodeTierFile(rows.slice(start, start + rowsPerFile), shape));
  const rowsOut = files.reduce((sum, file) => sum + file.rows, 0);
  if (rowsOut !== rows.length) throw new Error(`assertion failed: a rewrite read ${rows.length} rows and wrote ${rowsOut}`);
  return files;
}

/** Encodes on the calling thread (tests, tools, and a node configured with no encoder threads). */
export const INLINE_TIER_FILE_ENCODER: TierFileEncoder = {
  encode: (events, shape) => Promise.resolve().then(() => encodeTierFile(events, shape)),
  rewrite: (inputs, rowsPerFile, shape) => rewriteTierFiles(inputs, rowsPerFile, shape),
};
