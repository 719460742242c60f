import { CheckedBatchReader, type CheckedBatch } from './checked-batch.js';
import type { CheckedRecord } from './checked-record.js';

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
