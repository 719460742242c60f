import { ERASED_MARKER, tablesText, type ErasableField, type HashedField } from './record-fields.js';
import { fieldHash } from './record-hasher.js';

/** The fields erasure touches on a record, whatever copy it is (stored event, tiered row). */
export interface ErasableRecord {
  userId: string;
  resource: string;
  tables: string[];
  query: string;
  details: string;
  erased?: Record<string, string> | Partial<Record<HashedField, string>> | undefined;
}

/**
 * The record with `fields` erased: each value replaced by the marker (`tables` by a list of
 * just the marker) and its field hash kept in `erased`, so the record hash — and the chain —
 * still verify. Undefined when every field was already erased (nothing to write).
 */
export function eraseRecordFields<T extends ErasableRecord>(record: T, fields: readonly ErasableField[]): T | undefined {
  const erased: Record<string, string> = { ...(record.erased as Record<string, string> | undefined) };
  const next: T = { ...record };
  let changed = false;
  for (const field of fields) {
    if (erased[field] !== undefined) continue;
    if (field === 'tables') {
      erased[field] = fieldHash(tablesText(record.tables));
      next.tables = [ERASED_MARKER];
    } else {
      erased[field] = fieldHash(record[field]);
      next[field] = ERASED_MARKER;
    }
    changed = true;
  }
  if (!changed) return undefined;
  next.erased = erased;
  return next;
}
