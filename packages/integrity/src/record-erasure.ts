import { ERASED_MARKER, tablesText, type ErasableField, type HashedField } from './record-fields.js';
import { fieldHash } from './record-hasher.js';
import { keptSaltText, parseSalt, randomFieldSalt, saltIndex } from './record-salt.js';

/** The fields erasure touches on a record, whatever copy it is (stored event, tiered row). */
export interface ErasableRecord {
  userId: string;
  resource: string;
  tables: readonly string[];
  query: string;
  details: string;
  erased?: Record<string, string> | Partial<Record<HashedField, string>> | undefined;
  /** The record's salt as stored (record-salt.ts); absent on a record of content format v2. */
  salt?: string | undefined;
  /** Absent on a record stored without the chain (before it, or with it turned off). */
  recordHash?: string | undefined;
}

/**
 * The record with `fields` erased: each value replaced by the marker (`tables` by a list of
 * just the marker) and its field hash kept in `erased`, so the record hash — and the chain —
 * still verify. Undefined when every field was already erased (nothing to write).
 *
 * A salted record (v3) keeps its field hashes salted and loses the salts of the erased fields:
 * its key K is replaced by the salts of the fields not erased (so they still verify), and a
 * kept hash can no longer be recomputed from a guessed value. A v2 record has no salt: its kept
 * hash is the plain SHA-256 of the value, as before salts existed.
 *
 * A salt that cannot be used (altered: the record no longer verifies anyway) does not stop the
 * erasure — this runs where every copy of the log applies an erasure record, and the value must
 * go: such a field's kept hash is salted with a salt drawn here and dropped, so nothing confirms
 * a guess of it. So is the kept hash of a record without chain fields, salted or not: no record
 * hash commits to it, so it proves nothing, and a plain hash would confirm a guess.
 */
export function eraseRecordFields<T extends ErasableRecord>(record: T, fields: readonly ErasableField[]): T | undefined {
  const erased: Record<string, string> = { ...(record.erased as Record<string, string> | undefined) };
  const next: T = { ...record };
  const salts = record.salt === undefined ? undefined : parseSalt(record.salt)?.salts.slice();
  let changed = false;
  for (const field of fields) {
    if (erased[field] !== undefined) continue;
    const at = saltIndex(field);
    const salt = record.recordHash === undefined ? randomFieldSalt() : record.salt === undefined ? undefined : (salts?.[at] ?? randomFieldSalt());
    if (field === 'tables') {
      erased[field] = fieldHash(tablesText(record.tables), salt);
      next.tables = [ERASED_MARKER];
    } else {
      erased[field] = fieldHash(record[field], salt);
      next[field] = ERASED_MARKER;
    }
    if (salts !== undefined) salts[at] = undefined;
    changed = true;
  }
  if (!changed) return undefined;
  next.erased = erased;
  if (salts !== undefined) next.salt = keptSaltText(salts);
  return next;
}
