// Goal: a merge of batches loaded when their spans' first seqs are reached holds what overlaps,
// and a bound on what it holds stops it when spans lie far below their batches (true but loose
// bounds, all declared from seq 0), which would otherwise load every batch before the first
// record is given: memory following the tier, not the overlap.
import { describe, expect, it } from 'vitest';
import { checkRecord, mergeSpannedBatches, MergeHeldTooMuch, packCheckedRecords, RecordHasher, type BatchSpan, type CheckedBatch, type VerifyRecord } from '../src/index.js';
import { makeLog } from './log-edits.js';

const log = makeLog({ count: 400, every: 50, withSource: false });
const hasher = new RecordHasher();
const batchOf = (records: VerifyRecord[]) => packCheckedRecords([...records].sort((a, b) => a.seq - b.seq).map((r) => checkRecord(r, hasher)));
/** 40 batches of 10 records each, disjoint, in seq order. */
const batches = Array.from({ length: 40 }, (_, i) => batchOf(log.records.slice(i * 10, i * 10 + 10)));

async function merge(first: (batch: CheckedBatch) => number, heldMax?: number): Promise<{ seqs: number[]; loadedAtFirst: number }> {
  let loaded = 0;
  let loadedAtFirst = -1;
  const seqs: number[] = [];
  const spans: BatchSpan[] = batches.map((batch, order) => ({ order, first: first(batch) }));
  for await (const chunk of mergeSpannedBatches(spans, async (span) => (loaded++, batches[span.order] as CheckedBatch), 2, heldMax)) {
    if (loadedAtFirst < 0 && chunk.length > 0) loadedAtFirst = loaded;
    for (const record of chunk) seqs.push(record.seq);
  }
  return { seqs, loadedAtFirst };
}

describe('mergeSpannedBatches, held records', () => {
  const all = log.records.slice(0, 400).map((record) => record.seq);

  it('with exact spans loads a few batches ahead, and stays within a bound of two batches', async () => {
    const exact = await merge((batch) => batch.seqs[0] as number, 20);
    expect(exact.seqs).toEqual(all);
    expect(exact.loadedAtFirst).toBeLessThanOrEqual(3);
  });

  it('with spans all from seq 0 loads every batch first, and with a bound stops naming what it held', async () => {
    const loose = await merge(() => 0);
    expect(loose.seqs).toEqual(all);
    expect(loose.loadedAtFirst).toBe(40);
    const stopped = merge(() => 0, 100);
    await expect(stopped).rejects.toBeInstanceOf(MergeHeldTooMuch);
    await expect(stopped).rejects.toThrow('the merge held 110 records not given yet, more than 100');
  });
});
