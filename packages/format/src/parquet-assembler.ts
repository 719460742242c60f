import { AuditError, AuditErrorCode } from '@auditlake/model';
import { readOffsetIndex, type ColumnChunk, type KeyValue, type RowGroup, type SchemaElement } from 'hyparquet';
import { ByteWriter } from 'hyparquet-writer/src/bytewriter.js';
import { writeMetadata } from 'hyparquet-writer/src/metadata.js';
import { serializeTCompactProtocol } from 'hyparquet-writer/src/thrift.js';
import type { ParquetFooter } from './parquet-reader.js';
import { PARQUET_CREATED_BY } from './parquet-write-settings.js';
import { encodeRowGroupSketches, ROW_GROUP_SKETCH_KEY, type RowGroupSketch } from './row-group-sketch.js';

/** `PAR1`, little-endian: a Parquet file begins and ends with it. */
const PARQUET_MAGIC = 0x31524150;

/**
 * One row group of an encoded Parquet file, to be copied as it is: the whole file's bytes (its
 * column, offset and column indexes and Bloom filters lie outside the group's own range), the
 * file's footer read with {@link readAuditParquetFooter}'s `exactStatistics`, so that string
 * statistics are the stored bytes, and the group's row-group sketch.
 */
export interface EncodedRowGroup {
  bytes: Uint8Array;
  footer: ParquetFooter;
  index: number;
  sketch: RowGroupSketch;
}

/** A byte range of the output, with where it is copied from. */
interface Part {
  bytes: Uint8Array;
}

/** Per copied column chunk, what goes after the row groups (each placed at finish). */
interface ChunkTail {
  chunk: ColumnChunk;
  columnIndex: Uint8Array | undefined;
  offsetIndex: Uint8Array | undefined;
  bloomFilter: Uint8Array | undefined;
}

/**
 * Builds one Parquet file out of row groups that are already encoded, copying their column
 * chunks byte for byte: no page is decompressed or decoded. Pages hold no file offsets, so a
 * chunk copied to another place stays valid once every offset that points into it is moved by
 * the same distance: in the footer `data_page_offset`, `dictionary_page_offset`,
 * `index_page_offset` and the chunk's `file_offset`, and in its offset index every page
 * location (the offset index is therefore re-serialized; the column index and the Bloom filter
 * hold no offsets and are copied). The file is laid out as hyparquet-writer lays out its own:
 * row groups, then column indexes, offset indexes and Bloom filters, then the footer, whose
 * statistics, encodings and sizes are the source footers' (only offsets change).
 *
 * Every row group must have the same Parquet schema (the first one's); another is refused with
 * AUDIT_PARQUET_SCHEMA_MISMATCH. Column chunks stored in another file or encrypted are refused
 * the same way (AUDIT_TABLE_INVALID): they cannot be copied. The footer's key-value metadata is
 * `kvMetadata` plus the row-group sketches of the groups in their order.
 */
export class ParquetFileAssembler {
  readonly #kvMetadata: Readonly<Record<string, string>>;
  readonly #parts: Part[] = [];
  readonly #rowGroups: RowGroup[] = [];
  readonly #tails: ChunkTail[] = [];
  readonly #sketches: RowGroupSketch[] = [];
  #schema: SchemaElement[] | undefined;
  #schemaKey: string | undefined;
  #version = 2;
  /** Bytes written so far (the next chunk's offset). */
  #offset = 4;
  #rows = 0;
  #finished = false;

  constructor(kvMetadata: Readonly<Record<string, string>> = {}) {
    this.#kvMetadata = kvMetadata;
  }

  /** Rows of the row groups added so far. */
  get rows(): number {
    return this.#rows;
  }

  get rowGroups(): number {
    return this.#rowGroups.length;
  }

  /** Appends row group `group.index` of its file, copying its column chunks. */
  addRowGroup(group: EncodedRowGroup): void {
    if (this.#finished) throw new Error('assertion failed: a finished ParquetFileAssembler was given a row group');
    const { bytes, footer } = group;
    const source = footer.row_groups[group.index];
    if (source === undefined) throw new RangeError(`row group ${group.index} of ${footer.row_groups.length}`);
    this.#checkSchema(footer);
    if (group.sketch.rows !== Number(source.num_rows)) {
      throw new Error(`assertion failed: a row-group sketch of ${group.sketch.rows} rows for a group of ${source.num_rows}`);
    }
    const columns: ColumnChunk[] = [];
    let compressed = 0n;
    let firstDelta: bigint | undefined;
    for (const chunk of source.columns) {
      const meta = chunk.meta_data;
      if (meta === undefined || chunk.file_path !== undefined || chunk.encrypted_column_metadata !== undefined || chunk.crypto_metadata !== undefined) {
        throw new AuditError(AuditErrorCode.TABLE_INVALID, 'a Parquet column chunk stored in another file or encrypted cannot be copied; rewrite the file instead');
      }
      const start = Number(meta.dictionary_page_offset ?? meta.data_page_offset);
      const length = Number(meta.total_compressed_size);
      if (start < 4 || start + length > bytes.byteLength) throw new AuditError(AuditErrorCode.TABLE_INVALID, `a Parquet column chunk lies outside its file (${start}+${length} of ${bytes.byteLength} bytes)`);
      // A copy, not a view: the source file's buffer is released once its groups are taken.
      this.#parts.push({ bytes: bytes.slice(start, start + length) });
      const delta = BigInt(this.#offset - start);
      firstDelta ??= delta;
      this.#offset += length;
      compressed += meta.total_compressed_size;
      const moved: ColumnChunk = {
        ...chunk,
        // Required by the format; a writer that leaves it 0 (not an offset) keeps 0.
        file_offset: chunk.file_offset > 0n ? chunk.file_offset + delta : chunk.file_offset,
        meta_data: {
          ...meta,
          data_page_offset: meta.data_page_offset + delta,
          ...(meta.dictionary_page_offset !== undefined ? { dictionary_page_offset: meta.dictionary_page_offset + delta } : {}),
          ...(meta.index_page_offset !== undefined ? { index_page_offset: meta.index_page_offset + delta } : {}),
        },
      };
      this.#tails.push({
        chunk: moved,
        columnIndex: range(bytes, chunk.column_index_offset, chunk.column_index_length),
        offsetIndex: movedOffsetIndex(bytes, chunk.offset_index_offset, chunk.offset_index_length, delta),
        bloomFilter: range(bytes, meta.bloom_filter_offset, meta.bloom_filter_length),
      });
      columns.push(moved);
    }
    this.#rowGroups.push({
      ...source,
      columns,
      total_compressed_size: compressed,
      ...(source.file_offset !== undefined ? { file_offset: source.file_offset + (firstDelta ?? 0n) } : {}),
    });
    this.#sketches.push(group.sketch);
    this.#rows += Number(source.num_rows);
  }

  /** The whole file. The assembler takes no more groups afterwards. */
  finish(): Uint8Array {
    if (this.#finished) throw new Error('assertion failed: ParquetFileAssembler.finish called twice');
    if (this.#schema === undefined) throw new TypeError('a Parquet file needs at least one row group');
    this.#finished = true;
    // Column indexes, then offset indexes, then Bloom filters, as hyparquet-writer orders them.
    for (const tail of this.#tails) {
      if (tail.columnIndex === undefined) continue;
      tail.chunk.column_index_offset = BigInt(this.#offset);
      tail.chunk.column_index_length = tail.columnIndex.byteLength;
      this.#append(tail.columnIndex);
    }
    for (const tail of this.#tails) {
      if (tail.offsetIndex === undefined) continue;
      tail.chunk.offset_index_offset = BigInt(this.#offset);
      tail.chunk.offset_index_length = tail.offsetIndex.byteLength;
      this.#append(tail.offsetIndex);
    }
    for (const tail of this.#tails) {
      if (tail.bloomFilter === undefined || tail.chunk.meta_data === undefined) continue;
      tail.chunk.meta_data.bloom_filter_offset = BigInt(this.#offset);
      tail.chunk.meta_data.bloom_filter_length = tail.bloomFilter.byteLength;
      this.#append(tail.bloomFilter);
    }
    const kv: KeyValue[] = Object.entries(this.#kvMetadata).map(([key, value]) => ({ key, value }));
    kv.push({ key: ROW_GROUP_SKETCH_KEY, value: encodeRowGroupSketches(this.#sketches) });
    const footer = new ByteWriter();
    // String statistics are the stored bytes (exactStatistics) and are written back as they
    // are: nothing is truncated again (Infinity), so every statistic keeps its bytes.
    writeMetadata(
      footer,
      {
        version: this.#version,
        schema: this.#schema,
        num_rows: BigInt(this.#rows),
        row_groups: this.#rowGroups,
        key_value_metadata: kv,
        created_by: PARQUET_CREATED_BY,
      } as unknown as Parameters<typeof writeMetadata>[1],
      Infinity,
    );
    footer.appendUint32(PARQUET_MAGIC);
    const tail = new Uint8Array(footer.getBuffer());
    const out = new Uint8Array(this.#offset + tail.byteLength);
    new DataView(out.buffer).setUint32(0, PARQUET_MAGIC, true);
    let at = 4;
    for (const part of this.#parts) {
      out.set(part.bytes, at);
      at += part.bytes.byteLength;
    }
    out.set(tail, at);
    this.#parts.length = 0;
    return out;
  }

  #append(bytes: Uint8Array): void {
    this.#parts.push({ bytes });
    this.#offset += bytes.byteLength;
  }

  #checkSchema(footer: ParquetFooter): void {
    const key = schemaKey(footer.schema);
    if (this.#schemaKey === undefined) {
      this.#schema = footer.schema;
      this.#schemaKey = key;
      this.#version = footer.version;
      return;
    }
    if (key !== this.#schemaKey) {
      throw new AuditError(AuditErrorCode.PARQUET_SCHEMA_MISMATCH, 'row groups of Parquet files with different schemas cannot be copied into one file; re-encode the rows under one schema instead');
    }
  }
}

/** A canonical text of a Parquet schema: equal exactly when the schemas are. */
export function schemaKey(schema: readonly SchemaElement[]): string {
  return JSON.stringify(
    schema.map((e) => [
      e.type ?? null,
      e.type_length ?? null,
      e.repetition_type ?? null,
      e.name,
      e.num_children ?? null,
      e.converted_type ?? null,
      e.scale ?? null,
      e.precision ?? null,
      e.field_id ?? null,
      // Keys sorted: a parsed logical type and one written by hand list them in another order.
      e.logical_type === undefined ? null : Object.entries(e.logical_type).filter(([, value]) => value !== undefined).sort(([a], [b]) => a.localeCompare(b)),
    ]),
  );
}

/** The bytes at [offset, offset + length) of a file, copied; undefined when the footer points at none. */
function range(bytes: Uint8Array, offset: bigint | undefined, length: number | undefined): Uint8Array | undefined {
  if (offset === undefined || length === undefined) return undefined;
  const start = Number(offset);
  if (start < 4 || start + length > bytes.byteLength) throw new AuditError(AuditErrorCode.TABLE_INVALID, `a Parquet index or Bloom filter lies outside its file (${start}+${length} of ${bytes.byteLength} bytes)`);
  return bytes.slice(start, start + length);
}

/** A chunk's offset index with every page location moved by `delta`, serialized again. */
function movedOffsetIndex(bytes: Uint8Array, offset: bigint | undefined, length: number | undefined, delta: bigint): Uint8Array | undefined {
  const stored = range(bytes, offset, length);
  if (stored === undefined) return undefined;
  const index = readOffsetIndex({ view: new DataView(stored.buffer, stored.byteOffset, stored.byteLength), offset: 0 });
  const writer = new ByteWriter();
  serializeTCompactProtocol(writer, {
    field_1: index.page_locations.map((page) => ({ field_1: page.offset + delta, field_2: page.compressed_page_size, field_3: page.first_row_index })),
    field_2: index.unencoded_byte_array_data_bytes,
  });
  return new Uint8Array(writer.getBuffer());
}
