import { CheckedBatchWriter, type CheckedBatch } from './checked-batch.js';
import { checkRecord, hasErasedFields, linksFrom, type CheckedDigest, type CheckedRecord, type VerifyRecord } from './checked-record.js';
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
  /** The record's salt (record-salt.ts); undefined for a record of content format v2. */
  salt: ArrayLike<string | undefined>;
}

/**
 * Checks the records of columns into a batch: the same batch {@link checkRecordsToBatch} makes
 * of the same records as objects, with rows without a seq counted as skipped. A record is
 * hashed straight from its columns' values, and one that hashes to exactly its stored record
 * hash and field check (nearly all) is written into the batch as it is, without a record
 * object; any other (altered, without chain fields, or with erased fields) is checked the
 * general way and written from its object.
 */
export function checkColumnsToBatch(columns: RecordColumns, hasher: RecordHasher): CheckedBatch {
  const { count } = columns;
  /** Rows with a seq, in row order; sorted by seq below unless they already are. */
  const rows: number[] = [];
  /** By row: 1 when it hashed to exactly what is stored. */
  const asStored = new Uint8Array(count);
  /** By row: the general check of a row that did not. */
  const general = new Map<number, CheckedRecord>();
  let skipped = 0;
  let ascending = true;
  let lastSeq = -Infinity;
  for (let i = 0; i < count; i++) {
    const seq = columns.seq[i];
    if (seq === undefined) {
      skipped++;
      continue;
    }
    if (hasErasedFields(columns.erased[i])) general.set(i, checkRecord(recordAt(columns, i, seq), hasher));
    else if (rowMatchesStored(columns, i, seq, hasher)) asStored[i] = 1;
    else general.set(i, checkRow(columns, i, seq, hasher));
    rows.push(i);
    if (seq < lastSeq) ascending = false;
    lastSeq = seq;
  }
  // A tier file holds its rows in event time order, which is nearly always seq order too.
  // Array sort is stable: copies of one seq keep their row order, as the object path's sort does.
  if (!ascending) rows.sort((a, b) => (columns.seq[a] as number) - (columns.seq[b] as number));
  const writer = new CheckedBatchWriter(rows.length, skipped);
  let previousSeq = -1;
  let previousChainHash: string | undefined;
  for (const i of rows) {
    const seq = columns.seq[i] as number;
    const chainHash = columns.chainHash[i];
    if (asStored[i] === 1) {
      const recordHash = columns.recordHash[i] as string;
      const source = columns.source[i] as string;
      const action = columns.action[i] as string;
      const kind = integrityKindOf(source, action, columns.decision[i] as string);
      const integrity = kind === undefined ? undefined : { kind, action, details: columns.details[i] as string };
      writer.addAsStored(seq, columns.eventId[i] as string, recordHash, chainHash, columns.fieldCheck[i] as string, integrity, linksFrom(previousSeq, previousChainHash, seq, recordHash, chainHash));
    } else {
      const record = general.get(i) as CheckedRecord;
      writer.add(record, linksFrom(previousSeq, previousChainHash, seq, record.digest?.recordHash, chainHash));
    }
    previousSeq = seq;
    previousChainHash = chainHash;
  }
  return writer.finish();
}

/**
 * Whether a row without erased fields hashes to exactly its stored record hash and field check
 * ({@link RecordHasher.matchesStored}); throws for a bad seq as {@link checkRecord} does.
 */
function rowMatchesStored(columns: RecordColumns, i: number, seq: number, hasher: RecordHasher): boolean {
  if (!Number.isSafeInteger(seq) || seq < 1) throw new TypeError(`record seq must be a positive integer, got ${seq}`);
  const recordHash = columns.recordHash[i];
  const fieldCheck = columns.fieldCheck[i];
  if (recordHash === undefined || fieldCheck === undefined) return false;
  const sourceId = columns.sourceId[i];
  const sourceSeq = columns.sourceSeq[i];
  return hasher.matchesStored(
    seq,
    columns.term[i] as number,
    columns.ingestTs[i] as number,
    columns.timestamp[i] as number,
    stringText(columns.eventId[i] as string),
    sourceId === undefined ? '' : stringText(sourceId),
    sourceSeq === undefined ? '' : String(sourceSeq),
    columns.userId[i] as string,
    columns.source[i] as string,
    columns.action[i] as string,
    columns.resource[i] as string,
    columns.decision[i] as string,
    columns.tables[i] as string,
    columns.query[i] as string,
    columns.details[i] as string,
    recordHash,
    fieldCheck,
    columns.salt[i],
  );
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
      columns.salt[i],
    );
    const recomputed = recordHashOf(seq, term, ingestTs, content);
    digest = {
      recordHash: recomputed,
      fieldCheck: fieldCheckOf(content, term, ingestTs),
      content: recomputed === recordHash ? undefined : { hash: content.hash, term, ingestTs },
    };
  }
  const kind = integrityKindOf(source, action, columns.decision[i] as string);
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
    salt: columns.salt[i],
  };
}
