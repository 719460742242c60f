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
  const count = records.length;
  const seqs = new Float64Array(count);
  const flags = new Uint8Array(count);
  const lengths = new Int32Array(count * TEXTS);
  const parts: string[] = [];
  const extras: Array<[number, CheckedExtra]> = [];
  let at = 0;
  for (let i = 0; i < count; i++) {
    const record = records[i] as CheckedRecord;
    seqs[i] = record.seq;
    const { eventId, recordHash, chainHash, fieldCheck, digest } = record;
    lengths[at++] = eventId.length;
    parts.push(eventId);
    at = putText(parts, lengths, at, recordHash);
    at = putText(parts, lengths, at, chainHash);
    at = putText(parts, lengths, at, fieldCheck);
    let flag = 0;
    // Most records carry nothing more: their extra is made only when needed.
    let extra: CheckedExtra | undefined;
    if (digest !== undefined) {
      flag |= FLAG_DIGEST;
      if (digest.recordHash === recordHash && digest.fieldCheck === fieldCheck && digest.content === undefined) flag |= FLAG_DIGEST_AS_STORED;
      else extra = { digest };
    }
    if (record.linkedFrom !== undefined) {
      const previous = records[i - 1];
      if (previous === undefined || previous.chainHash !== record.linkedFrom) throw new TypeError(`record at seq ${record.seq} links from a chain hash that is not the previous record's`);
      flag |= FLAG_LINKED;
    }
    if (record.integrity !== undefined) (extra ??= {}).integrity = record.integrity;
    if (record.erased !== undefined) (extra ??= {}).erased = record.erased;
    flags[i] = flag;
    if (extra !== undefined) extras.push([i, extra]);
  }
  return { count, skipped, seqs, flags, text: parts.join(''), lengths, extras };
}

/** Writes one text's length at `at` (-1 when absent) and queues the text; returns the next slot. */
function putText(parts: string[], lengths: Int32Array, at: number, text: string | undefined): number {
  if (text === undefined) lengths[at] = -1;
  else {
    lengths[at] = text.length;
    parts.push(text);
  }
  return at + 1;
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
