import { AuditError, AuditErrorCode, type EncodedEvent, type StoredEvent } from '@auditlake/model';
import {
  canonicalOfText,
  canonicalRecord,
  chainHash,
  fieldCheckOf,
  GENESIS_CHAIN_HASH,
  integrityKindOf,
  newSaltKey,
  readEventText,
  RecordHasher,
  recordHashOf,
  type CanonicalRecord,
  type IntegrityEventKind,
  type RecordContent,
} from '@auditlake/integrity';

/** Where the chain stands at the end of the log. */
export interface ChainHead {
  /** chain_hash of the last entry; GENESIS_CHAIN_HASH before the first chained one. */
  hash: string;
  /** True once the log's last entry carries chain fields (an entry without them is then refused). */
  started: boolean;
}

/** An auditlake integrity event met while appending or applying (details as a string). */
export interface IntegrityEntry {
  kind: IntegrityEventKind;
  seq: number;
  details: string;
}

/** What a leader stores for one event, and what it is. */
export interface ChainedJson {
  json: string;
  integrity: IntegrityEntry | undefined;
}

/** A replicated entry's fields, read once for its keys, its verification and its kind. */
export interface VerifiedEntry {
  eventId: string;
  timestamp: number;
  seq: number;
  ingestTs: number;
  term: number;
  chainHash: string | undefined;
  integrity: IntegrityEntry | undefined;
}

/**
 * The record chain of one store's log (docs/integrity.md): the leader appends chain fields to
 * each event it orders; a standby recomputes them for each entry it applies and refuses entries
 * that do not continue its chain. The head moves only when a write succeeded ({@link commit}).
 */
export class RecordChain {
  readonly enabled: boolean;
  readonly #hasher = new RecordHasher();
  #head: ChainHead;

  constructor(enabled: boolean, head: ChainHead) {
    this.enabled = enabled;
    this.#head = head;
  }

  get head(): ChainHead {
    return { ...this.#head };
  }

  /** Sets the head after a write that changed the log (applied, truncated). */
  commit(head: ChainHead): void {
    this.#head = { ...head };
  }

  /**
   * The stored JSON of an event the leader orders after a record whose chain hash is
   * `previous`: the encoded event with its place in the order and its chain fields, and the
   * new chain hash (the head once the write succeeded). The event's content part comes with it
   * when ingest computed it (EncodedEvent.chainContent, with the record's key K); here only the
   * position is hashed in. Otherwise (auditlake's own events, forwarded ones) it is computed
   * here, under a new key: every record ordered from now on is salted (content format v3).
   */
  append(event: EncodedEvent, ingestTs: number, seq: number, term: number, previous: string): ChainedJson & { chainHash: string } {
    let content: RecordContent | undefined = event.chainContent;
    let salt = event.chainContent?.salt;
    let integrity: IntegrityEntry | undefined;
    if (content === undefined) {
      const record = readEventText(event.json) ?? parsedRecord(event.json);
      // An event that comes with kept hashes already (none should) keeps the unsalted form they belong to.
      salt = record.erased === undefined ? (record.salt ?? newSaltKey()) : record.salt;
      content = this.#hasher.content({ ...record, salt });
      integrity = integrityOf(record, seq);
    }
    const recordHash = recordHashOf(seq, term, ingestTs, content);
    const chain = chainHash(previous, recordHash);
    const saltMember = salt === undefined ? '' : `,"salt":"${salt}"`;
    const json = `${event.json.slice(0, -1)},"ingestTs":${ingestTs},"seq":${seq},"term":${term},"recordHash":"${recordHash}","chainHash":"${chain}","fieldCheck":"${fieldCheckOf(content, term, ingestTs)}"${saltMember}}`;
    return { json, chainHash: chain, integrity };
  }

  /**
   * Reads a replicated entry and checks it continues the chain after `previous` (undefined: the
   * entry follows a gap, so only its own record hash is checked). Throws
   * AUDIT_INTEGRITY_MISMATCH for an entry whose hashes do not match, or one without chain
   * fields after the chain started.
   */
  verify(text: string, previous: ChainHead | undefined): VerifiedEntry {
    const read = readEventText(text);
    let record: CanonicalRecord;
    let stored: { recordHash?: string | undefined; chainHash?: string | undefined; fieldCheck?: string | undefined };
    let eventId: string;
    if (read !== undefined && read.seq !== undefined) {
      record = canonicalOfText(read) as CanonicalRecord;
      stored = read;
      eventId = read.eventIdText.includes('\\') ? (JSON.parse(read.eventIdText) as string) : read.eventIdText.slice(1, -1);
    } else {
      const event = parseStored(text);
      record = canonicalRecord(event);
      stored = event;
      eventId = event.eventId;
    }
    const entry: VerifiedEntry = {
      eventId,
      timestamp: record.timestamp,
      seq: record.seq,
      ingestTs: record.ingestTs,
      term: record.term,
      chainHash: stored.chainHash,
      integrity: integrityOf(record, record.seq),
    };
    if (!this.enabled) return entry;
    if (stored.recordHash === undefined || stored.chainHash === undefined) {
      if (previous?.started === true) throw mismatch(record.seq, 'it has no chain fields, but the chain has started');
      return entry;
    }
    const digest = this.#hasher.digest(record);
    if (digest.recordHash !== stored.recordHash) throw mismatch(record.seq, 'its record_hash does not match its content');
    if (digest.fieldCheck !== stored.fieldCheck) throw mismatch(record.seq, 'its field_check does not match its content');
    if (previous !== undefined && chainHash(previous.hash, digest.recordHash) !== stored.chainHash) {
      throw mismatch(record.seq, 'its chain_hash does not follow this node\'s chain (the logs differ before it)');
    }
    return entry;
  }
}

const conflictHasher = new RecordHasher();

/**
 * The event kept under an eventId, as a repeat of the id is compared with it: its content hash
 * (docs/integrity.md: everything but the place in the log), its time, and how its fields are
 * hashed (its salt, its erased fields' kept hashes).
 */
export interface ContentReference {
  hash: string;
  timestamp: number;
  salt: string | undefined;
  erased: CanonicalRecord['erased'];
}

/** The reference of a stored event's JSON. */
export function storedContentReference(json: string): ContentReference {
  const text = readEventText(json) ?? parsedRecord(json);
  return { hash: conflictHasher.content(text).hash, timestamp: text.timestamp, salt: text.salt, erased: text.erased };
}

/** The reference of an event not stored yet (the first of a batch under its id). */
export function encodedContentReference(event: EncodedEvent): ContentReference {
  if (event.chainContent !== undefined) return { hash: event.chainContent.hash, timestamp: event.timestamp, salt: event.chainContent.salt, erased: undefined };
  return storedContentReference(event.json);
}

/**
 * The content hash of an event's JSON (as received) hashed as the reference's record is: with
 * its salt — a retry got its own key at ingest, so its own content hash never equals the kept
 * event's — and with the reference's kept hash for each field erased there (an erased value can
 * no longer be compared, so an erased event and its retry still match). `timestamp` replaces
 * the event's own time. What tells a retry of a stored event from another event under its id;
 * computed only where an id turned out to be taken (rare), never for every event.
 */
export function contentHashAgainst(json: string, reference: ContentReference, timestamp?: number): string {
  const text = readEventText(json) ?? parsedRecord(json);
  return conflictHasher.content({ ...text, timestamp: timestamp ?? text.timestamp, salt: reference.salt, erased: reference.erased }).hash;
}

/** The head of a log whose last entry is `last` (undefined: an empty log). */
export function headOf(last: StoredEvent | undefined): ChainHead {
  if (last?.chainHash === undefined) return { hash: GENESIS_CHAIN_HASH, started: false };
  return { hash: last.chainHash, started: true };
}

/** The canonical record of an event JSON in another layout (never the store's own: a safety net). */
function parsedRecord(json: string): CanonicalRecord {
  const event = JSON.parse(json) as StoredEvent;
  return canonicalRecord({ ...event, ingestTs: 0, seq: 0, term: 0 });
}

function parseStored(text: string): StoredEvent {
  let event: StoredEvent;
  try {
    event = JSON.parse(text) as StoredEvent;
  } catch {
    throw new TypeError(`replicated entry is not JSON: ${text.slice(0, 200)}`);
  }
  if (typeof event !== 'object' || event === null || typeof event.eventId !== 'string' || !Number.isSafeInteger(event.seq)) {
    throw new TypeError(`replicated entry is not a stored event: ${text.slice(0, 200)}`);
  }
  return event;
}

function integrityOf(record: Pick<CanonicalRecord, 'texts'>, seq: number): IntegrityEntry | undefined {
  const kind = integrityKindOf(record.texts.source, record.texts.action, record.texts.decision);
  return kind === undefined ? undefined : { kind, seq, details: record.texts.details };
}

function mismatch(seq: number, why: string): AuditError {
  return new AuditError(AuditErrorCode.INTEGRITY_MISMATCH, `refused the replicated entry at seq ${seq}: ${why}; nothing was stored`);
}
