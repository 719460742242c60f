import { AUDIT_COLUMNS } from './audit-columns.js';

/**
 * One field of an Iceberg schema as table metadata serializes it (spec Appendix C › Schemas).
 * `type` is a string for the primitive types this table uses; other engines may have written
 * other types, which this package carries through without interpreting.
 */
export interface IcebergField {
  id: number;
  name: string;
  required: boolean;
  type: string;
  doc?: string;
}

/** An Iceberg schema object (`type: "struct"` with `schema-id`, required in v2). */
export interface IcebergSchema {
  type: 'struct';
  'schema-id': number;
  fields: IcebergField[];
}

/** One partition field of a partition spec (spec Appendix C › Partition Specs). */
export interface IcebergPartitionField {
  name: string;
  transform: string;
  'source-id': number;
  'field-id': number;
}

/** A partition spec object as `partition-specs[]` holds it. */
export interface IcebergPartitionSpec {
  'spec-id': number;
  fields: IcebergPartitionField[];
}

/** One sort field (spec Appendix C › Sort Orders). */
export interface IcebergSortField {
  transform: string;
  'source-id': number;
  direction: 'asc' | 'desc';
  'null-order': 'nulls-first' | 'nulls-last';
}

/** A sort order object as `sort-orders[]` holds it; order 0 with no fields is "unsorted". */
export interface IcebergSortOrder {
  'order-id': number;
  fields: IcebergSortField[];
}

/** The id of the table schema; there is one schema until the columns evolve. */
export const AUDIT_SCHEMA_ID = 0;

/** The id of the partition spec `day(event_time)`. */
export const AUDIT_PARTITION_SPEC_ID = 0;

/**
 * Field id of the partition field `event_time_day`. Partition field ids start at 1000 (Java
 * convention; ids below are column ids), and the manifest's partition struct uses this id.
 */
export const EVENT_TIME_DAY_FIELD_ID = 1000;

/** Name of the partition field, Java's `<column>_day` convention. */
export const EVENT_TIME_DAY_FIELD_NAME = 'event_time_day';

/** The id of the default sort order: 0, unsorted. */
export const AUDIT_SORT_ORDER_ID = 0;

/** Milliseconds per day: the day transform's unit. */
const DAY_MS = 86_400_000;

const EVENT_TIME_FIELD_ID = AUDIT_COLUMNS.find((column) => column.name === 'event_time')?.fieldId ?? 0;

/**
 * The Iceberg schema of the tiered layout: the 12 audit columns with ids 1..12, types
 * string/long/timestamptz and their required flags, in {@link AUDIT_COLUMNS} order. The same
 * object goes into `schemas[]`, the manifests' `schema` header and each data file's
 * `iceberg.schema` footer key. A fresh object each call, so callers may not alias each other.
 */
export function auditIcebergSchema(): IcebergSchema {
  return {
    type: 'struct',
    'schema-id': AUDIT_SCHEMA_ID,
    fields: AUDIT_COLUMNS.map((column) => ({
      id: column.fieldId,
      name: column.name,
      required: column.required,
      type: column.icebergType,
      doc: column.doc,
    })),
  };
}

/**
 * The partition spec `day(event_time)`: one field `event_time_day` (id 1000) holding days since
 * 1970-01-01 of the event time.
 */
export function auditPartitionSpec(): IcebergPartitionSpec {
  return {
    'spec-id': AUDIT_PARTITION_SPEC_ID,
    fields: [
      {
        name: EVENT_TIME_DAY_FIELD_NAME,
        transform: 'day',
        'source-id': EVENT_TIME_FIELD_ID,
        'field-id': EVENT_TIME_DAY_FIELD_ID,
      },
    ],
  };
}

/**
 * The default sort order: order 0 with no fields ("unsorted"). Files are written sorted by
 * event time, but declaring that order would promise engines something a foreign writer to
 * the same table need not keep.
 */
export function auditSortOrder(): IcebergSortOrder {
  return { 'order-id': AUDIT_SORT_ORDER_ID, fields: [] };
}

/** Highest column id the schema assigns (`last-column-id`). */
export const AUDIT_LAST_COLUMN_ID = Math.max(...AUDIT_COLUMNS.map((column) => column.fieldId));

/**
 * The `day` transform of an epoch-ms time: whole days since 1970-01-01 UTC, rounded toward
 * negative infinity (so 1969-12-31T23:59:59.999Z is day -1, not 0). Equal to the spec's
 * `floor(micros / 86_400_000_000)` for `event_time` = ms × 1000.
 * Throws TypeError for a time that is not a safe integer of ms.
 */
export function dayOrdinal(timestampMs: number): number {
  if (!Number.isSafeInteger(timestampMs)) {
    throw new TypeError(`timestampMs must be an integer of epoch ms, got ${timestampMs}`);
  }
  return Math.floor(timestampMs / DAY_MS);
}

/** The ISO date `YYYY-MM-DD` of a day ordinal (the partition's human form). */
export function dayDate(day: number): string {
  if (!Number.isSafeInteger(day)) throw new TypeError(`day must be an integer, got ${day}`);
  return new Date(day * DAY_MS).toISOString().slice(0, 10);
}

/**
 * The directory of a day's data files below `<location>/data/`, Java's Hive-style convention
 * `event_time_day=YYYY-MM-DD`. Only a naming convention: readers find files through manifests.
 */
export function dayPartitionPath(day: number): string {
  return `${EVENT_TIME_DAY_FIELD_NAME}=${dayDate(day)}`;
}

/**
 * The `schema.name-mapping.default` table property: a JSON string mapping each field id to its
 * column name (spec Appendix C › Name Mapping Serialization). A safety net for Java and
 * pyiceberg should a data file ever lack Parquet field ids.
 */
export function auditNameMapping(schema: IcebergSchema = auditIcebergSchema()): string {
  return JSON.stringify(schema.fields.map((field) => ({ 'field-id': field.id, names: [field.name] })));
}

/** Footer key under which a data file carries the Iceberg schema it was written with. */
export const ICEBERG_SCHEMA_FOOTER_KEY = 'iceberg.schema';

/**
 * Footer key-values for a Parquet data file of the table (pass as `kvMetadata` to
 * encodeAuditParquet): `iceberg.schema` = the schema JSON. icebird 0.3.1 maps columns by the
 * names this JSON gives each field id, and Java writes the same key.
 */
export function icebergParquetKvMetadata(schema: IcebergSchema = auditIcebergSchema()): Record<string, string> {
  return { [ICEBERG_SCHEMA_FOOTER_KEY]: JSON.stringify(schema) };
}
