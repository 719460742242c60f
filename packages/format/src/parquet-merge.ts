import { AuditError, AuditErrorCode } from '@auditlake/model';
import type { TieredEvent } from './audit-columns.js';
import { bytesSource } from './byte-source.js';
import { ParquetFileAssembler, schemaKey, type EncodedRowGroup } from './parquet-assembler.js';
import { footerStats, readAuditParquetFooter, readAuditRows, type ParquetFooter } from './parquet-reader.js';
import { auditParquetSchema } from './parquet-schema.js';
import { encodeAuditParquet, ROW_GROUP_SIZE_DEFAULT } from './parquet-writer.js';
import { rowGroupSketches, type RowGroupSketch } from './row-group-sketch.js';

/**
 * A row group of at least this many rows is copied into a merged file as it is; smaller ones
 * are decoded and re-encoded together into groups of {@link ROW_GROUP_SIZE_DEFAULT} rows. It
 * is the sweep's default batch (`auditlake.audit.tier.batch.size`, 5,000), which is the group
 * a busy node's sweep files hold: those are copied, never decoded. A group of half the default
 * size costs readers one more footer entry and statistics check per 5,000 rows, where
 * re-encoding it would cost about 40 µs an event of CPU to save that; a sweep of a quiet node
 * (tens or hundreds of events) gives groups worth merging.
 */
export const COPY_ROW_GROUP_ROWS_MIN = ROW_GROUP_SIZE_DEFAULT / 2;

/** One file to merge: its bytes, its name (for messages) and the rows it must hold. */
export interface MergeInput {
  bytes: Uint8Array;
  name: string;
  expectedRows: number;
}

/** One merged file. */
export interface MergedFile {
  bytes: Uint8Array;
  rows: number;
  /** Least and greatest `ts` (epoch ms) of its rows, from its row groups' statistics. */
  tsMin: number;
  tsMax: number;
}

/** What a merge did, for tests and measurements. */
export interface MergeStats {
  rowGroupsCopied: number;
  rowGroupsEncoded: number;
  /** The most decoded rows held at once: never more than {@link ROW_GROUP_SIZE_DEFAULT}. */
  decodedRowsHeldMax: number;
}

export interface MergeOptions {
  /**
   * A file is finished before a row group would take it past this many rows: a file holds at
   * most this many unless one copied group alone holds more (a group is never split).
   * Re-encoded groups hold at most this many rows.
   */
  rowsPerFile: number;
  /** Footer key-value metadata of every merged file (`iceberg.schema`); the row-group sketches are added. */
  kvMetadata: Readonly<Record<string, string>>;
}

/** The Parquet schema our writer writes, as {@link schemaKey} compares it. */
const WRITER_SCHEMA_KEY = schemaKey(auditParquetSchema());

/**
 * Merges tiered Parquet files into files of at most `rowsPerFile` rows (a compaction), with
 * exactly the inputs' rows, in bounded memory: row groups of at least
 * {@link COPY_ROW_GROUP_ROWS_MIN} rows are copied byte for byte (parquet-assembler.ts); rows of
 * smaller groups are decoded a slice at a time into one pending group, which is encoded as soon
 * as it holds {@link ROW_GROUP_SIZE_DEFAULT} rows (or `rowsPerFile`, if fewer), so no more than that many rows are ever
 * decoded at once. Inputs are taken one after another from `inputs` (an iterator may hand them
 * out as it fetches them) and nothing of one is kept once its groups are taken.
 *
 * An input is re-encoded whole, never copied, when its Parquet schema is not the writer's (a
 * file written before a schema evolution: its rows are written under the current schema, the
 * new columns null) or it has no usable row-group sketch (a merged footer carries one per group,
 * and a sketch is built from rows). Row groups keep their order (the copied ones as they were,
 * each re-encoded one sorted by `ts` within itself); a merged file is therefore sorted by `ts`
 * within each row group, not across them, which is all any reader of ours assumes.
 *
 * Throws AuditError AUDIT_TABLE_INVALID for an input that is not a tiered file or does not hold
 * `expectedRows` rows.
 */
export async function mergeAuditParquetFiles(inputs: Iterable<MergeInput> | AsyncIterable<MergeInput>, options: MergeOptions): Promise<{ files: MergedFile[]; stats: MergeStats }> {
  const { rowsPerFile, kvMetadata } = options;
  if (!Number.isSafeInteger(rowsPerFile) || rowsPerFile < 1) throw new TypeError(`rowsPerFile must be a positive integer, got ${rowsPerFile}`);
  const stats: MergeStats = { rowGroupsCopied: 0, rowGroupsEncoded: 0, decodedRowsHeldMax: 0 };
  // A re-encoded group never holds more rows than a file may.
  const groupRows = Math.min(ROW_GROUP_SIZE_DEFAULT, rowsPerFile);
  const files: MergedFile[] = [];
  let file = new FileInProgress(kvMetadata);
  let pending: TieredEvent[] = [];

  const add = (group: EncodedRowGroup) => {
    const rows = Number(group.footer.row_groups[group.index]?.num_rows ?? 0);
    if (file.assembler.rows > 0 && file.assembler.rows + rows > rowsPerFile) {
      files.push(file.finish());
      file = new FileInProgress(kvMetadata);
    }
    file.add(group);
  };
  const encodePending = async () => {
    const events = pending;
    pending = [];
    const bytes = encodeAuditParquet(events, { rowGroupSize: events.length });
    const footer = await readAuditParquetFooter(bytesSource(bytes), { exactStatistics: true });
    add({ bytes, footer, index: 0, sketch: rowGroupSketches(footer)[0] as RowGroupSketch });
    stats.rowGroupsEncoded++;
  };

  let rowsIn = 0;
  for await (const input of inputs) {
    const source = bytesSource(input.bytes);
    const footer = await readAuditParquetFooter(source, { exactStatistics: true });
    if (Number(footer.num_rows) !== input.expectedRows) {
      throw new AuditError(AuditErrorCode.TABLE_INVALID, `${input.name} holds ${footer.num_rows} rows, its manifest entry says ${input.expectedRows}`);
    }
    rowsIn += input.expectedRows;
    const sketches = copyableSketches(footer);
    let rowStart = 0;
    for (const [index, group] of footer.row_groups.entries()) {
      const rows = Number(group.num_rows);
      const sketch = sketches?.[index];
      if (sketch !== undefined && rows >= COPY_ROW_GROUP_ROWS_MIN) {
        add({ bytes: input.bytes, footer, index, sketch });
        stats.rowGroupsCopied++;
      } else {
        // Decoded a slice at a time: the pending group never holds more than one group's rows.
        for (let taken = 0; taken < rows; ) {
          const count = Math.min(rows - taken, groupRows - pending.length);
          const events = (await readAuditRows(source, footer, { rowGroups: [index], rowStart: rowStart + taken, rowEnd: rowStart + taken + count })) as TieredEvent[];
          if (events.length !== count) throw new AuditError(AuditErrorCode.TABLE_INVALID, `${input.name}: row group ${index} gave ${events.length} of ${count} rows`);
          for (const event of events) pending.push(event);
          stats.decodedRowsHeldMax = Math.max(stats.decodedRowsHeldMax, pending.length);
          taken += count;
          if (pending.length === groupRows) await encodePending();
        }
      }
      rowStart += rows;
    }
  }
  if (pending.length > 0) await encodePending();
  if (file.assembler.rows > 0) files.push(file.finish());
  const rowsOut = files.reduce((sum, merged) => sum + merged.rows, 0);
  if (rowsOut !== rowsIn) throw new Error(`assertion failed: a merge read ${rowsIn} rows and wrote ${rowsOut}`);
  return { files, stats };
}

/** The sketch of each row group of a file whose groups may be copied; undefined when none may. */
function copyableSketches(footer: ParquetFooter): RowGroupSketch[] | undefined {
  if (schemaKey(footer.schema) !== WRITER_SCHEMA_KEY) return undefined;
  const sketches = rowGroupSketches(footer);
  return sketches.every((sketch) => sketch !== undefined) ? (sketches as RowGroupSketch[]) : undefined;
}

/** A merged file being assembled, with its `ts` range. */
class FileInProgress {
  readonly assembler: ParquetFileAssembler;
  #tsMin = Number.MAX_SAFE_INTEGER;
  #tsMax = Number.MIN_SAFE_INTEGER;

  constructor(kvMetadata: Readonly<Record<string, string>>) {
    this.assembler = new ParquetFileAssembler(kvMetadata);
  }

  add(group: EncodedRowGroup): void {
    const { tsMin, tsMax } = footerStats(group.footer).rowGroups[group.index] ?? {};
    if (tsMin === undefined || tsMax === undefined) throw new AuditError(AuditErrorCode.TABLE_INVALID, 'a tiered file row group has no ts statistics');
    this.assembler.addRowGroup(group);
    this.#tsMin = Math.min(this.#tsMin, tsMin);
    this.#tsMax = Math.max(this.#tsMax, tsMax);
  }

  finish(): MergedFile {
    const rows = this.assembler.rows;
    return { bytes: this.assembler.finish(), rows, tsMin: this.#tsMin, tsMax: this.#tsMax };
  }
}
