import { CheckedBatchReader, type CheckedBatch } from './checked-batch.js';
import type { CheckedRecord } from './checked-record.js';

/** How many of the last batches of the arrived prefix bound what is fed (see ArrivingBatchMerge). */
const PREFIX_WINDOW = 4;

interface Head {
  seq: number;
  order: number;
  reader: CheckedBatchReader;
}

/**
 * The records of several batches (each in seq order) in one seq order. Copies of one seq keep
 * the order of their batches (then their order within a batch): the order a stable sort of the
 * batches' records, concatenated, would give.
 */
export function* mergeCheckedBatches(batches: readonly CheckedBatch[]): Generator<CheckedRecord> {
  const heap: Head[] = [];
  batches.forEach((batch, order) => {
    const reader = new CheckedBatchReader(batch);
    const seq = reader.peekSeq();
    if (seq !== undefined) push(heap, { seq, order, reader });
  });
  while (heap.length > 0) {
    const head = heap[0] as Head;
    yield head.reader.next() as CheckedRecord;
    const seq = head.reader.peekSeq();
    if (seq === undefined) {
      const last = heap.pop() as Head;
      if (heap.length > 0) {
        heap[0] = last;
        down(heap, 0);
      }
    } else {
      head.seq = seq;
      down(heap, 0);
    }
  }
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
 * The merge of {@link mergeCheckedBatches}, fed to the fold while the batches are still
 * arriving (in any order, each numbered by its place in the merge's order): a tier's data files
 * are folded while later files are still being checked, instead of after all of them.
 *
 * A record is fed only once every batch that could still hold a lower seq — or an earlier copy
 * of its own — has arrived, which only the batches themselves can tell. So this guesses, and
 * checks the guess: when batches 0..k have all arrived, it feeds the arrived records below the
 * lowest first seq of the last few of them (a tier lists its files by day partition and commit,
 * so a file starts above all but the last few files listed before it, measured on the
 * benchmark's tier); and every batch that arrives must hold only seqs above every seq fed so far. A batch that does not turns {@link inOrder} false and nothing more is fed: the caller
 * then folds all the batches again from the start through {@link mergeCheckedBatches}. Either
 * way the fold sees the records in the merge's order.
 */
export class ArrivingBatchMerge {
  readonly #feed: (record: CheckedRecord) => void;
  readonly #heap: Head[] = [];
  readonly #arrived = new Map<number, number | undefined>();
  /** Batches 0..#prefix-1 have all arrived. */
  #prefix = 0;
  /** The first seqs of the last (non-empty) batches of that prefix, PREFIX_WINDOW at most. */
  readonly #recentFirsts: number[] = [];
  #lastFed = -Infinity;
  #inOrder = true;

  constructor(feed: (record: CheckedRecord) => void) {
    this.#feed = feed;
  }

  /** False once a batch arrived holding a seq at or below one already fed (what was fed must then be discarded). */
  get inOrder(): boolean {
    return this.#inOrder;
  }

  /** Batch number `index` (each number once) has arrived; feeds what is then known to come next. */
  arrive(index: number, batch: CheckedBatch): void {
    if (!this.#inOrder) return;
    const reader = new CheckedBatchReader(batch);
    const first = reader.peekSeq();
    if (first !== undefined && first <= this.#lastFed) {
      this.#inOrder = false;
      this.#heap.length = 0;
      return;
    }
    if (first !== undefined) push(this.#heap, { seq: first, order: index, reader });
    this.#arrived.set(index, first);
    const before = this.#prefix;
    while (this.#arrived.has(this.#prefix)) {
      const seq = this.#arrived.get(this.#prefix++);
      if (seq !== undefined) this.#recentFirsts.push(seq);
    }
    if (this.#prefix === before) return;
    if (this.#recentFirsts.length > PREFIX_WINDOW) this.#recentFirsts.splice(0, this.#recentFirsts.length - PREFIX_WINDOW);
    if (this.#recentFirsts.length > 0) this.#feedBelow(Math.min(...this.#recentFirsts));
  }

  /** Every batch has arrived: feeds the rest. */
  finish(): void {
    if (this.#inOrder) this.#feedBelow(Infinity);
  }

  #feedBelow(bound: number): void {
    const heap = this.#heap;
    while (heap.length > 0 && (heap[0] as Head).seq < bound) {
      const head = heap[0] as Head;
      const record = head.reader.next() as CheckedRecord;
      this.#lastFed = record.seq;
      this.#feed(record);
      const seq = head.reader.peekSeq();
      if (seq === undefined) {
        const last = heap.pop() as Head;
        if (heap.length > 0) {
          heap[0] = last;
          down(heap, 0);
        }
      } else {
        head.seq = seq;
        down(heap, 0);
      }
    }
  }
}
