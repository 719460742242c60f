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
 * A record as hashing sees it: each content field as its canonical text (the value itself;
 * `tables` as the names joined with commas, see {@link tablesText}), eventId and sourceId as
 * their JSON texts (they are written into the record preimage directly, one per line, and a JSON
 * text holds no raw newline), numbers as themselves. `sourceId`/`sourceSeq` are empty texts
 * when the event had none.
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
  /**
   * The record's salt as stored (record-salt.ts): its key K, or the field salts an erasure
   * kept. undefined for a record of content format v2 (written before salts), hashed unsalted.
   */
  salt?: string | undefined;
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
  /** See CanonicalRecord.salt. */
  salt?: string | undefined;
}

/**
 * The JSON text of a string (`JSON.stringify`): how eventId and sourceId are written into the
 * record preimage. Strings reach the store well-formed (validation replaces lone surrogates),
 * so the text is the same from every copy.
 */
export function stringText(value: string): string {
  // Nearly every id is printable ASCII without a quote or backslash, which JSON.stringify
  // writes as is between quotes: checked with a loop, that is cheaper than the call.
  for (let i = 0; i < value.length; i++) {
    const code = value.charCodeAt(i);
    if (code < 0x20 || code > 0x7e || code === 0x22 || code === 0x5c) return JSON.stringify(value);
  }
  return `"${value}"`;
}

/**
 * The canonical text of a table list: the names joined with commas, as the tier's `tables`
 * column holds them (a name containing a comma cannot be told apart there, so the hash does not
 * tell it apart either).
 */
export function tablesText(tables: readonly string[]): string {
  return tables.join(',');
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
    texts: textsOf(values),
    erased: values.erased === undefined || isEmpty(values.erased) ? undefined : values.erased,
    salt: values.salt,
  };
}

/** The values of a record that its content part covers: all but its place in the log. */
export type ContentValues = Omit<RecordValues, 'seq' | 'term' | 'ingestTs'>;

/** The canonical form of a record's content (an event not yet ordered, as ingest has it). */
export function canonicalContent(values: ContentValues): Omit<CanonicalRecord, 'seq' | 'term' | 'ingestTs'> {
  return {
    timestamp: values.timestamp,
    eventIdText: stringText(values.eventId),
    sourceIdText: values.sourceId === undefined ? '' : stringText(values.sourceId),
    sourceSeqText: values.sourceSeq === undefined ? '' : String(values.sourceSeq),
    texts: textsOf(values),
    erased: values.erased === undefined || isEmpty(values.erased) ? undefined : values.erased,
    salt: values.salt,
  };
}

function textsOf(values: ContentValues): Record<HashedField, string> {
  return {
    userId: values.userId,
    source: values.source,
    action: values.action,
    resource: values.resource,
    decision: values.decision,
    tables: tablesText(values.tables),
    query: values.query,
    details: values.details,
  };
}

function isEmpty(object: object): boolean {
  for (const _ in object) return false;
  return true;
}

/** True when `name` is a content field. */
export function isHashedField(name: string): name is HashedField {
  return (HASHED_FIELDS as readonly string[]).includes(name);
}

/** True when `name` is a field erasure may erase. */
export function isErasableField(name: string): name is ErasableField {
  return (ERASABLE_FIELDS as readonly string[]).includes(name);
}

/** The canonical text an erased field holds (for `tables`, its one entry). */
export function erasedText(_field: HashedField): string {
  return ERASED_MARKER;
}
