import { AuditError, AuditErrorCode } from '@auditlake/model';
import { avroRecordSchema, decodeAvroContainer, encodeAvroContainer, fromBuffer, toBuffer } from './avro-container.js';
import { encodeIntBound } from './iceberg-bounds.js';
import { ManifestEntryStatus, type ManifestEntry } from './iceberg-manifest.js';
import { AUDIT_PARTITION_SPEC_ID } from './iceberg-schema.js';

/** `manifest_file.content`: 0 for manifests of data files. */
export const MANIFEST_CONTENT_DATA = 0;

/** The `field_summary` record: one per partition field of the manifest's spec. */
export interface FieldSummary {
  contains_null: boolean;
  contains_nan: boolean | null;
  /** Smallest partition value, single-value serialized (4-byte LE days for `event_time_day`). */
  lower_bound: Uint8Array | null;
  upper_bound: Uint8Array | null;
}

/**
 * The `manifest_file` record of a manifest list (spec "Manifest Lists", v2), field names
 * exactly as in Avro so a carried-over row can be written back unchanged.
 */
export interface ManifestFile {
  manifest_path: string;
  /** Exact byte size of the manifest object. */
  manifest_length: number;
  partition_spec_id: number;
  /** 0 data, 1 deletes. */
  content: number;
  /** Sequence number of the snapshot that added the manifest; inherited by its ADDED entries. */
  sequence_number: number;
  /** Smallest data sequence number of the manifest's live entries. */
  min_sequence_number: number;
  added_snapshot_id: number;
  added_files_count: number;
  existing_files_count: number;
  deleted_files_count: number;
  added_rows_count: number;
  existing_rows_count: number;
  deleted_rows_count: number;
  partitions: FieldSummary[] | null;
  key_metadata: Uint8Array | null;
}

/** The snapshot a manifest list belongs to, written into its header as Java does. */
export interface ManifestListContext {
  snapshotId: number;
  /** The parent snapshot, or null for the table's first snapshot (header value `null`). */
  parentSnapshotId: number | null;
  sequenceNumber: number;
  /** The 16-byte Avro sync marker; random when absent. */
  syncMarker?: Uint8Array;
}

/** A decoded manifest list: its header keys and its rows. */
export interface DecodedManifestList {
  /** Header keys other than `avro.*` (`snapshot-id`, `sequence-number`, …). */
  metadata: Record<string, string>;
  files: ManifestFile[];
}

/** The v2 `manifest_file` Avro schema, shaped like Java's (`V2Metadata.MANIFEST_LIST_SCHEMA`). */
export const MANIFEST_FILE_AVRO_SCHEMA: Readonly<Record<string, unknown>> = {
  type: 'record',
  name: 'manifest_file',
  fields: [
    { name: 'manifest_path', type: 'string', 'field-id': 500 },
    { name: 'manifest_length', type: 'long', 'field-id': 501 },
    { name: 'partition_spec_id', type: 'int', 'field-id': 502 },
    { name: 'content', type: 'int', 'field-id': 517 },
    { name: 'sequence_number', type: 'long', 'field-id': 515 },
    { name: 'min_sequence_number', type: 'long', 'field-id': 516 },
    { name: 'added_snapshot_id', type: 'long', 'field-id': 503 },
    { name: 'added_files_count', type: 'int', 'field-id': 504 },
    { name: 'existing_files_count', type: 'int', 'field-id': 505 },
    { name: 'deleted_files_count', type: 'int', 'field-id': 506 },
    { name: 'added_rows_count', type: 'long', 'field-id': 512 },
    { name: 'existing_rows_count', type: 'long', 'field-id': 513 },
    { name: 'deleted_rows_count', type: 'long', 'field-id': 514 },
    {
      name: 'partitions',
      type: [
        'null',
        {
          type: 'array',
          'element-id': 508,
          items: {
            type: 'record',
            name: 'r508',
            fields: [
              { name: 'contains_null', type: 'boolean', 'field-id': 509 },
              { name: 'contains_nan', type: ['null', 'boolean'], default: null, 'field-id': 518 },
              { name: 'lower_bound', type: ['null', 'bytes'], default: null, 'field-id': 510 },
              { name: 'upper_bound', type: ['null', 'bytes'], default: null, 'field-id': 511 },
            ],
          },
        },
      ],
      default: null,
      'field-id': 507,
    },
    { name: 'key_metadata', type: ['null', 'bytes'], default: null, 'field-id': 519 },
  ],
};

const FILE_SCHEMA = avroRecordSchema(MANIFEST_FILE_AVRO_SCHEMA);

const INT_MAX = 2 ** 31 - 1;

/**
 * Encodes a manifest list: an Avro object container (codec `null`) of `manifest_file` rows with
 * the header keys Java writes — `snapshot-id`, `parent-snapshot-id`, `sequence-number`,
 * `format-version` = 2. `files` must be **all** manifests of the snapshot: the carried-over
 * rows unchanged plus the new ones (listing only new manifests makes earlier data vanish).
 *
 * Throws TypeError for a broken rule: a manifest listed twice, a negative or non-integer count,
 * a manifest added by this snapshot whose sequence number is not the snapshot's, a sequence
 * number above the snapshot's, or `min_sequence_number` above `sequence_number`.
 */
export function encodeManifestList(files: readonly ManifestFile[], context: ManifestListContext): Uint8Array {
  checkId('snapshotId', context.snapshotId);
  if (context.parentSnapshotId !== null) checkId('parentSnapshotId', context.parentSnapshotId);
  checkCount('manifest list', 'sequenceNumber', context.sequenceNumber);
  checkFiles(files, context);
  return encodeAvroContainer({
    schema: FILE_SCHEMA,
    records: files.map(toAvroFile),
    metadata: {
      'snapshot-id': String(context.snapshotId),
      'parent-snapshot-id': context.parentSnapshotId === null ? 'null' : String(context.parentSnapshotId),
      'sequence-number': String(context.sequenceNumber),
      'format-version': '2',
    },
    ...(context.syncMarker === undefined ? {} : { syncMarker: context.syncMarker }),
  });
}

/**
 * Decodes a manifest list written by us or another engine, resolving its writer schema to
 * ours. Throws AuditError AUDIT_TABLE_INVALID for bytes that are not a v2 manifest list
 * or hold a long beyond 2^53.
 */
export function decodeManifestList(bytes: Uint8Array): DecodedManifestList {
  const { metadata, records } = decodeAvroContainer(bytes, FILE_SCHEMA.type, 'Iceberg manifest list');
  if (metadata['format-version'] !== undefined && metadata['format-version'] !== '2') {
    throw new AuditError(
      AuditErrorCode.TABLE_INVALID,
      `Iceberg manifest list is not usable: format-version ${metadata['format-version']}, expected 2`,
    );
  }
  return { metadata, files: records.map(fromAvroFile) };
}

/** What {@link manifestFileFor} summarizes. */
export interface ManifestFileInput {
  /** Absolute path the manifest is (to be) stored at. */
  manifestPath: string;
  /** Exact byte size of the encoded manifest. */
  manifestLengthBytes: number;
  /** The entries encoded into it. */
  entries: readonly ManifestEntry[];
  /** The snapshot that adds the manifest. */
  snapshotId: number;
  /** That snapshot's sequence number. */
  sequenceNumber: number;
}

/**
 * The manifest-list row of a manifest written for a new snapshot: entry and row counts per
 * status, `min_sequence_number` over the live (ADDED/EXISTING) entries — ADDED entries without
 * an explicit number inherit `sequenceNumber` — and the `event_time_day` summary (lower/upper
 * day as 4-byte little-endian ints).
 */
export function manifestFileFor(input: ManifestFileInput): ManifestFile {
  checkCount('manifest', 'manifestLengthBytes', input.manifestLengthBytes);
  const counts = { files: [0, 0, 0], rows: [0, 0, 0] };
  let minSequenceNumber: number | undefined;
  let containsNull = false;
  let dayMin: number | undefined;
  let dayMax: number | undefined;
  for (const entry of input.entries) {
    counts.files[entry.status] = (counts.files[entry.status] ?? 0) + 1;
    counts.rows[entry.status] = (counts.rows[entry.status] ?? 0) + entry.data_file.record_count;
    if (entry.status !== ManifestEntryStatus.DELETED) {
      const sequenceNumber = entry.sequence_number ?? input.sequenceNumber;
      minSequenceNumber = Math.min(minSequenceNumber ?? sequenceNumber, sequenceNumber);
    }
    const day = entry.data_file.partition.event_time_day;
    if (day === null) {
      containsNull = true;
    } else {
      dayMin = Math.min(dayMin ?? day, day);
      dayMax = Math.max(dayMax ?? day, day);
    }
  }
  return {
    manifest_path: input.manifestPath,
    manifest_length: input.manifestLengthBytes,
    partition_spec_id: AUDIT_PARTITION_SPEC_ID,
    content: MANIFEST_CONTENT_DATA,
    sequence_number: input.sequenceNumber,
    // A manifest with no live entries: Java falls back to the manifest's own sequence number.
    min_sequence_number: minSequenceNumber ?? input.sequenceNumber,
    added_snapshot_id: input.snapshotId,
    added_files_count: counts.files[ManifestEntryStatus.ADDED] ?? 0,
    existing_files_count: counts.files[ManifestEntryStatus.EXISTING] ?? 0,
    deleted_files_count: counts.files[ManifestEntryStatus.DELETED] ?? 0,
    added_rows_count: counts.rows[ManifestEntryStatus.ADDED] ?? 0,
    existing_rows_count: counts.rows[ManifestEntryStatus.EXISTING] ?? 0,
    deleted_rows_count: counts.rows[ManifestEntryStatus.DELETED] ?? 0,
    partitions: [
      {
        contains_null: containsNull,
        // Java writes false for fields that cannot hold NaN.
        contains_nan: false,
        lower_bound: dayMin === undefined ? null : encodeIntBound(dayMin),
        upper_bound: dayMax === undefined ? null : encodeIntBound(dayMax),
      },
    ],
    key_metadata: null,
  };
}

function checkFiles(files: readonly ManifestFile[], context: ManifestListContext): void {
  const paths = new Set<string>();
  for (const file of files) {
    const where = `manifest ${file.manifest_path}`;
    if (paths.has(file.manifest_path)) throw new TypeError(`${where}: listed twice`);
    paths.add(file.manifest_path);
    for (const name of ['manifest_length', 'sequence_number', 'min_sequence_number', 'added_rows_count', 'existing_rows_count', 'deleted_rows_count'] as const) {
      checkCount(where, name, file[name]);
    }
    for (const name of ['partition_spec_id', 'content', 'added_files_count', 'existing_files_count', 'deleted_files_count'] as const) {
      checkCount(where, name, file[name]);
      if (file[name] > INT_MAX) throw new TypeError(`${where}: ${name} must fit an Avro int, got ${file[name]}`);
    }
    checkId(`${where}: added_snapshot_id`, file.added_snapshot_id);
    if (file.sequence_number > context.sequenceNumber) {
      throw new TypeError(`${where}: sequence_number ${file.sequence_number} is above the snapshot's ${context.sequenceNumber}`);
    }
    if (file.added_snapshot_id === context.snapshotId && file.sequence_number !== context.sequenceNumber) {
      throw new TypeError(`${where}: added by this snapshot, so its sequence_number must be ${context.sequenceNumber}`);
    }
    if (file.min_sequence_number > file.sequence_number) {
      throw new TypeError(`${where}: min_sequence_number ${file.min_sequence_number} is above sequence_number ${file.sequence_number}`);
    }
  }
}

function checkCount(where: string, name: string, value: number): void {
  if (!Number.isSafeInteger(value) || value < 0) throw new TypeError(`${where}: ${name} must be a non-negative safe integer, got ${value}`);
}

function checkId(name: string, value: number): void {
  if (!Number.isSafeInteger(value) || value <= 0) throw new TypeError(`${name} must be a positive safe integer, got ${value}`);
}

function toAvroFile(file: ManifestFile): unknown {
  return {
    ...file,
    partitions:
      file.partitions === null
        ? null
        : file.partitions.map((summary) => ({
            contains_null: summary.contains_null,
            contains_nan: summary.contains_nan,
            lower_bound: summary.lower_bound === null ? null : toBuffer(summary.lower_bound),
            upper_bound: summary.upper_bound === null ? null : toBuffer(summary.upper_bound),
          })),
    key_metadata: file.key_metadata === null ? null : toBuffer(file.key_metadata),
  };
}

function fromAvroFile(record: unknown): ManifestFile {
  const raw = record as ManifestFile;
  return {
    manifest_path: raw.manifest_path,
    manifest_length: raw.manifest_length,
    partition_spec_id: raw.partition_spec_id,
    content: raw.content,
    sequence_number: raw.sequence_number,
    min_sequence_number: raw.min_sequence_number,
    added_snapshot_id: raw.added_snapshot_id,
    added_files_count: raw.added_files_count,
    existing_files_count: raw.existing_files_count,
    deleted_files_count: raw.deleted_files_count,
    added_rows_count: raw.added_rows_count,
    existing_rows_count: raw.existing_rows_count,
    deleted_rows_count: raw.deleted_rows_count,
    partitions:
      raw.partitions === null
        ? null
        : raw.partitions.map((summary) => ({
            contains_null: summary.contains_null,
            contains_nan: summary.contains_nan,
            lower_bound: summary.lower_bound === null ? null : fromBuffer(summary.lower_bound),
            upper_bound: summary.upper_bound === null ? null : fromBuffer(summary.upper_bound),
          })),
    key_metadata: raw.key_metadata === null ? null : fromBuffer(raw.key_metadata),
  };
}
