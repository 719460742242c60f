import { hash } from 'node:crypto';
import { CHECKED_FIELDS, HASHED_FIELDS, type CanonicalRecord, type HashedField } from './record-fields.js';

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

const FIELD_PREFIX: Record<HashedField, string> = Object.fromEntries(HASHED_FIELDS.map((name) => [name, `auditlake-field/1\n${name}\n`])) as Record<HashedField, string>;

/** The field hash of a content field: SHA-256 of `auditlake-field/1\n<name>\n<canonical text>`. */
export function fieldHash(name: HashedField, text: string): string {
  return sha256Hex(FIELD_PREFIX[name] + text);
}

/** Texts longer than this are hashed every time: long free text rarely repeats. */
const CACHED_TEXT_LENGTH_MAX = 256;
/** Entries per field's cache; a full cache is emptied and refilled (a bound, not an LRU). */
const CACHE_ENTRIES_MAX = 4096;

/** What a record's hashes are made of, and the record hash itself. */
export interface RecordDigest {
  /** The eight content field hashes, in HASHED_FIELDS order. */
  fieldHashes: string[];
  recordHash: string;
  /** 14 fields × 4 hex digits (docs/integrity.md, "fieldCheck"). */
  fieldCheck: string;
}

/**
 * Computes record hashes. Content fields repeat a lot in audit logs (a few engines, actions,
 * users and tables), so field hashes of short texts are cached per field: a hit costs a map
 * lookup instead of a SHA-256 call. One hasher per thread of work; not shared state of value.
 */
export class RecordHasher {
  readonly #caches = new Map<HashedField, Map<string, string>>(HASHED_FIELDS.map((name) => [name, new Map()]));

  /** The field hash of `text` for `name`, from the cache when seen recently. */
  fieldHash(name: HashedField, text: string): string {
    if (text.length > CACHED_TEXT_LENGTH_MAX) return fieldHash(name, text);
    const cache = this.#caches.get(name) as Map<string, string>;
    let digest = cache.get(text);
    if (digest === undefined) {
      digest = fieldHash(name, text);
      if (cache.size >= CACHE_ENTRIES_MAX) cache.clear();
      cache.set(text, digest);
    }
    return digest;
  }

  /**
   * The record hash and its parts. An erased field's kept hash stands in for its value's (the
   * value itself is the marker then, and is not hashed).
   */
  digest(record: CanonicalRecord): RecordDigest {
    const fieldHashes = new Array<string>(HASHED_FIELDS.length);
    for (let i = 0; i < HASHED_FIELDS.length; i++) {
      const name = HASHED_FIELDS[i] as HashedField;
      const kept = record.erased?.[name];
      fieldHashes[i] = kept ?? this.fieldHash(name, record.texts[name]);
    }
    return { fieldHashes, recordHash: recordHash(record, fieldHashes), fieldCheck: fieldCheck(record, fieldHashes) };
  }
}

/**
 * SHA-256 of the record preimage: `auditlake-record/1`, then seq, term, ingestTs, timestamp
 * (decimal), the eventId's JSON text, the sourceId's JSON text and sourceSeq (empty when
 * absent), one per line, then the eight field hashes concatenated. No line can hold a newline
 * (JSON texts escape it), so the preimage is unambiguous.
 */
export function recordHash(record: CanonicalRecord, fieldHashes: readonly string[]): string {
  let preimage = `auditlake-record/1\n${record.seq}\n${record.term}\n${record.ingestTs}\n${record.timestamp}\n${record.eventIdText}\n${record.sourceIdText}\n${record.sourceSeqText}\n`;
  for (const digest of fieldHashes) preimage += digest;
  return sha256Hex(preimage);
}

/**
 * The field check: per CHECKED_FIELDS entry, 4 hex digits — a content field's are the first 4
 * of its field hash; the others' are FNV-1a (32-bit, low 16 bits) of their text. Not a
 * security measure (the record hash is): it lets a verifier say which field changed.
 */
export function fieldCheck(record: CanonicalRecord, fieldHashes: readonly string[]): string {
  let check = '';
  for (const [name, index] of CHECK_PLAN) {
    check += index >= 0 ? (fieldHashes[index] as string).slice(0, 4) : shortCheck(inlineText(record, name));
  }
  return check;
}

/** Each checked field with its index among the content fields (-1: checked by its text). */
const CHECK_PLAN: ReadonlyArray<readonly [string, number]> = CHECKED_FIELDS.map((name) => [name, (HASHED_FIELDS as readonly string[]).indexOf(name)] as const);

/** The 4-hex check of each checked field, by name: what a verifier compares. */
export function splitFieldCheck(check: string): Map<string, string> {
  const parts = new Map<string, string>();
  CHECKED_FIELDS.forEach((name, i) => parts.set(name, check.slice(i * 4, i * 4 + 4)));
  return parts;
}

/** The text a non-content field is checked by. */
export function inlineText(record: CanonicalRecord, name: string): string {
  switch (name) {
    case 'eventId':
      return record.eventIdText;
    case 'timestamp':
      return String(record.timestamp);
    case 'ingestTs':
      return String(record.ingestTs);
    case 'term':
      return String(record.term);
    case 'sourceId':
      return record.sourceIdText;
    case 'sourceSeq':
      return record.sourceSeqText;
    default:
      throw new TypeError(`not an inline field: ${name}`);
  }
}

/** FNV-1a over the UTF-16 code units, low 16 bits as 4 hex digits. */
function shortCheck(text: string): string {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return ((h ^ (h >>> 16)) & 0xffff).toString(16).padStart(4, '0');
}
