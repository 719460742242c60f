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
    await expect(stopped).rejects.toThrow('the merge held batches of 110 records, more than 100');
  });

  it('counts a batch whole until its last record is given, and never stops for one batch alone', async () => {
    // One batch spanning everything (a first record, then the rest far later) held beside the
    // others: the records already given from it still take memory, so they count.
    const spanning = batchOf([...log.records.slice(0, 5), ...log.records.slice(395, 400)]);
    const middle = Array.from({ length: 39 }, (_, i) => batchOf(log.records.slice(5 + i * 10, 15 + i * 10)));
    const all = [spanning, ...middle];
    const run = (heldMax: number) => (async () => {
      const seqs: number[] = [];
      const spans: BatchSpan[] = all.map((batch, order) => ({ order, first: batch.seqs[0] as number }));
      for await (const chunk of mergeSpannedBatches(spans, async (span) => all[span.order] as CheckedBatch, 2, heldMax)) for (const record of chunk) seqs.push(record.seq);
      return seqs;
    })();
    // 10 of the spanning batch and 10 of the next: over 19 once the second joins, whatever was given.
    await expect(run(19)).rejects.toThrow('the merge held batches of 20 records, more than 19');
    expect(await run(20)).toHaveLength(400);
    // A single batch larger than the bound is merged: it alone is what must be held.
    const big = await (async () => {
      const seqs: number[] = [];
      const whole = batchOf(log.records.slice(0, 400));
      for await (const chunk of mergeSpannedBatches([{ order: 0, first: 0 }], async () => whole, 2, 10)) for (const record of chunk) seqs.push(record.seq);
      return seqs;
    })();
    expect(big).toHaveLength(400);
  });
});
