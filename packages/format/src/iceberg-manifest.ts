import { AuditError, AuditErrorCode } from '@auditlake/model';
import { avroContainerEncoding, avroRecordSchema, decodeBlockRecords, fromBuffer, openAvroContainer, toBuffer, type Unusable } from './avro-container.js';
import { EVENT_LOOP_SLICE_MS, runInSlices, runToEnd, type Steps } from './event-loop-slices.js';
import { readManifestEntryBlock, readManifestRefBlock } from './manifest-entry-reader.js';
import {
  AUDIT_PARTITION_SPEC_ID,
  auditIcebergSchema,
  auditPartitionSpec,
  EVENT_TIME_DAY_FIELD_ID,
  EVENT_TIME_DAY_FIELD_NAME,
  type IcebergSchema,
} from './iceberg-schema.js';

/** `manifest_entry.status` (spec "Manifest Entry Fields"). */
export const ManifestEntryStatus = {
  /** Carried from an earlier snapshot; sequence numbers explicit. */
  EXISTING: 0,
  /** Added by the snapshot that wrote the manifest; sequence numbers may be inherited (null). */
  ADDED: 1,
  /** Removed by the snapshot that wrote the manifest; informational, skipped by scans. */
  DELETED: 2,
} as const;
export type ManifestEntryStatus = (typeof ManifestEntryStatus)[keyof typeof ManifestEntryStatus];

/** `data_file.content`: 0 for data files, the only kind this table writes. */
export const DATA_FILE_CONTENT_DATA = 0;

/** `data_file.file_format` of our data files (Java writes the enum name). */
export const FILE_FORMAT_PARQUET = 'PARQUET';

/** One key/value pair of an Iceberg map with int keys (Avro: an array of `k…_v…` records). */
export interface IcebergMapEntry<V> {
  key: number;
  value: V;
}

/** The partition tuple of the spec `day(event_time)`: days since 1970-01-01, or null. */
export interface AuditPartition {
  event_time_day: number | null;
}

/**
 * The `data_file` struct (spec "Data File Fields", v2), field names exactly as in Avro so a
 * decoded entry can be written back unchanged. Longs are JS numbers and must be safe integers;
 * decoding a file with a larger long fails instead of rounding it.
 */
export interface DataFile {
  /** 0 data, 1 position deletes, 2 equality deletes. */
  content: number;
  /** Absolute URI of the file. */
  file_path: string;
  /** `PARQUET` for our files; readers compare case-insensitively. */
  file_format: string;
  partition: AuditPartition;
  /** Exact row count. */
  record_count: number;
  /** Exact object size in bytes: readers find the Parquet footer with it. */
  file_size_in_bytes: number;
  column_sizes: IcebergMapEntry<number>[] | null;
  value_counts: IcebergMapEntry<number>[] | null;
  null_value_counts: IcebergMapEntry<number>[] | null;
  nan_value_counts: IcebergMapEntry<number>[] | null;
  /** Single-value serialized lower bounds (see iceberg-bounds.ts). */
  lower_bounds: IcebergMapEntry<Uint8Array>[] | null;
  upper_bounds: IcebergMapEntry<Uint8Array>[] | null;
  key_metadata: Uint8Array | null;
  /** Row group start offsets, ascending. */
  split_offsets: number[] | null;
  equality_ids: number[] | null;
  sort_order_id: number | null;
  referenced_data_file: string | null;
}

/** The `manifest_entry` record. Null sequence numbers / snapshot id are inherited from the manifest list. */
export interface ManifestEntry {
  status: ManifestEntryStatus;
  snapshot_id: number | null;
  sequence_number: number | null;
  file_sequence_number: number | null;
  data_file: DataFile;
}

/**
 * What finding a snapshot's files needs of an entry (orphan cleanup, expiry): its status,
 * snapshot and sequence numbers, and its file's path. Every ManifestEntry is one;
 * {@link decodeManifestRefsInSlices} keeps no more, a few hundred bytes an entry instead of
 * several KB.
 */
export interface ManifestEntryRef {
  status: ManifestEntryStatus;
  snapshot_id: number | null;
  sequence_number: number | null;
  file_sequence_number: number | null;
  data_file: Pick<DataFile, 'file_path'>;
}

/** What {@link encodeManifest} needs besides the entries. */
export interface ManifestContext {
  /** The table schema the manifest is written with (header `schema`); default the audit schema. */
  schema?: IcebergSchema;
  /** The 16-byte Avro sync marker; random when absent. */
  syncMarker?: Uint8Array;
}

/** A decoded manifest: its header keys and its entries. */
export interface DecodedManifest {
  /** Header keys other than `avro.*` (`schema`, `partition-spec`, `format-version`, …). */
  metadata: Record<string, string>;
  entries: ManifestEntry[];
}

/** An optional Avro field: `["null", type]` with default null (null first, or the default is invalid). */
function optional(name: string, fieldId: number, type: unknown): Record<string, unknown> {
  return { name, type: ['null', type], default: null, 'field-id': fieldId };
}

/** An Iceberg `map<int, V>` as Avro: an array of key/value records marked `logicalType: map`. */
function intMap(name: string, fieldId: number, keyId: number, valueId: number, valueType: string): Record<string, unknown> {
  return optional(name, fieldId, {
    type: 'array',
    logicalType: 'map',
    items: {
      type: 'record',
      name: `k${keyId}_v${valueId}`,
      fields: [
        { name: 'key', type: 'int', 'field-id': keyId },
        { name: 'value', type: valueType, 'field-id': valueId },
      ],
    },
  });
}

/**
 * The v2 `manifest_entry` Avro schema for the spec `day(event_time)`, shaped like Java's
 * (`V2Metadata`, record names from `TypeToSchema`): every field carries its Iceberg `field-id`,
 * optional fields are null-first unions, maps are arrays of `k<key>_v<value>` records. The
 * partition field is `int` with `logicalType: date`, Java's form (never mix forms in one table).
 */
export const MANIFEST_ENTRY_AVRO_SCHEMA: Readonly<Record<string, unknown>> = {
  type: 'record',
  name: 'manifest_entry',
  fields: [
    { name: 'status', type: 'int', 'field-id': 0 },
    optional('snapshot_id', 1, 'long'),
    optional('sequence_number', 3, 'long'),
    optional('file_sequence_number', 4, 'long'),
    {
      name: 'data_file',
      'field-id': 2,
      type: {
        type: 'record',
        name: 'r2',
        fields: [
          { name: 'content', type: 'int', 'field-id': 134 },
          { name: 'file_path', type: 'string', 'field-id': 100 },
          { name: 'file_format', type: 'string', 'field-id': 101 },
          {
            name: 'partition',
            'field-id': 102,
            type: {
              type: 'record',
              name: 'r102',
              fields: [optional(EVENT_TIME_DAY_FIELD_NAME, EVENT_TIME_DAY_FIELD_ID, { type: 'int', logicalType: 'date' })],
            },
          },
          { name: 'record_count', type: 'long', 'field-id': 103 },
          { name: 'file_size_in_bytes', type: 'long', 'field-id': 104 },
          intMap('column_sizes', 108, 117, 118, 'long'),
          intMap('value_counts', 109, 119, 120, 'long'),
          intMap('null_value_counts', 110, 121, 122, 'long'),
          intMap('nan_value_counts', 137, 138, 139, 'long'),
          intMap('lower_bounds', 125, 126, 127, 'bytes'),
          intMap('upper_bounds', 128, 129, 130, 'bytes'),
          optional('key_metadata', 131, 'bytes'),
          optional('split_offsets', 132, { type: 'array', items: 'long', 'element-id': 133 }),
          optional('equality_ids', 135, { type: 'array', items: 'int', 'element-id': 136 }),
          optional('sort_order_id', 140, 'int'),
          optional('referenced_data_file', 143, 'string'),
        ],
      },
    },
  ],
};

const ENTRY_SCHEMA = avroRecordSchema(MANIFEST_ENTRY_AVRO_SCHEMA);

/**
 * Encodes a data manifest: an Avro object container (codec `null`) of `manifest_entry`
 * records with the v2 header keys `schema` (Iceberg schema JSON), `schema-id`,
 * `partition-spec` (fields only), `partition-spec-id`, `format-version` = 2 and
 * `content` = data.
 *
 * Checks the spec's rules before writing and throws TypeError when one is broken: data files
 * only (content 0), one entry per file path, EXISTING/DELETED entries with explicit sequence
 * numbers, a day partition value on every file, exact counts as non-negative safe integers.
 */
export function encodeManifest(entries: readonly ManifestEntry[], context: ManifestContext = {}): Uint8Array {
  return runToEnd(manifestEncoding(entries, context));
}

/**
 * {@link encodeManifest}, giving the event loop a turn every `sliceMs` (between Avro blocks of
 * ~100 entries): a manifest rewrite encodes up to MANIFEST_ENTRIES_MAX entries at once.
 */
export function encodeManifestInSlices(entries: readonly ManifestEntry[], context: ManifestContext = {}, sliceMs = EVENT_LOOP_SLICE_MS): Promise<Uint8Array> {
  return runInSlices(manifestEncoding(entries, context), sliceMs);
}

function* manifestEncoding(entries: readonly ManifestEntry[], context: ManifestContext): Steps<Uint8Array> {
  const schema = context.schema ?? auditIcebergSchema();
  checkEntries(entries);
  return yield* avroContainerEncoding({
    schema: ENTRY_SCHEMA,
    records: avroEntries(entries),
    metadata: {
      schema: JSON.stringify(schema),
      'schema-id': String(schema['schema-id']),
      'partition-spec': JSON.stringify(auditPartitionSpec().fields),
      'partition-spec-id': String(AUDIT_PARTITION_SPEC_ID),
      'format-version': '2',
      content: 'data',
    },
    ...(context.syncMarker === undefined ? {} : { syncMarker: context.syncMarker }),
  });
}

/** The entries as avsc records, made one at a time as the encoder takes them. */
function* avroEntries(entries: readonly ManifestEntry[]): Generator<unknown, void, void> {
  for (const entry of entries) yield toAvroEntry(entry);
}

/**
 * Decodes a manifest written by us or another engine (Java, pyiceberg, …), resolving its
 * writer schema to ours: fields the writer lacks read as null, fields we do not know are
 * dropped. Throws AuditError AUDIT_TABLE_INVALID for bytes that are not a v2 data
 * manifest of this table's partition spec, or hold a long beyond 2^53. `bytes` values of the
 * entries view a copy of their Avro block (see readManifestEntryBlock).
 *
 * Synchronous: a manifest of 20,000 entries holds the event loop ~0.5 s (25–35 µs an entry on a
 * loaded 2-core machine). A node reading a table's manifests uses {@link decodeManifestInSlices}.
 */
export function decodeManifest(bytes: Uint8Array): DecodedManifest {
  return runToEnd(manifestDecoding(bytes, readManifestEntryBlock, fromAvroEntry));
}

/**
 * {@link decodeManifest}, giving the event loop a turn every `sliceMs` (between Avro blocks of
 * ~100 entries), so no read of a table's manifests keeps timers (a leader's lease renewals)
 * waiting for long, however many files the table holds.
 */
export function decodeManifestInSlices(bytes: Uint8Array, sliceMs = EVENT_LOOP_SLICE_MS): Promise<DecodedManifest> {
  return runInSlices(manifestDecoding(bytes, readManifestEntryBlock, fromAvroEntry), sliceMs);
}

/**
 * {@link decodeManifestInSlices} keeping of each entry only its {@link ManifestEntryRef}. Every
 * field is still read and checked: it accepts and refuses exactly the bytes decodeManifest does.
 */
export function decodeManifestRefsInSlices(bytes: Uint8Array, sliceMs = EVENT_LOOP_SLICE_MS): Promise<{ metadata: Record<string, string>; entries: ManifestEntryRef[] }> {
  return runInSlices(manifestDecoding(bytes, readManifestRefBlock, (record) => entryRef(fromAvroEntry(record))), sliceMs);
}

/**
 * Decodes a manifest as {@link decodeManifestInSlices} does, handing each entry to `visit` as
 * soon as its Avro block is read and keeping none: for a reader that keeps a little of each
 * (a search's listing keeps ~300 bytes of a several-KB entry). Entries that die young cost the
 * garbage collector little; a listing that held 20,000 until the end peaked at 166 MB of heap
 * and a collection stopped the loop ~190 ms, where this peaks at ~20 MB.
 * Returns the header keys.
 */
export async function visitManifestInSlices(bytes: Uint8Array, visit: (entry: ManifestEntry) => void, sliceMs = EVENT_LOOP_SLICE_MS): Promise<Record<string, string>> {
  return (await runInSlices(manifestDecoding(bytes, readManifestEntryBlock, fromAvroEntry, visit), sliceMs)).metadata;
}

function entryRef(entry: ManifestEntry): ManifestEntryRef {
  const { status, snapshot_id, sequence_number, file_sequence_number } = entry;
  return { status, snapshot_id, sequence_number, file_sequence_number, data_file: { file_path: entry.data_file.file_path } };
}

/**
 * The decode as steps of one Avro block each: a file written with our schema read by
 * `readOwn` (manifest-entry-reader.ts), any other resolved by avsc and converted by `convert`.
 * With `visit`, each block's entries go to it and are not kept (`entries` comes back empty).
 */
function* manifestDecoding<T>(bytes: Uint8Array, readOwn: (data: Buffer, count: number, into: T[]) => void, convert: (record: unknown) => T, visit?: (entry: T) => void): Steps<{ metadata: Record<string, string>; entries: T[] }> {
  const container = openAvroContainer(bytes, ENTRY_SCHEMA.type, 'Iceberg manifest');
  const metadata = container.metadata;
  checkManifestHeader(metadata);
  const entries: T[] = [];
  for (const block of container.blocks()) {
    if (container.writerIsReader) readOwnBlock(() => readOwn(block.data, block.count, entries), container.unusable);
    else for (const record of decodeBlockRecords(block, ENTRY_SCHEMA.type, container)) entries.push(convert(record));
    if (visit !== undefined) {
      for (const entry of entries) visit(entry);
      entries.length = 0;
    }
    yield;
  }
  return { metadata, entries };
}

/** Reads a block of a manifest written with our schema, its errors coded as the generic path codes them. */
function readOwnBlock(read: () => void, unusable: Unusable): void {
  try {
    read();
  } catch (err) {
    if (err instanceof AuditError) throw err;
    const message = err instanceof Error ? err.message : String(err);
    throw unusable(message === 'block longer than its records' ? message : `bad record: ${message}`, err);
  }
}

/** Header keys that say the file is not a v2 data manifest of our partition spec. */
function checkManifestHeader(metadata: Record<string, string>): void {
  const unusable = (message: string): AuditError =>
    new AuditError(AuditErrorCode.TABLE_INVALID, `Iceberg manifest is not usable: ${message}`);
  if (metadata['format-version'] !== undefined && metadata['format-version'] !== '2') {
    throw unusable(`format-version ${metadata['format-version']}, expected 2`);
  }
  if (metadata['content'] !== undefined && metadata['content'] !== 'data') {
    throw unusable(`content ${metadata['content']}, expected data`);
  }
  const specId = metadata['partition-spec-id'];
  if (specId !== undefined && specId !== String(AUDIT_PARTITION_SPEC_ID)) {
    throw unusable(`partition-spec-id ${specId}, expected ${AUDIT_PARTITION_SPEC_ID}`);
  }
}

/**
 * A manifest entry for a file this snapshot adds: status ADDED, the snapshot id written out
 * (as Java does), sequence numbers null so they are inherited from the manifest list.
 */
export function addedEntry(dataFile: DataFile, snapshotId: number): ManifestEntry {
  return { status: ManifestEntryStatus.ADDED, snapshot_id: snapshotId, sequence_number: null, file_sequence_number: null, data_file: dataFile };
}

function checkEntries(entries: readonly ManifestEntry[]): void {
  const paths = new Set<string>();
  for (const entry of entries) {
    const file = entry.data_file;
    const where = `manifest entry ${file.file_path}`;
    if (entry.status !== 0 && entry.status !== 1 && entry.status !== 2) {
      throw new TypeError(`${where}: status must be 0, 1 or 2, got ${String(entry.status)}`);
    }
    if (entry.status !== ManifestEntryStatus.ADDED && (entry.sequence_number === null || entry.file_sequence_number === null)) {
      // Spec "Sequence Number Inheritance": only ADDED entries may inherit.
      throw new TypeError(`${where}: EXISTING and DELETED entries need explicit sequence numbers`);
    }
    if (file.content !== DATA_FILE_CONTENT_DATA) throw new TypeError(`${where}: a data manifest holds data files only (content 0)`);
    if (paths.has(file.file_path)) throw new TypeError(`${where}: the file is listed twice`);
    paths.add(file.file_path);
    if (file.partition.event_time_day === null) throw new TypeError(`${where}: no event_time_day partition value`);
    checkCount(where, 'record_count', file.record_count);
    checkCount(where, 'file_size_in_bytes', file.file_size_in_bytes);
    for (const name of ['snapshot_id', 'sequence_number', 'file_sequence_number'] as const) {
      const value = entry[name];
      if (value !== null) checkCount(where, name, value);
    }
  }
}

function checkCount(where: string, name: string, value: number): void {
  if (!Number.isSafeInteger(value) || value < 0) throw new TypeError(`${where}: ${name} must be a non-negative safe integer, got ${value}`);
}

function bytesMapToAvro(map: IcebergMapEntry<Uint8Array>[] | null): { key: number; value: Buffer }[] | null {
  return map === null ? null : map.map(({ key, value }) => ({ key, value: toBuffer(value) }));
}

function toAvroEntry(entry: ManifestEntry): unknown {
  const file = entry.data_file;
  return {
    status: entry.status,
    snapshot_id: entry.snapshot_id,
    sequence_number: entry.sequence_number,
    file_sequence_number: entry.file_sequence_number,
    data_file: {
      content: file.content,
      file_path: file.file_path,
      file_format: file.file_format,
      partition: { event_time_day: file.partition.event_time_day },
      record_count: file.record_count,
      file_size_in_bytes: file.file_size_in_bytes,
      column_sizes: file.column_sizes,
      value_counts: file.value_counts,
      null_value_counts: file.null_value_counts,
      nan_value_counts: file.nan_value_counts,
      lower_bounds: bytesMapToAvro(file.lower_bounds),
      upper_bounds: bytesMapToAvro(file.upper_bounds),
      key_metadata: file.key_metadata === null ? null : toBuffer(file.key_metadata),
      split_offsets: file.split_offsets,
      equality_ids: file.equality_ids,
      sort_order_id: file.sort_order_id,
      referenced_data_file: file.referenced_data_file,
    },
  };
}

/** Shape of a decoded record (avsc resolves to the reader schema, so every field is present). */
interface AvroEntry {
  status: number;
  snapshot_id: number | null;
  sequence_number: number | null;
  file_sequence_number: number | null;
  data_file: Omit<DataFile, 'lower_bounds' | 'upper_bounds' | 'key_metadata' | 'partition'> & {
    partition: { event_time_day: number | null };
    lower_bounds: IcebergMapEntry<Buffer>[] | null;
    upper_bounds: IcebergMapEntry<Buffer>[] | null;
    key_metadata: Buffer | null;
  };
}

function numberMap(map: IcebergMapEntry<number>[] | null): IcebergMapEntry<number>[] | null {
  return map === null ? null : map.map(({ key, value }) => ({ key, value }));
}

function bytesMap(map: IcebergMapEntry<Buffer>[] | null): IcebergMapEntry<Uint8Array>[] | null {
  return map === null ? null : map.map(({ key, value }) => ({ key, value: fromBuffer(value) }));
}

function fromAvroEntry(record: unknown): ManifestEntry {
  const raw = record as AvroEntry;
  const file = raw.data_file;
  if (raw.status !== 0 && raw.status !== 1 && raw.status !== 2) {
    throw new AuditError(AuditErrorCode.TABLE_INVALID, `Iceberg manifest entry has status ${raw.status}`);
  }
  return {
    status: raw.status,
    snapshot_id: raw.snapshot_id,
    sequence_number: raw.sequence_number,
    file_sequence_number: raw.file_sequence_number,
    data_file: {
      content: file.content,
      file_path: file.file_path,
      file_format: file.file_format,
      partition: { event_time_day: file.partition.event_time_day },
      record_count: file.record_count,
      file_size_in_bytes: file.file_size_in_bytes,
      column_sizes: numberMap(file.column_sizes),
      value_counts: numberMap(file.value_counts),
      null_value_counts: numberMap(file.null_value_counts),
      nan_value_counts: numberMap(file.nan_value_counts),
      lower_bounds: bytesMap(file.lower_bounds),
      upper_bounds: bytesMap(file.upper_bounds),
      key_metadata: file.key_metadata === null ? null : fromBuffer(file.key_metadata),
      split_offsets: file.split_offsets === null ? null : [...file.split_offsets],
      equality_ids: file.equality_ids === null ? null : [...file.equality_ids],
      sort_order_id: file.sort_order_id,
      referenced_data_file: file.referenced_data_file,
    },
  };
}
