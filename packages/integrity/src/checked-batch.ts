import type { ColumnValueSummary } from '@auditlake/model';
import { checkRecord, linkCheckedRecords, type CheckedDigest, type CheckedErasure, type CheckedRecord, type VerifyRecord } from './checked-record.js';
import type { RecordHasher } from './record-hasher.js';

/**
 * Checked records (seq order) in a form that crosses threads cheaply: numbers and flags in
 * typed arrays (transferred, not copied), the short texts every record has joined into one
 * string, and the few records that carry more (an altered record's recomputed hashes, an
 * integrity record's details, erased fields) as plain objects. Structured-cloning an object
 * per record was measured costlier on the receiving thread than the hashing it spared.
 */
export interface CheckedBatch {
  count: number;
  /** Rows the job held without a seq (written before the chain): counted, not checked. */
  skipped: number;
  seqs: Float64Array;
  /** Per record, FLAG_* bits. */
  flags: Uint8Array;
  /** eventId, recordHash, chainHash, fieldCheck of each record, concatenated. */
  text: string;
  /** Lengths of those four texts per record; -1 for an absent one. */
  lengths: Int32Array;
  /** By index: what only some records carry. */
  extras: Array<[number, CheckedExtra]>;
  /**
   * The least and greatest event time (epoch ms) of every row of a data file checked from its
   * columns, those without a seq included: what a reader skipping files by their declared
   * bounds must agree with. Absent for a job of records (a node's log page) or of no rows.
   */
  eventTime?: { min: number; max: number };
  /**
   * Of a data file checked from its columns with rows without a seq: the latest ingest time
   * among those rows, and one of their eventIds — what tells rows from before the chain (ingested
   * before the tier's first chained row) from rows added since ({@link rowsWithoutSeqAdded}).
   */
  withoutSeq?: { ingestTsMax: number; eventId: string };
  /** Of a data file checked from its columns: the row with the least seq, its seq and ingest time. */
  firstRow?: { seq: number; ingestTs: number };
  /**
   * Of a data file, what each column holds (counts, least and greatest value): what the file's
   * commit declares of its columns (an Iceberg manifest entry's metrics) is checked against it.
   * Absent for a job of records.
   */
  columnSummaries?: readonly ColumnValueSummary[];
}

interface CheckedExtra {
  digest?: CheckedDigest;
  integrity?: NonNullable<CheckedRecord['integrity']>;
  erased?: readonly CheckedErasure[];
}

/** The record has a recomputed digest. */
const FLAG_DIGEST = 1;
/** …equal to its stored record hash and field check (so only the stored texts are sent). */
const FLAG_DIGEST_AS_STORED = 2;
/** Its chain link was found to hold from the stored chain hash of the record before it in the batch. */
const FLAG_LINKED = 4;

const TEXTS = 4;

/**
 * Checks records (any order) into a batch: hashes recomputed, stably sorted by seq, links
 * within the batch tested, packed. What a check worker does with each job, and what verifying
 * without workers does in line.
 */
export function checkRecordsToBatch(records: Iterable<VerifyRecord>, hasher: RecordHasher, skipped = 0): CheckedBatch {
  const checked: CheckedRecord[] = [];
  for (const record of records) checked.push(checkRecord(record, hasher));
  return batchOfChecked(checked, skipped);
}

/** Checked records (any order; sorted here, in place) as a batch: stably sorted by seq, links within the batch tested, packed. */
export function batchOfChecked(checked: CheckedRecord[], skipped = 0): CheckedBatch {
  checked.sort((a, b) => a.seq - b.seq);
  linkCheckedRecords(checked);
  return packCheckedRecords(checked, skipped);
}

/** Packs records (seq order) for another thread; the records' `linkedFrom` must point at the previous record's chain hash. */
export function packCheckedRecords(records: readonly CheckedRecord[], skipped = 0): CheckedBatch {
  const writer = new CheckedBatchWriter(records.length, skipped);
  for (let i = 0; i < records.length; i++) {
    const record = records[i] as CheckedRecord;
    if (record.linkedFrom !== undefined) {
      const previous = records[i - 1];
      if (previous === undefined || previous.chainHash !== record.linkedFrom) throw new TypeError(`record at seq ${record.seq} links from a chain hash that is not the previous record's`);
    }
    writer.add(record, record.linkedFrom !== undefined);
  }
  return writer.finish();
}

/**
 * Writes checked records (seq order) straight into a batch, one at a time: what
 * {@link packCheckedRecords} does for records already built as objects, and what checking a
 * tier file's columns does without building an object for a record that verified as stored.
 */
export class CheckedBatchWriter {
  readonly #seqs: Float64Array;
  readonly #flags: Uint8Array;
  readonly #lengths: Int32Array;
  readonly #parts: string[] = [];
  readonly #extras: Array<[number, CheckedExtra]> = [];
  readonly #skipped: number;
  #count = 0;
  #at = 0;

  /** `capacity`: records at most. */
  constructor(capacity: number, skipped = 0) {
    this.#seqs = new Float64Array(capacity);
    this.#flags = new Uint8Array(capacity);
    this.#lengths = new Int32Array(capacity * TEXTS);
    this.#skipped = skipped;
  }

  /** A checked record; `linked`: its link from the previous record's stored chain hash holds. */
  add(record: CheckedRecord, linked: boolean): void {
    const { digest, recordHash, fieldCheck } = record;
    let flag = linked ? FLAG_LINKED : 0;
    // Most records carry nothing more: their extra is made only when needed.
    let extra: CheckedExtra | undefined;
    if (digest !== undefined) {
      flag |= FLAG_DIGEST;
      if (digest.recordHash === recordHash && digest.fieldCheck === fieldCheck && digest.content === undefined) flag |= FLAG_DIGEST_AS_STORED;
      else extra = { digest };
    }
    if (record.integrity !== undefined) (extra ??= {}).integrity = record.integrity;
    if (record.erased !== undefined) (extra ??= {}).erased = record.erased;
    this.#put(record.seq, flag, record.eventId, recordHash, record.chainHash, fieldCheck, extra);
  }

  /**
   * A record whose values hash to exactly its stored record hash and field check (so the
   * recomputed digest is the stored texts), without erased fields.
   */
  addAsStored(seq: number, eventId: string, recordHash: string, chainHash: string | undefined, fieldCheck: string, integrity: CheckedRecord['integrity'], linked: boolean): void {
    const flag = FLAG_DIGEST | FLAG_DIGEST_AS_STORED | (linked ? FLAG_LINKED : 0);
    this.#put(seq, flag, eventId, recordHash, chainHash, fieldCheck, integrity === undefined ? undefined : { integrity });
  }

  /** The batch of the records added. */
  finish(): CheckedBatch {
    const count = this.#count;
    return {
      count,
      skipped: this.#skipped,
      seqs: count === this.#seqs.length ? this.#seqs : this.#seqs.slice(0, count),
      flags: count === this.#flags.length ? this.#flags : this.#flags.slice(0, count),
      text: this.#parts.join(''),
      lengths: count * TEXTS === this.#lengths.length ? this.#lengths : this.#lengths.slice(0, count * TEXTS),
      extras: this.#extras,
    };
  }

  #put(seq: number, flag: number, eventId: string, recordHash: string | undefined, chainHash: string | undefined, fieldCheck: string | undefined, extra: CheckedExtra | undefined): void {
    const i = this.#count++;
    this.#seqs[i] = seq;
    this.#flags[i] = flag;
    this.#lengths[this.#at++] = eventId.length;
    this.#parts.push(eventId);
    this.#text(recordHash);
    this.#text(chainHash);
    this.#text(fieldCheck);
    if (extra !== undefined) this.#extras.push([i, extra]);
  }

  /** Writes one text's length (-1 when absent) and queues the text. */
  #text(text: string | undefined): void {
    if (text === undefined) this.#lengths[this.#at++] = -1;
    else {
      this.#lengths[this.#at++] = text.length;
      this.#parts.push(text);
    }
  }
}

/** The typed arrays a batch can hand over (postMessage's transfer list). */
export function checkedBatchTransfer(batch: CheckedBatch): ArrayBuffer[] {
  return [batch.seqs.buffer as ArrayBuffer, batch.flags.buffer as ArrayBuffer, batch.lengths.buffer as ArrayBuffer];
}

/** Reads a packed batch back, one record at a time, in its order. */
export class CheckedBatchReader {
  readonly #batch: CheckedBatch;
  readonly #extras: Map<number, CheckedExtra>;
  #index = 0;
  #offset = 0;
  #previousChainHash: string | undefined;

  constructor(batch: CheckedBatch) {
    this.#batch = batch;
    this.#extras = new Map(batch.extras);
  }

  /** Records not yet read. */
  get remaining(): number {
    return this.#batch.count - this.#index;
  }

  /** The seq of the next record (undefined at the end), without reading it. */
  peekSeq(): number | undefined {
    return this.#index < this.#batch.count ? this.#batch.seqs[this.#index] : undefined;
  }

  /** The next record; undefined at the end. */
  next(): CheckedRecord | undefined {
    const batch = this.#batch;
    const i = this.#index;
    if (i >= batch.count) return undefined;
    this.#index++;
    const eventId = this.#text(i * TEXTS) as string;
    const recordHash = this.#text(i * TEXTS + 1);
    const chainHash = this.#text(i * TEXTS + 2);
    const fieldCheck = this.#text(i * TEXTS + 3);
    const flag = batch.flags[i] as number;
    const extra = this.#extras.get(i);
    let digest: CheckedDigest | undefined;
    if ((flag & FLAG_DIGEST) !== 0) {
      digest = (flag & FLAG_DIGEST_AS_STORED) !== 0 ? { recordHash: recordHash as string, fieldCheck: fieldCheck as string, content: undefined } : extra?.digest;
      if (digest === undefined) throw new TypeError(`checked batch lacks the digest of record ${i}`);
    }
    const record: CheckedRecord = {
      seq: batch.seqs[i] as number,
      eventId,
      recordHash,
      chainHash,
      fieldCheck,
      digest,
      integrity: extra?.integrity,
      erased: extra?.erased,
      linkedFrom: (flag & FLAG_LINKED) !== 0 ? this.#previousChainHash : undefined,
    };
    this.#previousChainHash = chainHash;
    return record;
  }

  #text(at: number): string | undefined {
    const length = this.#batch.lengths[at] as number;
    if (length < 0) return undefined;
    const start = this.#offset;
    this.#offset += length;
    return this.#batch.text.slice(start, this.#offset);
  }
}
