import { batchOfChecked, type CheckedBatch } from './checked-batch.js';
import { checkRecord, hasErasedFields, type CheckedDigest, type CheckedRecord, type VerifyRecord } from './checked-record.js';
import { integrityKindOf } from './integrity-events.js';
import { stringText, type HashedField } from './record-fields.js';
import { fieldCheckOf, recordHashOf, type RecordHasher } from './record-hasher.js';

/**
 * Records as columns (a tiered data file decoded column by column): row i of every column is
 * one record. Each value is what {@link VerifyRecord} holds under the same name, except
 * `tables`, which holds the list's canonical text (the names joined with commas, as the tier
 * stores it).
 */
export interface RecordColumns {
  count: number;
  /** undefined for a row written before the chain: counted, not checked. */
  seq: ArrayLike<number | undefined>;
  term: ArrayLike<number>;
  ingestTs: ArrayLike<number>;
  timestamp: ArrayLike<number>;
  eventId: ArrayLike<string>;
  userId: ArrayLike<string>;
  source: ArrayLike<string>;
  action: ArrayLike<string>;
  resource: ArrayLike<string>;
  decision: ArrayLike<string>;
  tables: ArrayLike<string>;
  query: ArrayLike<string>;
  details: ArrayLike<string>;
  sourceId: ArrayLike<string | undefined>;
  sourceSeq: ArrayLike<number | undefined>;
  recordHash: ArrayLike<string | undefined>;
  chainHash: ArrayLike<string | undefined>;
  fieldCheck: ArrayLike<string | undefined>;
  erased: ArrayLike<Partial<Record<HashedField, string>> | undefined>;
}

/**
 * Checks the records of columns into a batch: the same batch {@link checkRecordsToBatch} makes
 * of the same records as objects, with rows without a seq counted as skipped. A record is
 * hashed straight from its columns' values; only one with erased fields (rare) is built as an
 * object and checked the general way.
 */
export function checkColumnsToBatch(columns: RecordColumns, hasher: RecordHasher): CheckedBatch {
  const checked: CheckedRecord[] = [];
  let skipped = 0;
  for (let i = 0; i < columns.count; i++) {
    const seq = columns.seq[i];
    if (seq === undefined) skipped++;
    else if (hasErasedFields(columns.erased[i])) checked.push(checkRecord(recordAt(columns, i, seq), hasher));
    else checked.push(checkRow(columns, i, seq, hasher));
  }
  return batchOfChecked(checked, skipped);
}

/** {@link checkRecord} of a row without erased fields, from its values in place. */
function checkRow(columns: RecordColumns, i: number, seq: number, hasher: RecordHasher): CheckedRecord {
  if (!Number.isSafeInteger(seq) || seq < 1) throw new TypeError(`record seq must be a positive integer, got ${seq}`);
  const eventId = columns.eventId[i] as string;
  const source = columns.source[i] as string;
  const action = columns.action[i] as string;
  const details = columns.details[i] as string;
  const recordHash = columns.recordHash[i];
  let digest: CheckedDigest | undefined;
  if (recordHash !== undefined) {
    const term = columns.term[i] as number;
    const ingestTs = columns.ingestTs[i] as number;
    const sourceId = columns.sourceId[i];
    const sourceSeq = columns.sourceSeq[i];
    const content = hasher.contentOfTexts(
      columns.timestamp[i] as number,
      stringText(eventId),
      sourceId === undefined ? '' : stringText(sourceId),
      sourceSeq === undefined ? '' : String(sourceSeq),
      columns.userId[i] as string,
      source,
      action,
      columns.resource[i] as string,
      columns.decision[i] as string,
      columns.tables[i] as string,
      columns.query[i] as string,
      details,
    );
    const recomputed = recordHashOf(seq, term, ingestTs, content);
    digest = {
      recordHash: recomputed,
      fieldCheck: fieldCheckOf(content, term, ingestTs),
      content: recomputed === recordHash ? undefined : { hash: content.hash, term, ingestTs },
    };
  }
  const kind = integrityKindOf(source, action);
  return {
    seq,
    eventId,
    recordHash,
    chainHash: columns.chainHash[i],
    fieldCheck: columns.fieldCheck[i],
    digest,
    integrity: kind === undefined ? undefined : { kind, action, details },
    erased: undefined,
    linkedFrom: undefined,
  };
}

/** Row i as the record object the general check takes. */
function recordAt(columns: RecordColumns, i: number, seq: number): VerifyRecord {
  const tables = columns.tables[i] as string;
  return {
    seq,
    term: columns.term[i] as number,
    ingestTs: columns.ingestTs[i] as number,
    timestamp: columns.timestamp[i] as number,
    eventId: columns.eventId[i] as string,
    userId: columns.userId[i] as string,
    source: columns.source[i] as string,
    action: columns.action[i] as string,
    resource: columns.resource[i] as string,
    decision: columns.decision[i] as string,
    // The inverse of tablesText: the canonical text is all the hash reads of the list.
    tables: tables === '' ? [] : tables.split(','),
    query: columns.query[i] as string,
    details: columns.details[i] as string,
    sourceId: columns.sourceId[i],
    sourceSeq: columns.sourceSeq[i],
    recordHash: columns.recordHash[i],
    chainHash: columns.chainHash[i],
    fieldCheck: columns.fieldCheck[i],
    erased: columns.erased[i],
  };
}
