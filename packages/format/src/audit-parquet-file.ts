import { columnChunkMayContain, isPrefilterNeedle } from './column-text-probe.js';
import type { AuditColumnName, TieredEvent } from './audit-columns.js';
import type { ByteSource } from './byte-source.js';
import type { TextProbePool } from './text-probe-pool.js';
import { footerStats, readAuditParquetFooter, readAuditRows, type ParquetFooter, type ReadAuditParquetOptions, type RowGroupStats } from './parquet-reader.js';

/** A row group's place in its file, with its `ts` statistics. */
export interface RowGroupSpan extends RowGroupStats {
  /** Index of the group in the file. */
  index: number;
  /** First row of the group in the file. */
  rowStart: number;
  /** One past the group's last row. */
  rowEnd: number;
}

/**
 * One tiered Parquet file opened for reading: its footer parsed once, then any number of
 * reads of its row groups through `source`. Data files never change once committed, so a
 * footer may come from a cache instead of the file.
 */
export class AuditParquetFile {
  readonly source: ByteSource;
  readonly footer: ParquetFooter;
  readonly rowGroups: readonly RowGroupSpan[];

  private constructor(source: ByteSource, footer: ParquetFooter) {
    this.source = source;
    this.footer = footer;
    let rowStart = 0;
    this.rowGroups = footerStats(footer).rowGroups.map((stats, index) => {
      const span = { ...stats, index, rowStart, rowEnd: rowStart + stats.rows };
      rowStart = span.rowEnd;
      return span;
    });
  }

  /**
   * Opens `source`, reading its footer unless `footer` (the same file's, from a cache) is
   * given. Throws AuditError AUDIT_TABLE_INVALID when the bytes are not Parquet.
   */
  static async open(source: ByteSource, footer?: ParquetFooter): Promise<AuditParquetFile> {
    return new AuditParquetFile(source, footer ?? (await readAuditParquetFooter(source)));
  }

  /** The events of the file (or of `options.rowGroups`), as {@link readAuditRows} reads them. */
  read(options: ReadAuditParquetOptions & { columns?: undefined }): Promise<TieredEvent[]>;
  read(options: ReadAuditParquetOptions): Promise<Partial<TieredEvent>[]>;
  read(options: ReadAuditParquetOptions): Promise<Partial<TieredEvent>[]> {
    return readAuditRows(this.source, this.footer, options);
  }

  /**
   * The events of row group `index` in [fromMs, toMs] that can be among the `count` newest of
   * the group's events in that range, reading as little as it can: the group's `ts` column
   * first, then all columns of only the rows from the first to the last such row (for files
   * sorted by time, as ours are, a tail of the group: its earlier pages are not decompressed).
   * Every row with a `ts` at or above the `count`-th newest is returned, ties included, so a
   * caller merging several groups newest first loses nothing a page of `count` could hold.
   */
  async readNewest(index: number, options: { fromMs?: number; toMs?: number; count: number; columns?: readonly AuditColumnName[] }): Promise<TieredEvent[]> {
    const group = this.rowGroups[index];
    if (group === undefined) throw new RangeError(`row group ${index} of ${this.rowGroups.length}`);
    if (!Number.isSafeInteger(options.count) || options.count < 1) throw new TypeError(`count must be a positive integer, got ${options.count}`);
    const fromMs = options.fromMs ?? -Infinity;
    const toMs = options.toMs ?? Infinity;
    const range = {
      ...(options.fromMs !== undefined ? { fromMs: options.fromMs } : {}),
      ...(options.toMs !== undefined ? { toMs: options.toMs } : {}),
      ...(options.columns !== undefined ? { columns: options.columns } : {}),
    };
    if (group.rows <= options.count) return this.read({ ...range, rowGroups: [index] }) as Promise<TieredEvent[]>;
    const times = await this.read({ rowGroups: [index], columns: ['ts'] });
    const inRange = times.map((row) => row.timestamp as number).filter((ts) => ts >= fromMs && ts <= toMs);
    if (inRange.length <= options.count) return this.read({ ...range, rowGroups: [index] }) as Promise<TieredEvent[]>;
    const threshold = inRange.sort((a, b) => b - a)[options.count - 1] as number;
    let first = -1;
    let last = -1;
    times.forEach((row, i) => {
      const ts = row.timestamp as number;
      if (ts >= threshold && ts <= toMs) {
        if (first === -1) first = i;
        last = i;
      }
    });
    const events = (await this.read({ ...range, rowGroups: [index], rowStart: group.rowStart + first, rowEnd: group.rowStart + last + 1 })) as TieredEvent[];
    return events.filter((event) => event.timestamp >= threshold);
  }

  /**
   * Whether a row in row group `index` may hold `needle` (lower-case) in one of `columns`,
   * lower-cased — the free-text prefilter (column-text-probe.ts). False only when no row can:
   * the group can then be skipped without decoding a value. A needle the prefilter cannot
   * answer for gives true. See {@link rowGroupsMayContainText}.
   */
  async rowGroupMayContainText(index: number, needle: string, columns: readonly AuditColumnName[], pool?: TextProbePool): Promise<boolean> {
    return (await this.rowGroupsMayContainText([index], needle, columns, pool))[0] as boolean;
  }

  /**
   * {@link rowGroupMayContainText} for several row groups, answered in their order. The
   * columns' chunks of all of them are fetched in one request (from the first chunk to the
   * last, so also what lies between: pass groups next to each other), and searched in one
   * worker of `pool` when given — a request and a message cost more than the bytes between.
   */
  async rowGroupsMayContainText(indexes: readonly number[], needle: string, columns: readonly AuditColumnName[], pool?: TextProbePool): Promise<boolean[]> {
    const perGroup = indexes.map((index) => {
      const group = this.footer.row_groups[index];
      if (group === undefined) throw new RangeError(`row group ${index} of ${this.footer.row_groups.length}`);
      const chunks = group.columns
        .map((chunk) => chunk.meta_data)
        .filter((meta) => meta !== undefined && (columns as readonly string[]).includes(meta.path_in_schema[0] ?? ''))
        .map((meta) => {
          const start = Number(meta!.dictionary_page_offset ?? meta!.data_page_offset);
          return { meta: meta!, start, end: start + Number(meta!.total_compressed_size) };
        });
      // Cheapest first (dictionary-encoded columns are a few KB): one match ends the search.
      return chunks.sort((a, b) => Number(a.meta.total_uncompressed_size - b.meta.total_uncompressed_size));
    });
    // A column that is not there cannot be searched: decide exactly (and let the reader report it).
    const searchable = isPrefilterNeedle(needle) && perGroup.every((chunks) => chunks.length === columns.length);
    if (!searchable || indexes.length === 0) return indexes.map(() => true);
    const all = perGroup.flat();
    // A loop, not Math.min(...): a file of many row groups has more chunks than a call takes arguments.
    let spanStart = Infinity;
    let spanEnd = -Infinity;
    for (const c of all) {
      if (c.start < spanStart) spanStart = c.start;
      if (c.end > spanEnd) spanEnd = c.end;
    }
    const span = new Uint8Array(await this.source.slice(spanStart, spanEnd));
    const needleBytes = new TextEncoder().encode(needle);
    const relative = perGroup.map((chunks) => chunks.map((c) => ({ start: c.start - spanStart, end: c.end - spanStart, meta: c.meta })));
    if (pool) return pool.probe(span, relative, needleBytes);
    return relative.map((chunks) => chunks.some((c) => columnChunkMayContain(span.subarray(c.start, c.end), c.meta, needleBytes)));
  }
}
