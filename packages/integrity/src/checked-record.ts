import { integrityKindOf, type IntegrityEventKind } from './integrity-events.js';
import { canonicalRecord, erasedText, stringText, tablesText, type HashedField, type RecordValues } from './record-fields.js';
import { chainHash, fieldCheckOf, recordHashOf, type RecordHasher } from './record-hasher.js';

/** One record as a source gives it: its values and the chain fields stored with it. */
export interface VerifyRecord extends RecordValues {
  /** Absent for a record stored before the chain existed. */
  recordHash?: string | undefined;
  chainHash?: string | undefined;
  fieldCheck?: string | undefined;
}

/** What recomputing a record's hashes from its values gave. */
export interface CheckedDigest {
  recordHash: string;
  fieldCheck: string;
  /**
   * Kept only for a record whose recomputed record hash differs from the stored one: what
   * recognising a reordering needs (the record's hash at other seqs).
   */
  content: { hash: string; term: number; ingestTs: number } | undefined;
}

/** An erased field of a record, and whether it holds the marker as it must. */
export interface CheckedErasure {
  field: HashedField;
  holdsMarker: boolean;
}

/**
 * A record reduced to what the verifier's in-order checks read, with the hashes recomputed from
 * its values. Computing it is the costly, independent part of verification (every SHA-256 but
 * the chain link's), so it can run on any thread and in any order; only the fold over these is
 * sequential.
 */
export interface CheckedRecord {
  seq: number;
  eventId: string;
  /** As stored; undefined for a record from before the chain. */
  recordHash: string | undefined;
  chainHash: string | undefined;
  fieldCheck: string | undefined;
  /** Recomputed; undefined when the record has no stored record hash (nothing to compare). */
  digest: CheckedDigest | undefined;
  /** For a record of an integrity action (source `auditlake`): what the verifier reads of it. */
  integrity: { kind: IntegrityEventKind; action: string; details: string } | undefined;
  /** The record's erased fields, when it has any. */
  erased: readonly CheckedErasure[] | undefined;
  /**
   * A chain hash this record's stored chain_hash was found to follow from:
   * SHA-256(linkedFrom ‖ digest.recordHash) equals it. Set where the record before it (seq - 1)
   * was checked in the same batch; the fold then compares strings instead of hashing again.
   */
  linkedFrom: string | undefined;
}

/** Recomputes one record's hashes (no chain link). */
export function checkRecord(record: VerifyRecord, hasher: RecordHasher): CheckedRecord {
  if (!Number.isSafeInteger(record.seq) || record.seq < 1) throw new TypeError(`record seq must be a positive integer, got ${record.seq}`);
  // The canonical form is built only for a record with erased fields (rare), whose texts the
  // marker check reads; any other is hashed from its values as they are.
  const canonical = hasErasedFields(record.erased) ? canonicalRecord(record) : undefined;
  let digest: CheckedDigest | undefined;
  if (canonical === undefined && record.recordHash !== undefined && record.fieldCheck !== undefined && matchesStored(record, record.recordHash, record.fieldCheck, hasher)) {
    // Nearly every record: what was recomputed is exactly what is stored.
    digest = { recordHash: record.recordHash, fieldCheck: record.fieldCheck, content: undefined };
  } else if (record.recordHash !== undefined) {
    const content = canonical === undefined ? hasher.contentOfValues(record) : hasher.content(canonical);
    const recordHash = recordHashOf(record.seq, record.term, record.ingestTs, content);
    digest = {
      recordHash,
      fieldCheck: fieldCheckOf(content, record.term, record.ingestTs),
      content: recordHash === record.recordHash ? undefined : { hash: content.hash, term: record.term, ingestTs: record.ingestTs },
    };
  }
  let erased: CheckedErasure[] | undefined;
  if (canonical?.erased !== undefined) {
    erased = [];
    for (const field of Object.keys(canonical.erased) as HashedField[]) erased.push({ field, holdsMarker: canonical.texts[field] === erasedText(field) });
  }
  const kind = integrityKindOf(record.source, record.action, record.decision);
  return {
    seq: record.seq,
    eventId: record.eventId,
    recordHash: record.recordHash,
    chainHash: record.chainHash,
    fieldCheck: record.fieldCheck,
    digest,
    integrity: kind === undefined ? undefined : { kind, action: record.action, details: record.details },
    erased,
    linkedFrom: undefined,
  };
}

/** {@link RecordHasher.matchesStored} of a record without erased fields, from its values. */
function matchesStored(record: VerifyRecord, recordHash: string, fieldCheck: string, hasher: RecordHasher): boolean {
  return hasher.matchesStored(
    record.seq,
    record.term,
    record.ingestTs,
    record.timestamp,
    stringText(record.eventId),
    record.sourceId === undefined ? '' : stringText(record.sourceId),
    record.sourceSeq === undefined ? '' : String(record.sourceSeq),
    record.userId,
    record.source,
    record.action,
    record.resource,
    record.decision,
    tablesText(record.tables),
    record.query,
    record.details,
    recordHash,
    fieldCheck,
    record.salt,
  );
}

/** True when a record's `erased` names at least one field (an empty object is none). */
export function hasErasedFields(erased: object | undefined): boolean {
  if (erased === undefined) return false;
  for (const _ in erased) return true;
  return false;
}

/**
 * Sets `linkedFrom` on the records (in seq order) whose stored chain_hash follows from the
 * stored chain_hash of the record right before them in seq.
 */
export function linkCheckedRecords(records: readonly CheckedRecord[]): void {
  for (let i = 1; i < records.length; i++) {
    const record = records[i] as CheckedRecord;
    const previous = records[i - 1] as CheckedRecord;
    if (linksFrom(previous.seq, previous.chainHash, record.seq, record.digest?.recordHash, record.chainHash)) record.linkedFrom = previous.chainHash;
  }
}

/**
 * Whether a record (its seq, recomputed record hash and stored chain hash) links from the
 * record before it in a batch: that one is at seq - 1 and SHA-256 of its stored chain hash and
 * this record hash is this stored chain hash.
 */
export function linksFrom(previousSeq: number, previousChainHash: string | undefined, seq: number, recordHash: string | undefined, storedChainHash: string | undefined): boolean {
  if (previousSeq !== seq - 1 || previousChainHash === undefined || recordHash === undefined || storedChainHash === undefined) return false;
  return chainHash(previousChainHash, recordHash) === storedChainHash;
}
