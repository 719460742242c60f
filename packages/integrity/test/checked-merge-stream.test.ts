// Goal: the merges that read a tier without holding it give exactly what the merge of all its
// batches at once gives — the records in the same order, copies of one seq in the order of
// their batches, the same first identical copy — whatever the batches, and the merge of
// batches loaded as it reaches them loads only a few ahead, from each batch's least seq or any
// bound below it, and refuses a batch that starts below its bound.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  checkRecord,
  feedMergedStreams,
  IdenticalCopyWatch,
  mergeSpannedBatches,
  packCheckedRecords,
  RecordHasher,
  CheckedBatchReader,
  type CheckedBatch,
  type CheckedRecord,
  type VerifyRecord,
} from '../src/index.js';
import { makeLog } from './log-edits.js';
import { inMergeOrder } from './merge-order.js';

/**
 * The reference IdenticalCopyWatch must agree with (what verify used before it read tiers
 * as streams): the least seq that the batches (one copy of the history: a tier location's files) hold more
 * than once as identical records, with its eventId; undefined when none. Two different records
 * under one seq are left to the verifier, which names them a conflict.
 */
function firstIdenticalCopy(batches: readonly CheckedBatch[]): { seq: number; eventId: string } | undefined {
  let total = 0;
  for (const batch of batches) total += batch.count;
  const seqs = new Float64Array(total);
  let at = 0;
  for (const batch of batches) {
    seqs.set(batch.seqs.subarray(0, batch.count), at);
    at += batch.count;
  }
  seqs.sort();
  const repeated: number[] = [];
  for (let i = 1; i < seqs.length; i++) if (seqs[i] === seqs[i - 1] && seqs[i] !== repeated.at(-1)) repeated.push(seqs[i] as number);
  if (repeated.length === 0) return undefined;
  // Rare: the records under the repeated seqs are read again to tell copies from conflicts.
  const copies = new Map<number, CheckedRecord[]>(repeated.map((seq) => [seq, []]));
  for (const batch of batches) {
    const reader = new CheckedBatchReader(batch);
    for (let record = reader.next(); record !== undefined; record = reader.next()) copies.get(record.seq)?.push(record);
  }
  for (const seq of repeated) {
    const [first, ...others] = copies.get(seq) as CheckedRecord[];
    if (first !== undefined && others.some((other) => other.chainHash === first.chainHash && other.digest?.recordHash === first.digest?.recordHash)) return { seq, eventId: first.eventId };
  }
  return undefined;
}

const log = makeLog({ count: 40, every: 50, withSource: false });
const hasher = new RecordHasher();
const batchOf = (records: VerifyRecord[]) => packCheckedRecords([...records].sort((a, b) => a.seq - b.seq).map((r) => checkRecord(r, hasher)));
/** Each batch's picks of the log's records (a record picked in several batches is copied). */
const batchesArb = fc.array(fc.array(fc.integer({ min: 0, max: 39 }), { maxLength: 12 }), { minLength: 1, maxLength: 8 });

async function collect(chunks: AsyncIterable<CheckedRecord[]>): Promise<CheckedRecord[]> {
  const records: CheckedRecord[] = [];
  for await (const chunk of chunks) records.push(...chunk);
  return records;
}

describe('merging without holding every batch', () => {
  it('batches loaded as the merge reaches them give the merge of all of them, loading at most `lookahead` ahead', async () => {
    await fc.assert(
      fc.asyncProperty(batchesArb, fc.integer({ min: 1, max: 3 }), fc.boolean(), fc.array(fc.nat({ max: 5 }), { minLength: 8, maxLength: 8 }), async (picks, lookahead, distinct, slack) => {
        // Copies in different batches differ by eventId when `distinct` (conflicts), else are identical.
        const batches = picks.map((pick, b) => batchOf(pick.map((i) => (distinct ? { ...log.records[i]!, eventId: `${log.records[i]!.eventId}-${b}` } : log.records[i]!))));
        // Each span's first seq a bound at or below the batch's least (a commit's declared
        // bounds), some exact; an empty batch with any bound (a file without chained records).
        const spans = batches.map((batch, order) => ({ order, first: (batch.count === 0 ? 1 : batch.seqs[0]!) - slack[order]! }));
        let loading = 0;
        let loadingMax = 0;
        const load = async (span: { order: number }): Promise<CheckedBatch> => {
          loadingMax = Math.max(loadingMax, ++loading);
          await new Promise((resolve) => setImmediate(resolve));
          loading--;
          return batches[span.order]!;
        };
        const merged = await collect(mergeSpannedBatches(spans, load, lookahead));
        expect(merged).toEqual(inMergeOrder(batches));
        expect(loadingMax).toBeLessThanOrEqual(lookahead);
        // As streams (each batch one), copies of one seq in the order of the streams.
        const fed: CheckedRecord[] = [];
        const streams = batches.map((batch) => chunksOf(inMergeOrder([batch])));
        await feedMergedStreams(streams, (record) => fed.push(record));
        expect(fed).toEqual(merged);
        // The first identical copy, found as the records pass.
        const watch = new IdenticalCopyWatch();
        let found: { seq: number; eventId: string } | undefined;
        for (const record of merged) found ??= watch.see(record);
        expect(found).toEqual(firstIdenticalCopy(batches));
      }),
      { numRuns: 200 },
    );
  });

  it('a batch that starts below its span fails the merge: records above it may have been given', async () => {
    const batches = [0, 10, 20].map((from) => batchOf(log.records.slice(from, from + 10)));
    const spans = batches.map((batch, order) => ({ order, first: batch.seqs[0]! + (order === 1 ? 1 : 0) }));
    await expect(collect(mergeSpannedBatches(spans, async (span) => batches[span.order]!, 2))).rejects.toThrow(`batch 1 starts at seq ${batches[1]!.seqs[0]}, below its span's ${batches[1]!.seqs[0]! + 1}`);
  });

  it('a failed load fails the merge once no other load is running', async () => {
    const batches = [0, 10, 20, 30].map((from) => batchOf(log.records.slice(from, from + 10)));
    const spans = batches.map((batch, order) => ({ order, first: batch.seqs[0]! }));
    let running = 0;
    let runningAtFailure: number | undefined;
    const load = async (span: { order: number }): Promise<CheckedBatch> => {
      running++;
      try {
        await new Promise((resolve) => setTimeout(resolve, span.order === 1 ? 1 : 20));
        if (span.order === 1) throw new Error('refused');
        return batches[span.order]!;
      } finally {
        running--;
      }
    };
    await expect(
      collect(mergeSpannedBatches(spans, load, 3)).catch((err: unknown) => {
        runningAtFailure = running;
        throw err;
      }),
    ).rejects.toThrow('refused');
    expect(runningAtFailure).toBe(0);
  });
});

/** Records as a stream of chunks of one or two records. */
async function* chunksOf(records: CheckedRecord[]): AsyncGenerator<CheckedRecord[]> {
  for (let i = 0; i < records.length; i += 2) yield records.slice(i, i + 2);
}
