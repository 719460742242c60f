// Goal: verification with the hashing spread over worker threads gives exactly the report of
// the one-thread verifier — for random logs and random single edits, with ranges of several
// sizes, and for every kind of edit placed on the first and on the last record of a range
// (where a worker's batch begins or ends and the fold joins two batches) — and the pool's
// workers are stopped on close, fail their jobs when they die, and refuse a bad job with its
// reason without dying.
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { AuditErrorCode } from '@auditlake/model';
import {
  ChainVerifier,
  CheckedBatchReader,
  checkRecord,
  fieldHash,
  linkCheckedRecords,
  mergeSpannedBatches,
  packCheckedRecords,
  RecordCheckPool,
  RecordHasher,
  verifyInParallel,
  ERASED_MARKER,
  type ChainVerifierOptions,
  type CheckedRecord,
  type VerifyRecord,
  type VerifyReport,
} from '../src/index.js';
import { apply, editArb, FIELD_EDITS, logArb, makeLog, type Edit } from './log-edits.js';

const pool = new RecordCheckPool({ threads: 2 });
afterAll(() => pool.close());

const RANGE_SIZES = [1, 2, 3, 5, 8, 13];

function sorted(records: readonly VerifyRecord[]): VerifyRecord[] {
  return [...records].sort((a, b) => a.seq - b.seq);
}

function verifySequential(records: readonly VerifyRecord[], options: ChainVerifierOptions): VerifyReport {
  const verifier = new ChainVerifier({ startSeq: 1, ...options });
  for (const record of sorted(records)) verifier.add(record);
  return verifier.finish();
}

function verifyParallel(records: readonly VerifyRecord[], options: ChainVerifierOptions, rangeSize: number): Promise<VerifyReport> {
  return verifyInParallel(sorted(records), { startSeq: 1, ...options }, { pool, rangeSize });
}

describe('verify in parallel', () => {
  it('gives the one-thread report for random logs and random single edits, whatever the range size', async () => {
    await fc.assert(
      fc.asyncProperty(logArb, editArb, fc.constantFrom(...RANGE_SIZES), async (spec, edit, rangeSize) => {
        const log = makeLog(spec);
        const untouched = { checkpoints: log.checkpoints.map((checkpoint) => ({ checkpoint, where: 'digest' })) };
        const clean = await verifyParallel(log.records, untouched, rangeSize);
        expect(clean).toEqual(verifySequential(log.records, untouched));
        expect(clean.ok).toBe(true);
        const edited = apply(log, edit);
        const report = await verifyParallel(edited.records, edited.options, rangeSize);
        expect(report).toEqual(verifySequential(edited.records, edited.options));
        expect(report.ok).toBe(false);
      }),
      { numRuns: 150 },
    );
  });

  it('reports an edit of the first or the last record of a range exactly as one thread does', async () => {
    const log = makeLog({ count: 30, every: 7, withSource: true });
    let compared = 0;
    for (const rangeSize of [4, 5, 8]) {
      for (let start = 0; start < log.records.length; start += rangeSize) {
        for (const at of [start, Math.min(start + rangeSize - 1, log.records.length - 1)]) {
          const edits: Edit[] = [
            ...FIELD_EDITS.map((_, which) => ({ kind: 'field' as const, at, which })),
            { kind: 'delete', at },
            { kind: 'swap', at, distance: 1 },
            { kind: 'swap', at, distance: rangeSize },
            { kind: 'conflict', at },
          ];
          for (const edit of edits) {
            const edited = apply(log, edit);
            const sequential = verifySequential(edited.records, edited.options);
            expect(sequential.ok, `${JSON.stringify(edit)} must fail`).toBe(false);
            expect(await verifyParallel(edited.records, edited.options, rangeSize), `${JSON.stringify(edit)}, ranges of ${rangeSize}`).toEqual(sequential);
            compared++;
          }
        }
      }
    }
    expect(compared).toBeGreaterThan(500);
  });

  it('a chain_hash changed on the last record of a range is named as such, not as a break of the next range', async () => {
    const log = makeLog({ count: 20, every: 50, withSource: false });
    const records = log.records.map((r) => (r.seq === 8 ? { ...r, chainHash: '0'.repeat(64) } : r));
    const options = { checkpoints: log.checkpoints.map((checkpoint) => ({ checkpoint, where: 'digest' })) };
    const report = await verifyParallel(records, options, 8);
    expect(report.message).toBe(`altered record at seq 8 (eventId ${records[7]!.eventId}): its chain_hash was changed`);
    expect(report.breaks).toHaveLength(1);
    expect(report).toEqual(verifySequential(records, options));
  });

  it('a link found within a batch from one copy of the record before is not taken for another copy', async () => {
    const log = makeLog({ count: 10, every: 50, withSource: false });
    const genuine = log.records[4]!;
    const forged = { ...genuine, chainHash: '0'.repeat(64) };
    // The forged copy of seq 5 comes first (so the fold goes on from it); seq 6 links from the genuine one.
    const records = [...log.records.slice(0, 4), forged, ...log.records.slice(4)];
    const options = { checkpoints: log.checkpoints.map((checkpoint) => ({ checkpoint, where: 'digest' })) };
    const sequential = verifySequential(records, options);
    expect(sequential.breaks.map((b) => [b.kind, b.seq])).toEqual([
      ['chain', 5],
      ['conflict', 5],
      ['chain', 6],
    ]);
    for (const rangeSize of [3, 6, 20]) expect(await verifyParallel(records, options, rangeSize)).toEqual(sequential);
  });
});

describe('checked batches', () => {
  it('read back exactly the records packed: legacy, altered, integrity and erased ones, links within the batch', () => {
    const log = makeLog({ count: 12, every: 5, withSource: true });
    const records: VerifyRecord[] = log.records.map((r) => ({ ...r }));
    records[3] = { ...records[3]!, query: 'changed' };
    records[5] = { ...records[5]!, recordHash: undefined, chainHash: undefined, fieldCheck: undefined };
    records[7] = { ...records[7]!, query: ERASED_MARKER, erased: { query: fieldHash(records[7]!.query) } };
    const hasher = new RecordHasher();
    const checked = records.map((r) => checkRecord(r, hasher));
    linkCheckedRecords(checked);
    expect(checked.filter((r) => r.linkedFrom !== undefined).length).toBeGreaterThan(5);
    expect(checked[3]!.digest?.content).toBeDefined();
    expect(checked.filter((r) => r.integrity !== undefined).length).toBe(log.checkpoints.length + 1);
    const reader = new CheckedBatchReader(packCheckedRecords(checked));
    const back: CheckedRecord[] = [];
    for (let record = reader.next(); record !== undefined; record = reader.next()) back.push(record);
    expect(back).toEqual(checked);
  });

  it('merge in seq order, copies of one seq in the order of their batches', async () => {
    const log = makeLog({ count: 9, every: 50, withSource: false });
    const hasher = new RecordHasher();
    const batchOf = (records: VerifyRecord[]) => packCheckedRecords(records.map((r) => checkRecord(r, hasher)));
    const odd = log.records.filter((r) => r.seq % 2 === 1);
    const even = log.records.filter((r) => r.seq % 2 === 0);
    const copy = { ...log.records[2]!, eventId: 'the-copy' };
    const batches = [batchOf(odd), batchOf(even), batchOf([copy])];
    const merged: CheckedRecord[] = [];
    for await (const chunk of mergeSpannedBatches(batches.map((batch, order) => ({ order, first: batch.seqs[0]! })), async (span) => batches[span.order]!, 2)) merged.push(...chunk);
    expect(merged.map((r) => r.seq)).toEqual([...log.records.map((r) => r.seq), 3].sort((a, b) => a - b));
    expect(merged.filter((r) => r.seq === 3).map((r) => r.eventId)).toEqual([log.records[2]!.eventId, 'the-copy']);
  });
});

describe('the check pool', () => {
  it('checks records given as JSON lines as it checks them given as values', async () => {
    const log = makeLog({ count: 6, every: 3, withSource: true });
    const a = await pool.check({ records: log.records });
    const b = await pool.check({ jsonLines: log.records.map((r) => JSON.stringify(r)).join('\n') + '\n' });
    expect(b).toEqual(a);
  });

  it('refuses a job whose records are bad with the reason, and the worker goes on', async () => {
    const own = new RecordCheckPool({ threads: 1 });
    try {
      const log = makeLog({ count: 3, every: 50, withSource: false });
      await expect(own.check({ records: [{ ...log.records[0]!, seq: -1 }] })).rejects.toMatchObject({ code: AuditErrorCode.VERIFIER_FAILED, message: expect.stringContaining('seq must be a positive integer') });
      await expect(own.check({ jsonLines: '{not json\n' })).rejects.toMatchObject({ code: AuditErrorCode.VERIFIER_FAILED });
      expect((await own.check({ records: log.records })).count).toBe(log.records.length);
      expect(own.running).toBe(1);
    } finally {
      await own.close();
    }
    expect(own.running).toBe(0);
  });

  it('a worker that dies fails its pending job with AUDIT_VERIFIER_FAILED; the next job starts a new worker', async () => {
    const own = new RecordCheckPool({ threads: 1 });
    try {
      const log = makeLog({ count: 3, every: 50, withSource: false });
      await own.check({ records: log.records });
      const many = Array.from({ length: 200 }, () => log.records).flat();
      const pending = own.check({ records: many });
      await own.crashWorkerForTest(0);
      await expect(pending).rejects.toMatchObject({ code: AuditErrorCode.VERIFIER_FAILED, message: expect.stringContaining('exited') });
      expect(own.running).toBe(0);
      expect((await own.check({ records: log.records })).count).toBe(log.records.length);
      expect(own.running).toBe(1);
    } finally {
      await own.close();
    }
  });

  it('close() fails pending jobs, stops every worker, refuses later jobs, and may be called again', async () => {
    const own = new RecordCheckPool({ threads: 2 });
    const log = makeLog({ count: 3, every: 50, withSource: false });
    const many = Array.from({ length: 500 }, () => log.records).flat();
    const outcomes = [own.check({ records: many }), own.check({ records: many })].map((job) => job.then(() => 'done', (err: unknown) => err));
    expect(own.running).toBe(2);
    await own.close();
    for (const outcome of await Promise.all(outcomes)) expect(outcome).toMatchObject({ code: AuditErrorCode.VERIFIER_FAILED, message: expect.stringContaining('closed') });
    expect(own.running).toBe(0);
    await expect(own.check({ records: log.records })).rejects.toMatchObject({ code: AuditErrorCode.VERIFIER_FAILED, message: expect.stringContaining('closed') });
    await own.close();
  });

  it('refuses a thread count that is not a positive integer', () => {
    expect(() => new RecordCheckPool({ threads: 0 })).toThrow(/threads must be a positive integer/);
  });
});
