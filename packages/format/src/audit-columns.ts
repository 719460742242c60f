import type { Decision, StoredEvent } from '@auditlake/model';

/**
 * The Iceberg types the tiered columns use (Iceberg spec "Primitive types").
 * `timestamptz` is microseconds since the epoch, UTC.
 */
export type IcebergType = 'string' | 'long' | 'timestamptz';

/** One column of the tiered layout (README, "Tiering to S3"). */
export interface AuditColumn {
  /** Column name, identical in Parquet and Iceberg (readers such as icebird map by name). */
  readonly name: string;
  /** Iceberg field id, written as the Parquet `field_id` (Iceberg readers map by id). */
  readonly fieldId: number;
  readonly icebergType: IcebergType;
  /** Iceberg `required`; Parquet repetition `REQUIRED` when true, `OPTIONAL` when false. */
  readonly required: boolean;
  /** What the column holds, for schema docs. */
  readonly doc: string;
  /**
   * Added by schema evolution after the first layout: files written before it lack the
   * column, and a reader reads it there as null (absent).
   */
  readonly evolved?: true;
}

/**
 * The tiered columns in file order. Field ids are 1..21 in this order and never change:
 * an id, once written to a data file, is what every Iceberg reader resolves the column by.
 * New columns get new ids appended; an existing id is never reused or renumbered. Ids 13..20
 * came with the record chain (docs/integrity.md), id 21 with salted field hashes (content
 * format v3): optional, null in files written before.
 */
export const AUDIT_COLUMNS = [
  { name: 'event_id', fieldId: 1, icebergType: 'string', required: true, doc: 'Event id, the same as the local record' },
  { name: 'source', fieldId: 2, icebergType: 'string', required: true, doc: 'Engine that reported the event' },
  { name: 'user_id', fieldId: 3, icebergType: 'string', required: true, doc: 'User who acted' },
  { name: 'action', fieldId: 4, icebergType: 'string', required: true, doc: 'What was done, e.g. data:Select' },
  { name: 'resource', fieldId: 5, icebergType: 'string', required: false, doc: 'Object acted on' },
  { name: 'tables', fieldId: 6, icebergType: 'string', required: false, doc: 'Comma-separated table list' },
  { name: 'query', fieldId: 7, icebergType: 'string', required: false, doc: 'Query text' },
  { name: 'details', fieldId: 8, icebergType: 'string', required: false, doc: 'Operation details' },
  { name: 'ts', fieldId: 9, icebergType: 'long', required: true, doc: 'Event time, epoch ms' },
  { name: 'event_time', fieldId: 10, icebergType: 'timestamptz', required: true, doc: 'Event time, µs UTC; partition source' },
  { name: 'decision', fieldId: 11, icebergType: 'string', required: false, doc: "ALLOW, DENY or '' where none applies" },
  { name: 'ingest_ts', fieldId: 12, icebergType: 'long', required: true, doc: 'When the leader stored the event, epoch ms' },
  { name: 'seq', fieldId: 13, icebergType: 'long', required: false, evolved: true, doc: 'Place in the cluster-wide log, from 1' },
  { name: 'term', fieldId: 14, icebergType: 'long', required: false, evolved: true, doc: 'Leader term that ordered the event' },
  { name: 'source_id', fieldId: 15, icebergType: 'string', required: false, evolved: true, doc: 'Identity of the sending source, when it numbers its events' },
  { name: 'source_seq', fieldId: 16, icebergType: 'long', required: false, evolved: true, doc: "The source's sequence number of the event" },
  { name: 'record_hash', fieldId: 17, icebergType: 'string', required: false, evolved: true, doc: 'SHA-256 of the canonical record (hex)' },
  { name: 'chain_hash', fieldId: 18, icebergType: 'string', required: false, evolved: true, doc: 'SHA-256 chaining the record to all before it (hex)' },
  { name: 'field_check', fieldId: 19, icebergType: 'string', required: false, evolved: true, doc: 'Per-field checks naming an altered field (hex)' },
  { name: 'erased', fieldId: 20, icebergType: 'string', required: false, evolved: true, doc: 'Kept field hashes of erased fields (JSON), null when none' },
  { name: 'salt', fieldId: 21, icebergType: 'string', required: false, evolved: true, doc: "The record's salt key (base64url), or the salts an erasure kept; null before v3" },
] as const satisfies readonly AuditColumn[];

/** The name of a tiered column. */
export type AuditColumnName = (typeof AUDIT_COLUMNS)[number]['name'];

/** The Iceberg field id of a tiered column. */
export function auditFieldId(name: AuditColumnName): number {
  return (AUDIT_COLUMNS.find((column) => column.name === name) as AuditColumn).fieldId;
}

/** Field id of `ts` (event time, epoch ms): a data file's bounds on it let readers skip the file. */
export const TS_FIELD_ID = auditFieldId('ts');
export const EVENT_ID_FIELD_ID = auditFieldId('event_id');
export const SEQ_FIELD_ID = auditFieldId('seq');
export const INGEST_TS_FIELD_ID = auditFieldId('ingest_ts');

const COLUMN_NAMES: ReadonlySet<string> = new Set(AUDIT_COLUMNS.map((column) => column.name));

/** True when `name` is one of the tiered columns. */
export function isAuditColumnName(name: string): name is AuditColumnName {
  return COLUMN_NAMES.has(name);
}

/**
 * An event as the tiered layout keeps it: a StoredEvent whose `seq` and `term` (and chain
 * fields) may be absent, in files written before the record chain.
 */
export type TieredEvent = Omit<StoredEvent, 'seq' | 'term'> & { seq?: number; term?: number };

/** The columns a search reads: the event itself, not its chain fields. */
export const EVENT_COLUMNS: readonly AuditColumnName[] = AUDIT_COLUMNS.map((column) => column.name).filter(
  (name) => !['seq', 'term', 'record_hash', 'chain_hash', 'field_check', 'erased', 'salt'].includes(name),
);

/**
 * One tiered row, with the values as the columns hold them. `event_time` is a bigint because
 * it is the physical INT64 microsecond value; `ts` and `ingest_ts` are epoch ms and always
 * safe integers.
 */
export interface AuditRow {
  event_id: string;
  source: string;
  user_id: string;
  action: string;
  resource: string;
  tables: string;
  query: string;
  details: string;
  ts: number;
  event_time: bigint;
  decision: Decision | '';
  ingest_ts: number;
  seq: number | null;
  term: number | null;
  source_id: string | null;
  source_seq: number | null;
  record_hash: string | null;
  chain_hash: string | null;
  field_check: string | null;
  /** JSON of the kept field hashes, by field name. */
  erased: string | null;
  /** The record's salt as stored (docs/integrity.md, "Salted field hashes"). */
  salt: string | null;
}

/**
 * Separator of the `tables` column. The reference stores "a comma-separated table list", so
 * engines can filter with `tables LIKE '%sales.orders%'`. A table name that itself contains a
 * comma cannot round-trip: it comes back split into several entries. Real catalog identifiers
 * do not contain commas, and the column's SQL meaning matters more than that corner. Likewise a
 * list holding only the empty name `['']` reads back as `[]`.
 */
export const TABLES_SEPARATOR = ',';

/** Microseconds per millisecond: `event_time` = `ts` × 1000. */
const MICROS_PER_MS = 1000n;

/** Joins a table list the way the `tables` column holds it ('' for no tables). */
export function joinTables(tables: readonly string[]): string {
  return tables.join(TABLES_SEPARATOR);
}

/** Splits a `tables` column value back into the list ('' is no tables). */
export function splitTables(value: string): string[] {
  return value === '' ? [] : value.split(TABLES_SEPARATOR);
}

/** `event_time` (µs since the epoch, UTC) for an epoch-ms event time. */
export function eventTimeMicros(timestampMs: number): bigint {
  return BigInt(timestampMs) * MICROS_PER_MS;
}

/**
 * The tiered row of an event (a StoredEvent, or a TieredEvent read back).
 * Throws TypeError for an event the columns cannot hold exactly: a time that is not a safe
 * integer of ms, or a decision outside ALLOW/DENY/''.
 */
export function toRow(event: TieredEvent): AuditRow {
  if (!Number.isSafeInteger(event.timestamp)) {
    throw new TypeError(`event ${event.eventId}: timestamp must be an integer of epoch ms, got ${event.timestamp}`);
  }
  if (!Number.isSafeInteger(event.ingestTs)) {
    throw new TypeError(`event ${event.eventId}: ingestTs must be an integer of epoch ms, got ${event.ingestTs}`);
  }
  if (!isDecision(event.decision)) {
    throw new TypeError(`event ${event.eventId}: decision must be ALLOW, DENY or '', got ${String(event.decision)}`);
  }
  return {
    event_id: event.eventId,
    source: event.source,
    user_id: event.userId,
    action: event.action,
    resource: event.resource,
    tables: joinTables(event.tables),
    query: event.query,
    details: event.details,
    ts: event.timestamp,
    event_time: eventTimeMicros(event.timestamp),
    decision: event.decision,
    ingest_ts: event.ingestTs,
    seq: event.seq ?? null,
    term: event.term ?? null,
    source_id: event.sourceId ?? null,
    source_seq: event.sourceSeq ?? null,
    record_hash: event.recordHash ?? null,
    chain_hash: event.chainHash ?? null,
    field_check: event.fieldCheck ?? null,
    erased: event.erased === undefined || Object.keys(event.erased).length === 0 ? null : JSON.stringify(event.erased),
    salt: event.salt ?? null,
  };
}

/** The event a tiered row holds: the inverse of {@link toRow}. */
export function fromRow(row: AuditRow): TieredEvent {
  const event: TieredEvent = {
    eventId: row.event_id,
    userId: row.user_id,
    source: row.source,
    action: row.action,
    resource: row.resource,
    decision: row.decision,
    tables: splitTables(row.tables),
    query: row.query,
    details: row.details,
    timestamp: row.ts,
    ingestTs: row.ingest_ts,
  };
  if (row.seq !== null) event.seq = row.seq;
  if (row.term !== null) event.term = row.term;
  if (row.source_id !== null) event.sourceId = row.source_id;
  if (row.source_seq !== null) event.sourceSeq = row.source_seq;
  if (row.record_hash !== null) event.recordHash = row.record_hash;
  if (row.chain_hash !== null) event.chainHash = row.chain_hash;
  if (row.field_check !== null) event.fieldCheck = row.field_check;
  if (row.erased !== null) event.erased = JSON.parse(row.erased) as Record<string, string>;
  if (row.salt !== null) event.salt = row.salt;
  return event;
}

/** True for the values the `decision` column may hold. */
export function isDecision(value: unknown): value is Decision | '' {
  return value === 'ALLOW' || value === 'DENY' || value === '';
}
