import { hash, randomFillSync } from 'node:crypto';
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
 * - after an erasure: the five field salts in ERASABLE_FIELDS order joined by `.`, each 12 bytes
 *   as 16 base64url characters, empty for an erased field (so always four dots).
 */

/** Bytes of a record's key K. */
export const SALT_KEY_BYTES = 16;
/** Bytes of one field's salt: SALT_KEY_BYTES of K give SHA-512's 64 bytes, 5 × 12 used. */
export const FIELD_SALT_BYTES = 12;
/** The fields whose hashes are salted, in the order their salts are cut from SHA-512(K). */
export const SALTED_FIELDS: readonly ErasableField[] = ERASABLE_FIELDS;

const KEY_TEXT_LENGTH = 22;
const FIELD_SALT_TEXT_LENGTH = 16;
const BASE64URL = /^[A-Za-z0-9_-]*$/;

/** A record's field salts, by place in SALTED_FIELDS; undefined for a field whose salt was dropped. */
export type FieldSalts = ReadonlyArray<Buffer | undefined>;

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
export function saltsOfKey(text: string): Buffer[] | undefined {
  const key = decodeExact(text, KEY_TEXT_LENGTH, SALT_KEY_BYTES);
  if (key === undefined) return undefined;
  const derived = hash('sha512', key, 'buffer');
  return SALTED_FIELDS.map((_, i) => derived.subarray(i * FIELD_SALT_BYTES, (i + 1) * FIELD_SALT_BYTES));
}

/** Reads a stored `salt` (either form); undefined when it is neither. */
export function parseSalt(text: string): ParsedSalt | undefined {
  if (text.length === KEY_TEXT_LENGTH) {
    const salts = saltsOfKey(text);
    return salts === undefined ? undefined : { key: true, salts };
  }
  const parts = text.split('.');
  if (parts.length !== SALTED_FIELDS.length) return undefined;
  const salts: Array<Buffer | undefined> = [];
  for (const part of parts) {
    if (part === '') {
      salts.push(undefined);
      continue;
    }
    const salt = decodeExact(part, FIELD_SALT_TEXT_LENGTH, FIELD_SALT_BYTES);
    if (salt === undefined) return undefined;
    salts.push(salt);
  }
  return { key: false, salts };
}

/** The stored form of kept field salts (the form after an erasure). */
export function keptSaltText(salts: FieldSalts): string {
  return SALTED_FIELDS.map((_, i) => salts[i]?.toString('base64url') ?? '').join('.');
}

/** The place of a salted field in SALTED_FIELDS (and in a FieldSalts), or -1. */
export function saltIndex(field: string): number {
  return (SALTED_FIELDS as readonly string[]).indexOf(field);
}

// Salt and value are hashed as one buffer, filled in place: an update() per part was measured
// several times the cost of the one-shot hash. Texts too long for it are hashed in two updates.
const SCRATCH_BYTES = 64 * 1024;
const scratch = Buffer.allocUnsafe(SCRATCH_BYTES);

/** A salted field hash: SHA-256(salt ‖ UTF-8 of the canonical text), 64 lower-case hex. */
export function saltedFieldHash(salt: Uint8Array, text: string): string {
  const saltBytes = salt.length;
  // Up to 3 UTF-8 bytes per UTF-16 code unit: a text that surely fits is written at once.
  if (text.length * 3 <= SCRATCH_BYTES - saltBytes) {
    scratch.set(salt, 0);
    const written = scratch.write(text, saltBytes, 'utf8');
    return hash('sha256', scratch.subarray(0, saltBytes + written), 'hex');
  }
  return hash('sha256', Buffer.concat([salt, Buffer.from(text, 'utf8')]), 'hex');
}

/** The bytes of exactly `bytes` encoded as exactly `length` base64url characters, else undefined. */
function decodeExact(text: string, length: number, bytes: number): Buffer | undefined {
  if (text.length !== length || !BASE64URL.test(text)) return undefined;
  const decoded = Buffer.from(text, 'base64url');
  // A last character with bits beyond the bytes set would decode to the same bytes: refused,
  // so one stored salt has one text.
  if (decoded.length !== bytes || decoded.toString('base64url') !== text) return undefined;
  return decoded;
}
