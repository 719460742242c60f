import { hash, randomBytes, randomFillSync } from 'node:crypto';
import { ERASABLE_FIELDS, type ErasableField } from './record-fields.js';

/**
 * Salts of content format v3 (docs/integrity.md, "Salted field hashes"). The values erasure
 * exists for come from small known sets (a directory of users, a catalog of tables), so a kept
 * plain SHA-256 of an erased value would confirm a guess. Each v3 record therefore gets a random
 * key K at ingest; its erasable fields are hashed with salts derived from K, and erasure drops K
 * and keeps only the salts of the fields it did not erase.
 *
 * Stored form (`salt`, in the store and as the tier's `salt` column):
 * - no field erased: K, 16 bytes as 22 base64url characters;
 * - after an erasure: the five field salts in SALTED_FIELDS order joined by `.`, each 12 bytes
 *   as 16 base64url characters, empty for an erased field (so always four dots).
 */

/** Bytes of a record's key K. */
export const SALT_KEY_BYTES = 16;
/** Bytes of one field's salt: SHA-512 of K gives 64 bytes, 5 × 12 used. */
export const FIELD_SALT_BYTES = 12;
/** The fields whose hashes are salted, in the order their salts are cut from SHA-512(K). */
export const SALTED_FIELDS: readonly ErasableField[] = ERASABLE_FIELDS;

const KEY_TEXT_LENGTH = 22;
/** 12 bytes are 16 base64url characters exactly (no partial group), so the 16-character cuts of base64url(SHA-512(K)) are the salts' texts. */
const FIELD_SALT_TEXT_LENGTH = 16;
const BASE64URL = /^[A-Za-z0-9_-]*$/;

/**
 * A record's field salts, by place in SALTED_FIELDS, each as its 16 base64url characters (the
 * form hashed, see {@link saltedFieldHash}); undefined for a field whose salt was dropped.
 */
export type FieldSalts = ReadonlyArray<string | undefined>;

/** A parsed `salt`: the key's derived salts (`key`: true), or the salts an erasure kept. */
export interface ParsedSalt {
  key: boolean;
  salts: FieldSalts;
}

// Keys are cut from a pooled random buffer: one randomFillSync per 256 keys instead of a
// call (and a syscall) per event.
const POOL_KEYS = 256;
const pool = Buffer.alloc(POOL_KEYS * SALT_KEY_BYTES);
let poolAt = pool.length;

/** A new record key K, as stored (22 base64url characters). */
export function newSaltKey(): string {
  if (poolAt === pool.length) {
    randomFillSync(pool);
    poolAt = 0;
  }
  const text = pool.toString('base64url', poolAt, poolAt + SALT_KEY_BYTES);
  poolAt += SALT_KEY_BYTES;
  return text;
}

/** The five field salts of a key K given as stored; undefined when it is not a key's text. */
export function saltsOfKey(text: string): string[] | undefined {
  const key = keyBytesOf(text);
  if (key === undefined) return undefined;
  const derived = hash('sha512', key, 'base64url');
  return [derived.slice(0, 16), derived.slice(16, 32), derived.slice(32, 48), derived.slice(48, 64), derived.slice(64, 80)];
}

/** Reads a stored `salt` (either form); undefined when it is neither. */
export function parseSalt(text: string): ParsedSalt | undefined {
  if (text.length === KEY_TEXT_LENGTH) {
    const salts = saltsOfKey(text);
    return salts === undefined ? undefined : { key: true, salts };
  }
  const parts = text.split('.');
  if (parts.length !== SALTED_FIELDS.length) return undefined;
  for (const part of parts) if (part !== '' && (part.length !== FIELD_SALT_TEXT_LENGTH || !BASE64URL.test(part))) return undefined;
  return { key: false, salts: parts.map((part) => (part === '' ? undefined : part)) };
}

/** The stored form of kept field salts (the form after an erasure). */
export function keptSaltText(salts: FieldSalts): string {
  return SALTED_FIELDS.map((_, i) => salts[i] ?? '').join('.');
}

/** A new field salt (12 random bytes, as FieldSalts holds one): for a value erased whose salt was unusable. */
export function randomFieldSalt(): string {
  return randomBytes(FIELD_SALT_BYTES).toString('base64url');
}

/** The place of a salted field in SALTED_FIELDS (and in a FieldSalts), or -1. */
export function saltIndex(field: string): number {
  return (SALTED_FIELDS as readonly string[]).indexOf(field);
}

/**
 * A salted field hash: SHA-256 of the salt's 16 base64url characters followed by the canonical
 * text, as UTF-8 (so 16 bytes of salt text, then the value's bytes), 64 lower-case hex. The salt
 * goes in as its text, not its 12 raw bytes: one string in, the same secret (the text is a
 * one-to-one encoding of the bytes), and measured about 0.5 µs a field less than writing raw
 * bytes and the value into a buffer and hashing that — five fields per event, on the ingest path.
 */
export function saltedFieldHash(salt: string, text: string): string {
  return hash('sha256', salt + text, 'hex');
}

/** Base64url digit values by character code below 128; -1 for any other character. */
const BASE64URL_VALUE = new Int8Array(128).fill(-1);
[...'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_'].forEach((c, i) => (BASE64URL_VALUE[c.charCodeAt(0)] = i));
/** Where keyBytesOf decodes (used at once by its caller, synchronously). */
const KEY_BYTES = new Uint8Array(SALT_KEY_BYTES);

/**
 * The 16 bytes of a key as stored, or undefined when `text` is not one: 22 base64url characters
 * whose last carries no bits beyond the 16 bytes (so one key has one text). Decoded and checked
 * in one pass into a reused buffer: this runs for every chained record at ingest and in verify,
 * and a regular-expression test then `Buffer.from(text, 'base64url')` cost ~0.4 µs more.
 */
function keyBytesOf(text: string): Uint8Array | undefined {
  if (text.length !== KEY_TEXT_LENGTH) return undefined;
  let bits = 0;
  let pending = 0;
  let at = 0;
  for (let i = 0; i < KEY_TEXT_LENGTH; i++) {
    const code = text.charCodeAt(i);
    const value = code < 128 ? (BASE64URL_VALUE[code] as number) : -1;
    if (value < 0) return undefined;
    pending = ((pending << 6) | value) & 0x3fff;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      KEY_BYTES[at++] = (pending >> bits) & 0xff;
    }
  }
  // 22 characters hold 132 bits: the 4 left over must be zero.
  return (pending & ((1 << bits) - 1)) === 0 ? KEY_BYTES : undefined;
}
