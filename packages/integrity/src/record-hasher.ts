import { hash } from 'node:crypto';
import { canonicalContent, CHECKED_FIELDS, HASHED_FIELDS, stringText, tablesText, type CanonicalRecord, type ContentValues, type HashedField } from './record-fields.js';
import { parseSalt, saltedFieldHash, saltIndex, saltsOfKey, SALTED_FIELDS, type FieldSalts } from './record-salt.js';

/**
 * The chain value before the first record: SHA-256 of the ASCII text `auditlake-genesis/1`,
 * as lower-case hex.
 */
export const GENESIS_CHAIN_HASH = sha256Hex('auditlake-genesis/1');

/** A SHA-256 digest as 64 lower-case hex digits. */
export function sha256Hex(text: string | Uint8Array): string {
  // The one-shot form with hex output: measured several times cheaper per call than
  // createHash().update().digest(), and than asking for a Buffer.
  return hash('sha256', text, 'hex');
}

/** chain_i = SHA-256(chain_{i-1} ‖ record_hash_i), both as their 64-hex ASCII text. */
export function chainHash(previousChainHash: string, recordHash: string): string {
  return sha256Hex(previousChainHash + recordHash);
}

/**
 * The field hash of a content field: SHA-256 of its canonical text (the value's UTF-8 bytes),
 * preceded by the field's salt in a record of content format v3 (record-salt.ts). No name or
 * prefix goes in: the record preimage holds the eight field hashes in a fixed order, which is
 * what ties each to its field.
 */
export function fieldHash(text: string, salt?: string): string {
  return salt === undefined ? sha256Hex(text) : saltedFieldHash(salt, text);
}

/** The content preimage's first line, by content format: v2 unsalted, v3 salted. */
const CONTENT_TAG_V2 = 'auditlake-content/2';
const CONTENT_TAG_V3 = 'auditlake-content/3';
/**
 * The tag hashed for a record whose salt does not fit its erased fields or cannot be read: no
 * record is written with it, so its content hash matches nothing stored and the record is
 * reported altered.
 */
const CONTENT_TAG_INVALID = 'auditlake-content/invalid-salt';
/** A field check part no hash gives (not hex): where a salt is unusable, every salted field differs. */
const INVALID_CHECK = 'xxxx';

/**
 * What a record's hashes commit to besides its place in the log (seq, term, ingestTs): known as
 * soon as the event is validated, so it is computed there (where ingest parses the event)
 * rather than where the leader orders events, which only hashes in the place.
 */
export interface RecordContent {
  /**
   * The content hash: SHA-256 of `auditlake-content/2\n<timestamp>\n<eventId JSON>\n<sourceId
   * JSON or empty>\n<sourceSeq or empty>\n` followed by the eight field hashes concatenated
   * (`auditlake-content/3` for a salted record).
   */
  hash: string;
  /**
   * The field check without its ingestTs and term parts: 40 hex digits (eventId, the eight
   * content fields, timestamp) then 8 (sourceId, sourceSeq).
   */
  check: string;
}

/** What a record's hashes are, with the content they were computed from. */
export interface RecordDigest {
  recordHash: string;
  /** 14 fields × 4 hex digits (docs/integrity.md, "fieldCheck"). */
  fieldCheck: string;
  content: RecordContent;
}

/** Texts longer than this are hashed every time: long values rarely repeat. */
const CACHED_TEXT_LENGTH_MAX = 256;
/** Entries per field's cache; a full cache is emptied and refilled (a bound, not an LRU). */
const CACHE_ENTRIES_MAX = 4096;

/**
 * A cache of the field hashes of one content field whose values repeat (a few engines,
 * actions, decisions, users, resources). `tables`, `query` and `details` are not cached: the
 * last two are nearly always new, and table lists measured a 31% hit rate on the benchmark's
 * skewed workload — too few hits to pay for a map whose refills are promoted to the old
 * generation and collected there.
 */
class FieldCache {
  readonly #entries = new Map<string, string>();

  /** The text's field hash (hex). */
  get(text: string): string {
    let digest = this.#entries.get(text);
    if (digest === undefined) {
      digest = sha256Hex(text);
      if (text.length <= CACHED_TEXT_LENGTH_MAX) {
        if (this.#entries.size >= CACHE_ENTRIES_MAX) this.#entries.clear();
        this.#entries.set(text, digest);
      }
    }
    return digest;
  }
}

/**
 * Computes record hashes. Field hashes of short, repeating values are cached per field: a hit
 * costs a map lookup instead of a SHA-256 call. One hasher per thread of work.
 *
 * This runs for every event ingested (on the parse path and again on each standby), so it is
 * written for few calls and few allocations: one template for each preimage, cached check
 * parts, no canonical form built first. The obvious form of the same definition is the
 * reference in test/record-hasher.test.ts.
 */
export class RecordHasher {
  readonly #userId = new FieldCache();
  readonly #source = new FieldCache();
  readonly #action = new FieldCache();
  readonly #resource = new FieldCache();
  readonly #decision = new FieldCache();

  /**
   * The content part of a record (everything but seq, term and ingestTs). An erased field's
   * kept hash stands in for its value's (the value itself is the marker then, and is not hashed).
   */
  content(record: Omit<CanonicalRecord, 'seq' | 'term' | 'ingestTs'>): RecordContent {
    const texts = record.texts;
    if (record.erased !== undefined) return this.#contentGeneral(record);
    return this.contentOfTexts(record.timestamp, record.eventIdText, record.sourceIdText, record.sourceSeqText, texts.userId, texts.source, texts.action, texts.resource, texts.decision, texts.tables, texts.query, texts.details, record.salt);
  }

  /**
   * The content part of an event's values, as ingest has them: the same as
   * `content(canonicalContent(values))` without building the canonical form first. `salt`: the
   * record's salt when not among the values (ingest draws a key for each event; no spread).
   */
  contentOfValues(values: ContentValues, salt: string | undefined = values.salt): RecordContent {
    if (values.erased !== undefined) return this.content({ ...canonicalContent(values), salt });
    return this.contentOfTexts(
      values.timestamp,
      stringText(values.eventId),
      values.sourceId === undefined ? '' : stringText(values.sourceId),
      values.sourceSeq === undefined ? '' : String(values.sourceSeq),
      values.userId,
      values.source,
      values.action,
      values.resource,
      values.decision,
      tablesText(values.tables),
      values.query,
      values.details,
      salt,
    );
  }

  /**
   * The content part of a record without erased fields, from its canonical texts
   * ({@link CanonicalRecord}) given one by one: what a verifier reading columns has at hand.
   * Positional rather than one object: this runs once per event, and the values are at hand.
   * `salt`: the record's key K as stored (content format v3); undefined for v2.
   */
  contentOfTexts(
    timestamp: number,
    eventIdText: string,
    sourceIdText: string,
    sourceSeqText: string,
    userId: string,
    source: string,
    action: string,
    resource: string,
    decision: string,
    tables: string,
    query: string,
    details: string,
    salt?: string,
  ): RecordContent {
    if (salt !== undefined) return this.#contentSalted(timestamp, eventIdText, sourceIdText, sourceSeqText, userId, source, action, resource, decision, tables, query, details, salt);
    return contentOfDigests(
      CONTENT_TAG_V2,
      timestamp,
      eventIdText,
      sourceIdText,
      sourceSeqText,
      this.#userId.get(userId),
      this.#source.get(source),
      this.#action.get(action),
      this.#resource.get(resource),
      this.#decision.get(decision),
      sha256Hex(tables),
      sha256Hex(query),
      sha256Hex(details),
    );
  }

  /**
   * {@link contentOfTexts} of a v3 record: the five erasable fields hashed with the salts of its
   * key, which differ per record, so only source, action and decision are cached. A salt that
   * is not a key (the salts an erasure kept, or something unreadable) takes the general path.
   */
  #contentSalted(
    timestamp: number,
    eventIdText: string,
    sourceIdText: string,
    sourceSeqText: string,
    userId: string,
    source: string,
    action: string,
    resource: string,
    decision: string,
    tables: string,
    query: string,
    details: string,
    salt: string,
  ): RecordContent {
    const salts = saltsOfKey(salt);
    if (salts === undefined) {
      const texts = { userId, source, action, resource, decision, tables, query, details };
      return this.#contentGeneral({ timestamp, eventIdText, sourceIdText, sourceSeqText, texts, erased: undefined, salt });
    }
    return contentOfDigests(
      CONTENT_TAG_V3,
      timestamp,
      eventIdText,
      sourceIdText,
      sourceSeqText,
      saltedFieldHash(salts[0] as string, userId),
      this.#source.get(source),
      this.#action.get(action),
      saltedFieldHash(salts[1] as string, resource),
      this.#decision.get(decision),
      saltedFieldHash(salts[2] as string, tables),
      saltedFieldHash(salts[3] as string, query),
      saltedFieldHash(salts[4] as string, details),
    );
  }

  /**
   * Whether a record without erased fields, given as {@link contentOfTexts} takes it plus its
   * place, hashes to exactly the stored record hash and field check: the verifier's question for
   * nearly every record. The same hashes as {@link contentOfTexts} then {@link recordHashOf},
   * but the field check is compared with the stored one part by part instead of being built,
   * and no digest object is made: a record for which this is false is checked again the general
   * way, which says what differs. `salt`: the record's stored salt; only a key K (a v3 record
   * without erased fields) is taken here, any other salt answers false.
   */
  matchesStored(
    seq: number,
    term: number,
    ingestTs: number,
    timestamp: number,
    eventIdText: string,
    sourceIdText: string,
    sourceSeqText: string,
    userId: string,
    source: string,
    action: string,
    resource: string,
    decision: string,
    tables: string,
    query: string,
    details: string,
    storedRecordHash: string,
    storedFieldCheck: string,
    salt?: string,
  ): boolean {
    const check = storedFieldCheck;
    if (check.length !== FIELD_CHECK_LENGTH) return false;
    if (salt !== undefined) {
      const salts = saltsOfKey(salt);
      if (salts === undefined) return false;
      return matchesDigests(
        seq,
        term,
        ingestTs,
        timestamp,
        CONTENT_TAG_V3,
        eventIdText,
        sourceIdText,
        sourceSeqText,
        saltedFieldHash(salts[0] as string, userId),
        this.#source.get(source),
        this.#action.get(action),
        saltedFieldHash(salts[1] as string, resource),
        this.#decision.get(decision),
        saltedFieldHash(salts[2] as string, tables),
        saltedFieldHash(salts[3] as string, query),
        saltedFieldHash(salts[4] as string, details),
        storedRecordHash,
        check,
      );
    }
    return matchesDigests(
      seq,
      term,
      ingestTs,
      timestamp,
      CONTENT_TAG_V2,
      eventIdText,
      sourceIdText,
      sourceSeqText,
      this.#userId.get(userId),
      this.#source.get(source),
      this.#action.get(action),
      this.#resource.get(resource),
      this.#decision.get(decision),
      sha256Hex(tables),
      sha256Hex(query),
      sha256Hex(details),
      storedRecordHash,
      check,
    );
  }

  /**
   * The content part of a record the fast paths do not take (erased fields, salts an erasure
   * kept): the general form, field by field. An erased field's kept hash stands in for its
   * value's. A salt that cannot be read, or that does not fit the erased fields — a salt kept
   * for an erased field (or the key beside one) would confirm a guess of its value, and a salt
   * missing for a field not erased leaves it unprovable — gives a content hash that matches
   * nothing stored, and field check parts that differ for every salted field.
   */
  #contentGeneral(record: Omit<CanonicalRecord, 'seq' | 'term' | 'ingestTs'>): RecordContent {
    const erased = record.erased;
    const texts = record.texts;
    let salts: FieldSalts | undefined;
    let valid = true;
    if (record.salt !== undefined) {
      const parsed = parseSalt(record.salt);
      salts = parsed?.salts;
      if (salts === undefined) valid = false;
      else for (let i = 0; i < SALTED_FIELDS.length; i++) if ((erased?.[SALTED_FIELDS[i] as HashedField] !== undefined) === (salts[i] !== undefined)) valid = false;
      // The kept form is what an erasure leaves: with every field's salt in it (none erased), it
      // is a key replaced by what it derives — an edit, which must not verify (review).
      if (parsed !== undefined && !parsed.key && salts?.every((salt) => salt !== undefined) === true) valid = false;
    }
    let hashes = '';
    let check = shortCheck(record.eventIdText);
    for (const name of HASHED_FIELDS) {
      const at = saltIndex(name);
      const kept = erased?.[name];
      let digest: string;
      if (kept !== undefined) digest = kept;
      else if (record.salt === undefined || at < 0) digest = sha256Hex(texts[name]);
      else digest = saltedFieldHash(salts?.[at] ?? '', texts[name]);
      hashes += digest;
      check += !valid && at >= 0 ? INVALID_CHECK : digest.slice(0, 4);
    }
    const timestampText = String(record.timestamp);
    check += shortCheck(timestampText) + shortCheck(record.sourceIdText) + shortCheck(record.sourceSeqText);
    const tag = !valid ? CONTENT_TAG_INVALID : record.salt === undefined ? CONTENT_TAG_V2 : CONTENT_TAG_V3;
    return { hash: sha256Hex(`${tag}\n${timestampText}\n${record.eventIdText}\n${record.sourceIdText}\n${record.sourceSeqText}\n${hashes}`), check };
  }

  /** The record hash and field check of a whole record. */
  digest(record: CanonicalRecord): RecordDigest {
    const content = this.content(record);
    return { recordHash: recordHashOf(record.seq, record.term, record.ingestTs, content), fieldCheck: fieldCheckOf(content, record.term, record.ingestTs), content };
  }
}

/**
 * The record hash: SHA-256 of `auditlake-record/2\n<seq>\n<term>\n<ingestTs>\n<content hash>`
 * (numbers in decimal). Every line is a number or hex, so the preimage is unambiguous; so is the
 * content hash's (its only texts are JSON texts, which hold no raw newline, and fixed-length hex).
 */
export function recordHashOf(seq: number, term: number, ingestTs: number, content: Pick<RecordContent, 'hash'>): string {
  return sha256Hex(`auditlake-record/2\n${seq}\n${term}\n${ingestTs}\n${content.hash}`);
}

/**
 * The field check: per CHECKED_FIELDS entry, 4 hex digits — a content field's are the first 4
 * of its field hash; the others' are FNV-1a (32-bit, folded to 16 bits) of their text. Not a
 * security measure (the record hash is): it lets a verifier say which field changed.
 */
export function fieldCheckOf(content: RecordContent, term: number, ingestTs: number): string {
  return content.check.slice(0, 40) + positionCheck(term, ingestTs) + content.check.slice(40);
}

/** The ingestTs and term parts of the field check (8 hex): the same for a whole batch, so the last is kept. */
let lastPosition = { term: -1, ingestTs: -1, check: '' };
function positionCheck(term: number, ingestTs: number): string {
  if (lastPosition.term !== term || lastPosition.ingestTs !== ingestTs) lastPosition = { term, ingestTs, check: shortCheck(String(ingestTs)) + shortCheck(String(term)) };
  return lastPosition.check;
}

/** The 4-hex check of each checked field, by name: what a verifier compares. */
export function splitFieldCheck(check: string): Map<string, string> {
  const parts = new Map<string, string>();
  CHECKED_FIELDS.forEach((name, i) => parts.set(name, check.slice(i * 4, i * 4 + 4)));
  return parts;
}

/**
 * The content part of a record without erased fields from its eight field digests, under a
 * content format's tag: the v2 and v3 formats differ only in how those digests are made.
 * Positional, like contentOfTexts: it runs once per event (an array of the digests measured
 * ~0.2 µs per event slower).
 */
function contentOfDigests(
  tag: string,
  timestamp: number,
  eventIdText: string,
  sourceIdText: string,
  sourceSeqText: string,
  user: string,
  source: string,
  action: string,
  resource: string,
  decision: string,
  tables: string,
  query: string,
  details: string,
): RecordContent {
  const timestampText = String(timestamp);
  // Joined, not concatenated: the check travels with its event until the event is written
  // (hundreds of ms at full ingest), and a concatenation is a tree of a dozen small strings
  // that every young-generation collection in between copies and then promotes; a join is one
  // flat string (~3 µs per event less in a synthetic run with 4,000 events in flight).
  const check = [
    shortCheck(eventIdText),
    user.slice(0, 4),
    source.slice(0, 4),
    action.slice(0, 4),
    resource.slice(0, 4),
    decision.slice(0, 4),
    tables.slice(0, 4),
    query.slice(0, 4),
    details.slice(0, 4),
    shortCheck(timestampText),
    shortCheck(sourceIdText),
    shortCheck(sourceSeqText),
  ].join('');
  return { hash: sha256Hex(`${tag}\n${timestampText}\n${eventIdText}\n${sourceIdText}\n${sourceSeqText}\n${user}${source}${action}${resource}${decision}${tables}${query}${details}`), check };
}

/** FNV-1a over the UTF-16 code units, folded to 16 bits, as 4 hex digits. */
function shortCheck(text: string): string {
  const check = fnvFold(text);
  return String.fromCharCode(HEX_DIGIT[check >>> 12] as number, HEX_DIGIT[(check >>> 8) & 15] as number, HEX_DIGIT[(check >>> 4) & 15] as number, HEX_DIGIT[check & 15] as number);
}

/** FNV-1a (32-bit) over the UTF-16 code units, folded to 16 bits: a short check's value. */
function fnvFold(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return (h ^ (h >>> 16)) & 0xffff;
}

/**
 * The end of {@link RecordHasher.matchesStored} for either content format, given the eight
 * field hashes in HASHED_FIELDS order: the stored field check compared part by part (the
 * CHECKED_FIELDS order, 4 hex digits each, see fieldCheckOf), then the content and record
 * hashes against the stored record hash.
 */
function matchesDigests(
  seq: number,
  term: number,
  ingestTs: number,
  timestamp: number,
  contentTag: string,
  eventIdText: string,
  sourceIdText: string,
  sourceSeqText: string,
  userHash: string,
  sourceHash: string,
  actionHash: string,
  resourceHash: string,
  decisionHash: string,
  tablesHash: string,
  queryHash: string,
  detailsHash: string,
  storedRecordHash: string,
  check: string,
): boolean {
  const timestampText = String(timestamp);
  const termText = String(term);
  const ingestTsText = String(ingestTs);
  if (
    !holdsFold(check, 0, fnvFold(eventIdText)) ||
    !holdsPrefix(check, 4, userHash) ||
    !holdsPrefix(check, 8, sourceHash) ||
    !holdsPrefix(check, 12, actionHash) ||
    !holdsPrefix(check, 16, resourceHash) ||
    !holdsPrefix(check, 20, decisionHash) ||
    !holdsPrefix(check, 24, tablesHash) ||
    !holdsPrefix(check, 28, queryHash) ||
    !holdsPrefix(check, 32, detailsHash) ||
    !holdsFold(check, 36, fnvFold(timestampText)) ||
    !holdsFold(check, 40, fnvFold(ingestTsText)) ||
    !holdsFold(check, 44, fnvFold(termText)) ||
    !holdsFold(check, 48, fnvFold(sourceIdText)) ||
    !holdsFold(check, 52, fnvFold(sourceSeqText))
  ) {
    return false;
  }
  const content = sha256Hex(`${contentTag}\n${timestampText}\n${eventIdText}\n${sourceIdText}\n${sourceSeqText}\n${userHash}${sourceHash}${actionHash}${resourceHash}${decisionHash}${tablesHash}${queryHash}${detailsHash}`);
  return sha256Hex(`auditlake-record/2\n${seq}\n${termText}\n${ingestTsText}\n${content}`) === storedRecordHash;
}

/** Whether `check` holds, at `at`, the 4 hex digits of `fold` (compared without building them). */
function holdsFold(check: string, at: number, fold: number): boolean {
  return (
    check.charCodeAt(at) === HEX_DIGIT[fold >>> 12] &&
    check.charCodeAt(at + 1) === HEX_DIGIT[(fold >>> 8) & 15] &&
    check.charCodeAt(at + 2) === HEX_DIGIT[(fold >>> 4) & 15] &&
    check.charCodeAt(at + 3) === HEX_DIGIT[fold & 15]
  );
}

/** Whether `check` holds, at `at`, the first 4 hex digits of `digest`. */
function holdsPrefix(check: string, at: number, digest: string): boolean {
  return check.charCodeAt(at) === digest.charCodeAt(0) && check.charCodeAt(at + 1) === digest.charCodeAt(1) && check.charCodeAt(at + 2) === digest.charCodeAt(2) && check.charCodeAt(at + 3) === digest.charCodeAt(3);
}

/** 4 hex digits per CHECKED_FIELDS entry. */
const FIELD_CHECK_LENGTH = 4 * CHECKED_FIELDS.length;

/** Char codes of the lower-case hex digits. */
const HEX_DIGIT = [...'0123456789abcdef'].map((c) => c.charCodeAt(0));
