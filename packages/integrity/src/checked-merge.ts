import { CheckedBatchReader, type CheckedBatch } from './checked-batch.js';
import type { CheckedRecord } from './checked-record.js';

interface Head {
  seq: number;
  order: number;
  reader: CheckedBatchReader;
  /** Records its batch holds, all kept in memory until the last is read. */
  size: number;
}

/*
 * The merges here give the records of several batches (each in seq order) in one seq order,
 * the **merge order**: copies of one seq keep the order of their batches (then their order
 * within a batch) — the order a stable sort of the batches' records, concatenated, would give.
 */

/** The heap's first record, read; its batch is dropped from the heap once read whole (`dropped` told its size). */
function take(heap: Head[], dropped?: (size: number) => void): CheckedRecord {
  const head = heap[0] as Head;
  const record = head.reader.next() as CheckedRecord;
  const seq = head.reader.peekSeq();
  if (seq === undefined) {
    dropped?.(head.size);
    const last = heap.pop() as Head;
    if (heap.length > 0) {
      heap[0] = last;
      down(heap, 0);
    }
  } else {
    head.seq = seq;
    down(heap, 0);
  }
  return record;
}

function before(a: Head, b: Head): boolean {
  return a.seq < b.seq || (a.seq === b.seq && a.order < b.order);
}

function push(heap: Head[], head: Head): void {
  heap.push(head);
  let i = heap.length - 1;
  while (i > 0) {
    const parent = (i - 1) >> 1;
    if (!before(heap[i] as Head, heap[parent] as Head)) break;
    [heap[i], heap[parent]] = [heap[parent] as Head, heap[i] as Head];
    i = parent;
  }
}

function down(heap: Head[], i: number): void {
  for (;;) {
    const left = 2 * i + 1;
    const right = left + 1;
    let smallest = i;
    if (left < heap.length && before(heap[left] as Head, heap[smallest] as Head)) smallest = left;
    if (right < heap.length && before(heap[right] as Head, heap[smallest] as Head)) smallest = right;
    if (smallest === i) return;
    [heap[i], heap[smallest]] = [heap[smallest] as Head, heap[i] as Head];
    i = smallest;
  }
}

/**
 * A batch {@link mergeSpannedBatches} loads when the merge reaches it: its place in the merge's
 * order, and a seq none of its records lies below — its least seq, or a bound known before the
 * batch is (a tier file's seq bounds, declared by its commit).
 */
export interface BatchSpan {
  order: number;
  first: number;
}

/**
 * Records handed on together by the streaming merges: awaiting each record alone would cost
 * more than folding it.
 */
const CHUNK_RECORDS = 4096;

/**
 * A {@link mergeSpannedBatches} given `heldRecordsMax` held batches of more records than that:
 * spans whose first seq lies far below their batches' least (true, but loose, bounds — all of a
 * tier's files declared from seq 0) load every batch before the first record is given, so
 * memory followed the tier, not the overlap of its files. The caller orders by what the batches
 * hold instead.
 */
export class MergeHeldTooMuch extends Error {
  constructor(readonly held: number, readonly max: number) {
    super(`the merge held batches of ${held} records, more than ${max}: the spans' first seqs lie far below their batches' records`);
  }
}

/**
 * The batches' records in the merge order (above), the batches loaded only when it reaches them, in
 * chunks of records: a batch is loaded (`load`, up to `lookahead` ahead, so the loads overlap
 * the fold) once the merge's next record would come after its span's first seq, and dropped once
 * read whole. So it holds the batches whose seq spans reach past the merge's position and the few
 * loading ahead, never all of them: a tier's files, fetched and checked in the order of their
 * least seq as their commits declare it. A span's first seq may lie below the batch's least (a
 * bound, not the exact value: the batch is loaded earlier than needed and held longer), never
 * above it: records below it would already have been given, out of order, so `load` must refuse
 * such a batch, and a batch below its span fails the merge. An empty batch gives nothing. When
 * the merge stops early (a failure, the caller done), it returns only once no load is running.
 * Past `heldRecordsMax` records in the batches it holds (more than one batch) it stops with
 * {@link MergeHeldTooMuch}.
 */
export async function* mergeSpannedBatches(spans: readonly BatchSpan[], load: (span: BatchSpan) => Promise<CheckedBatch>, lookahead: number, heldRecordsMax = Infinity): AsyncGenerator<CheckedRecord[]> {
  if (!Number.isSafeInteger(lookahead) || lookahead < 1) throw new TypeError(`lookahead must be a positive integer, got ${lookahead}`);
  /** Records of the heap's batches, given or not: a batch is held whole until its last record is given. */
  let held = 0;
  const dropped = (size: number) => void (held -= size);
  const sorted = [...spans].sort((a, b) => a.first - b.first || a.order - b.order);
  /** The loads of sorted[next], sorted[next + 1], … */
  const loading: Array<Promise<CheckedBatch>> = [];
  let next = 0;
  const startLoads = () => {
    while (next + loading.length < sorted.length && loading.length < lookahead) {
      const loaded = load(sorted[next + loading.length] as BatchSpan);
      // Awaited in turn; failing before then is not an unhandled rejection.
      loaded.catch(() => undefined);
      loading.push(loaded);
    }
  };
  const heap: Head[] = [];
  let chunk: CheckedRecord[] = [];
  try {
    startLoads();
    for (;;) {
      while (next < sorted.length && (heap.length === 0 || spanFirst(sorted[next] as BatchSpan, heap[0] as Head))) {
        // What is ready is folded while the next batch loads.
        if (chunk.length > 0) {
          yield chunk;
          chunk = [];
        }
        const span = sorted[next] as BatchSpan;
        const batch = await (loading.shift() as Promise<CheckedBatch>);
        next++;
        startLoads();
        const reader = new CheckedBatchReader(batch);
        const seq = reader.peekSeq();
        if (seq === undefined) continue;
        if (seq < span.first) throw new TypeError(`batch ${span.order} starts at seq ${seq}, below its span's ${span.first}: records above it may have been given already`);
        push(heap, { seq, order: span.order, reader, size: reader.remaining });
        held += reader.remaining;
        // One batch alone is never too much: it is what the merge must hold to give its records.
        if (held > heldRecordsMax && heap.length > 1) throw new MergeHeldTooMuch(held, heldRecordsMax);
      }
      if (heap.length === 0) break;
      chunk.push(take(heap, dropped));
      if (chunk.length >= CHUNK_RECORDS) {
        yield chunk;
        chunk = [];
      }
    }
    if (chunk.length > 0) yield chunk;
  } finally {
    await Promise.allSettled(loading);
  }
}

/** Whether a batch not yet loaded may hold a record the merge must give before the heap's head. */
function spanFirst(span: BatchSpan, head: Head): boolean {
  return span.first < head.seq || (span.first === head.seq && span.order < head.order);
}

/**
 * Feeds the records of several streams (each in seq order, a chunk at a time) in one seq order,
 * copies of one seq in the order of the streams; `feed` is told each record's stream. Only the
 * current chunk of each stream is held. A stream left unfinished (a failure) is closed.
 */
export async function feedMergedStreams(streams: ReadonlyArray<AsyncIterable<CheckedRecord[]>>, feed: (record: CheckedRecord, stream: number) => void): Promise<void> {
  interface Cursor {
    stream: number;
    iterator: AsyncIterator<CheckedRecord[]>;
    chunk: CheckedRecord[];
    at: number;
  }
  const open: Cursor[] = streams.map((stream, index) => ({ stream: index, iterator: stream[Symbol.asyncIterator](), chunk: [], at: 0 }));
  /** Reads the cursor's next non-empty chunk; false (and closed) at the stream's end. */
  const refill = async (cursor: Cursor): Promise<boolean> => {
    for (;;) {
      const result = await cursor.iterator.next();
      if (result.done === true) {
        open.splice(open.indexOf(cursor), 1);
        return false;
      }
      if (result.value.length > 0) {
        cursor.chunk = result.value;
        cursor.at = 0;
        return true;
      }
    }
  };
  try {
    // In stream order, so that the first of equal seqs is the earlier stream's.
    const cursors: Cursor[] = [];
    for (const cursor of [...open]) if (await refill(cursor)) cursors.push(cursor);
    while (cursors.length > 0) {
      let least = cursors[0] as Cursor;
      for (let i = 1; i < cursors.length; i++) {
        const cursor = cursors[i] as Cursor;
        if ((cursor.chunk[cursor.at] as CheckedRecord).seq < (least.chunk[least.at] as CheckedRecord).seq) least = cursor;
      }
      feed(least.chunk[least.at++] as CheckedRecord, least.stream);
      if (least.at === least.chunk.length && !(await refill(least))) cursors.splice(cursors.indexOf(least), 1);
    }
  } finally {
    for (const cursor of open) await cursor.iterator.return?.();
  }
}

/**
 * Finds, in one copy of the history read in seq order (a tier location's records as merged),
 * the least seq it holds more than once as identical records, without holding that copy's
 * batches: in seq order the copies of one seq are adjacent, and each is compared with the
 * first. Two different records under one seq are left to the verifier, which names them a
 * conflict.
 */
export class IdenticalCopyWatch {
  #first: CheckedRecord | undefined;
  #found = false;

  /** The copy's next record: the seq and eventId of the first identical copy found, when it is one. */
  see(record: CheckedRecord): { seq: number; eventId: string } | undefined {
    const first = this.#first;
    if (first === undefined || first.seq !== record.seq) {
      this.#first = record;
      return undefined;
    }
    if (this.#found || record.chainHash !== first.chainHash || record.digest?.recordHash !== first.digest?.recordHash) return undefined;
    this.#found = true;
    return { seq: first.seq, eventId: first.eventId };
  }
}
