/**
 * The fields a record hash covers and how each is written for hashing (docs/integrity.md,
 * "The canonical encoding"). The encoding is defined on field values, not on the bytes any one
 * copy happens to hold, so the local store (JSON), the tier (Parquet columns) and a verifier in
 * another language all compute the same hashes.
 */

/**
 * Content fields. Each is committed through its own SHA-256 field hash, so its value can later
 * be erased while the hash is kept and the record hash still verifies.
 */
export const HASHED_FIELDS = ['userId', 'source', 'action', 'resource', 'decision', 'tables', 'query', 'details'] as const;
export type HashedField = (typeof HASHED_FIELDS)[number];

/**
 * The content fields `POST /admin/audit/erase` may erase: those that can hold personal data.
 * `source`, `action` and `decision` say what happened and are never erased.
 */
export const ERASABLE_FIELDS = ['userId', 'resource', 'tables', 'query', 'details'] as const;
export type ErasableField = (typeof ERASABLE_FIELDS)[number];

/**
 * Every field `fieldCheck` carries a 16-bit check of, in this order: what lets a verifier name
 * the field that was altered. The identity and position fields (eventId, times, term, source
 * ids) are written into the record hash directly; seq is checked by its place in the chain.
 */
export const CHECKED_FIELDS = [
  'eventId',
  'userId',
  'source',
  'action',
  'resource',
  'decision',
  'tables',
  'query',
  'details',
  'timestamp',
  'ingestTs',
  'term',
  'sourceId',
  'sourceSeq',
] as const;
export type CheckedField = (typeof CHECKED_FIELDS)[number];

/** What an erased content field holds instead of its value (`tables` holds it as its one entry). */
export const ERASED_MARKER = '[erased by auditlake]';

/**
 * A record as hashing sees it: each string field as its canonical text (the JSON text of the
 * value, see {@link stringText}), `tables` as the JSON text of the comma-joined list, numbers
 * as themselves. `sourceId`/`sourceSeq` are undefined when the event had none.
 */
export interface CanonicalRecord {
  seq: number;
  term: number;
  ingestTs: number;
  timestamp: number;
  /** The eventId's JSON text. */
  eventIdText: string;
  /** The sourceId's JSON text, '' when the event has none. */
  sourceIdText: string;
  /** sourceSeq in decimal, '' when the event has none. */
  sourceSeqText: string;
  /** Canonical texts of the content fields, by name. */
  texts: Record<HashedField, string>;
  /** Field hashes kept for erased fields (64 hex), by name. */
  erased: Partial<Record<HashedField, string>> | undefined;
}

/** The values of a record, as a stored event or a tiered row gives them. */
export interface RecordValues {
  seq: number;
  term: number;
  ingestTs: number;
  timestamp: number;
  eventId: string;
  userId: string;
  source: string;
  action: string;
  resource: string;
  decision: string;
  tables: readonly string[];
  query: string;
  details: string;
  sourceId?: string | undefined;
  sourceSeq?: number | undefined;
  erased?: Partial<Record<HashedField, string>> | undefined;
}

/**
 * The canonical text of a string value: its JSON text (`JSON.stringify`), which is exactly what
 * the stored event's JSON holds for it. Strings reach the store well-formed (validation replaces
 * lone surrogates), so the text round-trips through UTF-8 and Parquet unchanged.
 */
export function stringText(value: string): string {
  return JSON.stringify(value);
}

/**
 * The canonical text of a table list: the JSON text of the list joined with commas, as the
 * tier's `tables` column holds it (a name containing a comma cannot be told apart there, so the
 * hash does not tell it apart either).
 */
export function tablesText(tables: readonly string[]): string {
  return JSON.stringify(tables.join(','));
}

/** The canonical form of record values (the verifier's path, and the tier's). */
export function canonicalRecord(values: RecordValues): CanonicalRecord {
  return {
    seq: values.seq,
    term: values.term,
    ingestTs: values.ingestTs,
    timestamp: values.timestamp,
    eventIdText: stringText(values.eventId),
    sourceIdText: values.sourceId === undefined ? '' : stringText(values.sourceId),
    sourceSeqText: values.sourceSeq === undefined ? '' : String(values.sourceSeq),
    texts: {
      userId: stringText(values.userId),
      source: stringText(values.source),
      action: stringText(values.action),
      resource: stringText(values.resource),
      decision: stringText(values.decision),
      tables: tablesText(values.tables),
      query: stringText(values.query),
      details: stringText(values.details),
    },
    erased: values.erased === undefined || Object.keys(values.erased).length === 0 ? undefined : values.erased,
  };
}

/** True when `name` is a content field. */
export function isHashedField(name: string): name is HashedField {
  return (HASHED_FIELDS as readonly string[]).includes(name);
}

/** True when `name` is a field erasure may erase. */
export function isErasableField(name: string): name is ErasableField {
  return (ERASABLE_FIELDS as readonly string[]).includes(name);
}

/** The canonical text an erased field holds. */
export function erasedText(field: HashedField): string {
  return field === 'tables' ? tablesText([ERASED_MARKER]) : stringText(ERASED_MARKER);
}
