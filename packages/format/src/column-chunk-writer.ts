import type { OffsetIndex } from 'hyparquet';
import { ByteWriter, ParquetWriter, type ColumnSource, type KeyValue, type SchemaElement } from 'hyparquet-writer';
import { BloomBuilder } from 'hyparquet-writer/src/bloom.js';
import type { PageIndexes } from 'hyparquet-writer/src/types.js';
import { AUDIT_COLUMNS } from './audit-columns.js';
import { compressTierPage, TIER_PAGE_CODEC } from './page-codec.js';
import { auditParquetSchema } from './parquet-schema.js';
import { PAGE_SIZE_BYTES, PARQUET_CREATED_BY, STATISTICS_STRING_BYTES_MAX } from './parquet-write-settings.js';

/**
 * One column chunk as hyparquet-writer's ParquetWriter leaves it before the file's tail is
 * written: its footer record (offsets into {@link EncodedColumnChunks.bytes}), its offset index
 * (page offsets likewise), its column index and its Bloom filter blocks. Plain data: it crosses
 * threads by structured clone.
 */
export type EncodedColumnChunk = PageIndexes;

/**
 * Column chunks of some of a tier file's columns (any subset of {@link AUDIT_COLUMNS}, in
 * schema order), for every row group; {@link assembleColumnChunks} joins the parts that
 * together hold every column into the file hyparquet-writer would have written in one go.
 */
export interface EncodedColumnChunks {
  /** The columns held, in schema order. */
  columns: string[];
  /** The chunks' bytes; each chunk's offsets point into this array (it starts with 4 unused bytes). */
  bytes: Uint8Array;
  /** Per row group, its rows and its chunks in the order of {@link columns}. */
  groups: Array<{ rows: number; chunks: EncodedColumnChunk[] }>;
}

/**
 * Encodes the column chunks of `columns` (column arrays of equal length, in schema order, a
 * subset of the tiered columns) in row groups of `rowGroupSize` rows with the settings of
 * every tier file. It is hyparquet-writer's own ParquetWriter, given the schema of those
 * columns alone and never asked to finish: a chunk's pages hold no file offset and depend on
 * nothing but its column's values and schema element, so they come out as they would in the
 * whole file, only at other offsets.
 *
 * A Bloom filter (`bloomFilter: true`) is built here rather than by the writer, from each
 * distinct array of the group hashed once: the writer hashes every value (xxhash64 in
 * bigints), though the filter only holds the distinct hashes. The columns give each distinct
 * value of a row group one shared array (parquet-writer.ts), so for a few hundred users that is
 * a few hundred hashes, not 10,000. The blocks are the same, as the same hashes are set.
 */
export function encodeColumnChunks(columns: readonly ColumnSource[], rowGroupSize: number): EncodedColumnChunks {
  const full = auditParquetSchema();
  const elements = columns.map((column) => {
    const element = full.find((e, i) => i > 0 && e.name === column.name);
    if (element === undefined) throw new Error(`assertion failed: ${column.name} is not a tiered column`);
    return element;
  });
  const order = AUDIT_COLUMNS.map((c) => c.name as string);
  for (let i = 1; i < columns.length; i++) {
    if (order.indexOf(columns[i - 1]?.name ?? '') >= order.indexOf(columns[i]?.name ?? '')) throw new Error('assertion failed: column chunks are encoded in schema order');
  }
  const schema: SchemaElement[] = [{ ...(full[0] as SchemaElement), num_children: columns.length }, ...elements];
  const writer = new ByteWriter();
  const parquet = new ParquetWriter({
    writer,
    schema,
    codec: TIER_PAGE_CODEC,
    compressors: { [TIER_PAGE_CODEC]: compressTierPage },
    statistics: true,
    statisticsTruncateLength: STATISTICS_STRING_BYTES_MAX,
    createdBy: PARQUET_CREATED_BY,
  });
  void parquet.write({ columnData: columns.map((c) => ({ ...c, bloomFilter: false })), rowGroupSize, pageSize: PAGE_SIZE_BYTES });
  const written = parquet.pendingIndexes;
  const groups: EncodedColumnChunks['groups'] = [];
  let start = 0;
  for (const [g, group] of parquet.row_groups.entries()) {
    const rows = Number(group.num_rows);
    const chunks = written.slice(g * columns.length, (g + 1) * columns.length);
    for (const [c, column] of columns.entries()) {
      if (column.bloomFilter !== true) continue;
      const bloom = new BloomBuilder(elements[c] as SchemaElement);
      for (const value of new Set(column.data.slice(start, start + rows))) bloom.insert(value);
      const blocks = bloom.finalize();
      if (blocks !== undefined) (chunks[c] as EncodedColumnChunk).bloomFilter = blocks;
    }
    groups.push({ rows, chunks });
    start += rows;
  }
  return { columns: columns.map((c) => c.name), bytes: writer.getBytes(), groups };
}

/**
 * The tier file of parts that together hold every tiered column once, each encoded by
 * {@link encodeColumnChunks} with the same row groups: byte for byte the file
 * `parquetWriteBuffer` writes from all the columns at once. Each row group's chunks are
 * copied in schema order, their offsets (footer and offset index) moved by where they land;
 * then hyparquet-writer's ParquetWriter writes the tail as it does for its own chunks (column
 * and offset indexes, Bloom filters, footer). The parts' chunk records are taken over (moved).
 */
export function assembleColumnChunks(parts: readonly EncodedColumnChunks[], kvMetadata: KeyValue[] | undefined): Uint8Array {
  const byColumn = new Map<string, { part: EncodedColumnChunks; index: number }>();
  for (const part of parts) for (const [index, name] of part.columns.entries()) byColumn.set(name, { part, index });
  const groups = parts[0]?.groups.length ?? 0;
  if (byColumn.size !== AUDIT_COLUMNS.length || groups === 0 || parts.some((p) => p.groups.length !== groups)) {
    throw new Error('assertion failed: column chunk parts must hold every tiered column once, with the same row groups');
  }
  const sources = AUDIT_COLUMNS.map((column) => byColumn.get(column.name) as { part: EncodedColumnChunks; index: number });
  let bytes = 4;
  for (const part of parts) bytes += part.bytes.byteLength;
  const writer = new ByteWriter(bytes + 16 * 1024);
  const parquet = new ParquetWriter({
    writer,
    schema: auditParquetSchema(),
    codec: TIER_PAGE_CODEC,
    statistics: true,
    statisticsTruncateLength: STATISTICS_STRING_BYTES_MAX,
    createdBy: PARQUET_CREATED_BY,
    ...(kvMetadata !== undefined ? { kvMetadata } : {}),
  });
  for (let g = 0; g < groups; g++) {
    const groupStart = writer.offset;
    const rows = parts[0]?.groups[g]?.rows ?? 0;
    const columns = [];
    let uncompressed = 0n;
    for (const { part, index } of sources) {
      const group = part.groups[g];
      const written = group?.chunks[index];
      const meta = written?.chunk.meta_data;
      if (group === undefined || written === undefined || meta === undefined || group.rows !== rows) throw new Error('assertion failed: column chunk parts cut different row groups');
      const from = Number(written.chunk.file_offset);
      const delta = BigInt(writer.offset - from);
      writer.appendBytes(part.bytes.subarray(from, from + Number(meta.total_compressed_size)));
      written.chunk.file_offset += delta;
      meta.data_page_offset += delta;
      if (meta.dictionary_page_offset !== undefined) meta.dictionary_page_offset += delta;
      moveOffsetIndex(written.offsetIndex, delta);
      uncompressed += meta.total_uncompressed_size;
      columns.push(written.chunk);
      parquet.pendingIndexes.push(written);
    }
    parquet.num_rows += BigInt(rows);
    parquet.row_groups.push({ columns, total_byte_size: uncompressed, num_rows: BigInt(rows), total_compressed_size: BigInt(writer.offset - groupStart) });
  }
  void parquet.finish();
  // Its own buffer, which can then be moved to another thread without a copy.
  return new Uint8Array(writer.getBuffer());
}

function moveOffsetIndex(index: OffsetIndex | undefined, delta: bigint): void {
  if (index === undefined) return;
  for (const page of index.page_locations) page.offset += delta;
}

/**
 * A column packed into transferable arrays, so that a column of thousands of values crosses to
 * another thread without a structured clone of each value. Byte arrays: the values' bytes one
 * after another, and where each ends (-1 for a null; a value starts where the last non-null one
 * before it ended). INT64 columns given as a BigInt64Array travel as that array.
 */
export type PackedColumn =
  | { name: string; kind: 'bytes'; bytes: Uint8Array; ends: Int32Array; bloomFilter: boolean }
  | { name: string; kind: 'longs'; data: BigInt64Array };

/** Packs a column of byte arrays or of a BigInt64Array (see {@link PackedColumn}). */
export function packColumn(column: ColumnSource): PackedColumn {
  if (column.data instanceof BigInt64Array) return { name: column.name, kind: 'longs', data: column.data };
  const data = column.data as ArrayLike<Uint8Array | null>;
  let length = 0;
  for (let i = 0; i < data.length; i++) {
    const value = data[i];
    if (value !== null && !(value instanceof Uint8Array)) throw new TypeError(`column ${column.name} holds neither byte arrays nor a BigInt64Array and cannot be packed`);
    length += value?.byteLength ?? 0;
  }
  const bytes = new Uint8Array(length);
  const ends = new Int32Array(data.length);
  let at = 0;
  for (let i = 0; i < data.length; i++) {
    const value = data[i];
    if (value === null || value === undefined) {
      ends[i] = -1;
      continue;
    }
    bytes.set(value, at);
    at += value.byteLength;
    ends[i] = at;
  }
  return { name: column.name, kind: 'bytes', bytes, ends, bloomFilter: column.bloomFilter === true };
}

/** The arrays to transfer (not copy) with packed columns. */
export function packedColumnBuffers(columns: readonly PackedColumn[]): ArrayBuffer[] {
  const buffers = columns.flatMap((c) => (c.kind === 'bytes' ? [c.bytes.buffer, c.ends.buffer] : [c.data.buffer]));
  return [...new Set(buffers)] as ArrayBuffer[];
}

/**
 * The column of a {@link PackedColumn}: each byte array a view of the packed bytes, no copy.
 * Repeated values are no longer one shared array; the pages do not depend on that, only the
 * speed of the dictionary builder and of a Bloom filter (so the columns worth packing are the
 * mostly distinct ones).
 */
export function unpackColumn(packed: PackedColumn): ColumnSource {
  if (packed.kind === 'longs') return { name: packed.name, data: packed.data };
  const data = new Array<Uint8Array | null>(packed.ends.length);
  let start = 0;
  for (let i = 0; i < packed.ends.length; i++) {
    const end = packed.ends[i] as number;
    if (end < 0) {
      data[i] = null;
      continue;
    }
    data[i] = packed.bytes.subarray(start, end);
    start = end;
  }
  return { name: packed.name, data, ...(packed.bloomFilter ? { bloomFilter: true } : {}) };
}
