// Goal: a sweep checks that a tier location's newest row is of its own log before writing there (tier-sweeper.ts, #checkLocationHistory); newestParquetRow finds that row, the greatest seq the location holds, by reading the last commit's files — and still finds it once a compaction replaced them, and from a log read from a checkpoint with no commit after it; parquetSeqsAfter names the seqs a location holds past a watermark, which a sweep that takes its watermark from the location records as tier segments.
import type { StoredEvent } from '@auditlake/model';
import { describe, expect, it } from 'vitest';
import { twoDayEvents, useEmbeddedS3 } from '../src/testing/index.js';
import { commitParquetBatch, compactParquetLocation, liveParquetFiles, newestParquetRow, parquetSeqsAfter, ParquetLogCache, readParquetLog, writeParquetCheckpoint, type S3Location } from '../src/index.js';

const BUCKET = 'newest';
const T0 = Date.UTC(2026, 4, 1);
const DAY_MS = 86_400_000;
const CREDENTIALS = { accessKeyId: 'ALNEWESTROW000000001', secretAccessKey: 'newest-row-secret-0123456789abcdefghij' };
const s3 = useEmbeddedS3('newest-row-', BUCKET, CREDENTIALS);

/** Events firstSeq.. over two days (alternating), ingest order = seq order. */
const events = (firstSeq: number, count: number): StoredEvent[] => twoDayEvents(T0, firstSeq, count);

const fence = { term: 1, mayCommit: () => true };

describe('newestParquetRow', () => {
  it('finds the row with the greatest seq: from the last commit, after a compaction replaced its files, and from a checkpoint with no commit after it', async () => {
    const location: S3Location = { bucket: BUCKET, prefix: 'compacted' };
    const objects = s3.connections.bucket('s3', BUCKET);
    expect(await newestParquetRow(objects, await readParquetLog(objects, location))).toBeUndefined();
    for (let c = 0; c < 4; c++) await commitParquetBatch(objects, location, events(1 + c * 20, 20), { term: 1, nowMs: T0, afterSeq: c * 20, mayCommit: () => true });
    const newest = async () => newestParquetRow(objects, await readParquetLog(objects, location));
    expect(await newest()).toMatchObject({ watermark: { seq: 80, ingestTs: T0 + 10 * DAY_MS + 80 }, row: { seq: 80, eventId: 'e80' } });
    // Each day's four files become one: the last commit's files are no longer live.
    expect((await compactParquetLocation({ objects, location, fence, now: Date.now }, 16 * 1024 * 1024)).filesRewritten).toBe(8);
    expect(await newest()).toMatchObject({ watermark: { seq: 80 }, row: { seq: 80, eventId: 'e80' } });
    // A reader starting from a checkpoint of every commit holds no marker after it.
    expect((await writeParquetCheckpoint({ objects, location, fence, now: Date.now, log: new ParquetLogCache() }, 1))?.written).toBe(true);
    const fromCheckpoint = await readParquetLog(objects, location);
    expect(fromCheckpoint.markers).toHaveLength(0);
    expect(await newestParquetRow(objects, fromCheckpoint)).toMatchObject({ watermark: { seq: 80 }, row: { seq: 80, eventId: 'e80' } });
  });

  it('parquetSeqsAfter names the seqs the live files hold in a range, holes left out: from the later markers\' days, after a compaction replaced their files, and from a checkpoint', async () => {
    const location: S3Location = { bucket: BUCKET, prefix: 'seqs' };
    const objects = s3.connections.bucket('s3', BUCKET);
    const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);
    // Three commits: 1..20, then 21..40 without 25..27 (entries its log no longer held), then 41..60.
    await commitParquetBatch(objects, location, events(1, 20), { term: 1, nowMs: T0, afterSeq: 0, mayCommit: () => true });
    await commitParquetBatch(objects, location, events(21, 20).filter((event) => event.seq < 25 || event.seq > 27), { term: 1, nowMs: T0, afterSeq: 20, mayCommit: () => true });
    await commitParquetBatch(objects, location, events(41, 20), { term: 1, nowMs: T0, afterSeq: 40, mayCommit: () => true });
    const seqs = async (after: number, through: number) => parquetSeqsAfter(objects, await readParquetLog(objects, location), after, through);
    const expected = [...range(21, 24), ...range(28, 50)];
    expect(await seqs(20, 50)).toEqual(expected);
    expect((await compactParquetLocation({ objects, location, fence, now: Date.now }, 16 * 1024 * 1024)).filesRewritten).toBe(6);
    expect(await seqs(20, 50)).toEqual(expected);
    expect((await writeParquetCheckpoint({ objects, location, fence, now: Date.now, log: new ParquetLogCache() }, 1))?.written).toBe(true);
    expect(await seqs(20, 50)).toEqual(expected);
    expect(await seqs(60, 80)).toEqual([]);
    // Bounded: more seqs than asked for, or more footers to read than allowed (every live file: the range reaches into the checkpoint), answer undefined.
    const log = await readParquetLog(objects, location);
    const live = liveParquetFiles(log).files.length;
    expect(live).toBeGreaterThan(1);
    expect(await parquetSeqsAfter(objects, log, 20, 50, expected.length - 1)).toBeUndefined();
    expect(await parquetSeqsAfter(objects, log, 20, 50, expected.length)).toEqual(expected);
    expect(await parquetSeqsAfter(objects, log, 20, 50, Infinity, live - 1)).toBeUndefined();
    expect(await parquetSeqsAfter(objects, log, 20, 50, Infinity, live)).toEqual(expected);
  });
});
