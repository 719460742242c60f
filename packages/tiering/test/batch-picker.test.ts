// Goal: batches follow "How tiering picks events": ingest order after the watermark, settle window respected, at most batch.size, same-millisecond groups never split.
import fc from 'fast-check';
import { defaultSettings, parseSettings, resolveConfig, type StoredEvent } from '@auditlake/model';
import { describe, expect, it } from 'vitest';
import { localCleanupPolicy, pickBatch } from '../src/index.js';

function events(ingestTs: number[]): StoredEvent[] {
  return ingestTs.map((ts, i) => ({
    eventId: `e${i}`, userId: 'u', source: 's', action: 'a', resource: '', decision: '', tables: [], query: '', details: '',
    timestamp: ts, ingestTs: ts, seq: i + 1, term: 0,
  }));
}

describe('pickBatch', () => {
  it('takes at most the limit, cutting at a group boundary', () => {
    const picked = pickBatch(events([1, 1, 2, 2, 2, 3]), { batchSizeMax: 4, ingestTsMax: 100 });
    expect(picked.map((e) => e.seq)).toEqual([1, 2]);
  });

  it('takes a first group larger than the limit whole', () => {
    expect(pickBatch(events([5, 5, 5, 5, 6]), { batchSizeMax: 2, ingestTsMax: 100 }).map((e) => e.seq)).toEqual([1, 2, 3, 4]);
  });

  it('stops before the settle window', () => {
    expect(pickBatch(events([1, 2, 3, 9, 10]), { batchSizeMax: 10, ingestTsMax: 8 }).map((e) => e.seq)).toEqual([1, 2, 3]);
  });

  it('stops after the seq every standby holds, before the whole millisecond group it cuts', () => {
    expect(pickBatch(events([1, 2, 3, 4, 5]), { batchSizeMax: 10, ingestTsMax: 100, seqMax: 3 }).map((e) => e.seq)).toEqual([1, 2, 3]);
    expect(pickBatch(events([1, 2, 2, 2, 5]), { batchSizeMax: 10, ingestTsMax: 100, seqMax: 3 }).map((e) => e.seq)).toEqual([1]);
    expect(pickBatch(events([2, 2, 2, 5]), { batchSizeMax: 1, ingestTsMax: 100, seqMax: 2 }).map((e) => e.seq)).toEqual([]);
    expect(pickBatch(events([1, 2, 3]), { batchSizeMax: 10, ingestTsMax: 100, seqMax: 0 })).toEqual([]);
  });

  it('property: a prefix, settled, held by the standbys, within the limit unless one group, never splitting a group', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 4 }), { maxLength: 60 }), fc.integer({ min: 1, max: 10 }), fc.integer({ min: 0, max: 200 }), fc.option(fc.integer({ min: 0, max: 70 }), { nil: undefined }), (steps, limit, settle, seqMax) => {
        let ts = 0;
        const all = events(steps.map((s) => (ts += s)));
        const picked = pickBatch(all, { batchSizeMax: limit, ingestTsMax: settle, ...(seqMax === undefined ? {} : { seqMax }) });
        expect(picked).toEqual(all.slice(0, picked.length));
        expect(picked.every((e) => e.ingestTs <= settle && (seqMax === undefined || e.seq <= seqMax))).toBe(true);
        const groups = new Set(picked.map((e) => e.ingestTs));
        expect(picked.length <= limit || groups.size === 1).toBe(true);
        const next = all[picked.length];
        const last = picked[picked.length - 1];
        if (next && last) expect(next.ingestTs).not.toBe(last.ingestTs);
        // Progress: something settled is always picked, when the standbys hold its whole first group.
        const firstGroup = all.filter((e) => e.ingestTs === all[0]?.ingestTs);
        if (all.length > 0 && all[0]!.ingestTs <= settle && (seqMax === undefined || firstGroup.every((e) => e.seq <= seqMax))) expect(picked.length).toBeGreaterThan(0);
      }),
      { numRuns: 300 },
    );
  });
});

describe('localCleanupPolicy', () => {
  const base = {
    ...parseSettings(defaultSettings(resolveConfig())),
    retentionDays: 90,
    readEnabled: true,
    readSampleRate: 1,
    tierIcebergTable: 'a.b.c',
    tierParquetPath: '',
    tierConnectionId: '',
  };
  const DAY = 86_400_000;
  it('without tiering applies only the absolute cap', () => {
    expect(localCleanupPolicy({ ...base, tierMode: 'none', tierRetainLocalDays: 7 }, 5, 100 * DAY)).toEqual({ cutoffMs: 10 * DAY });
  });
  it('with tiering deletes only tiered events, after the shorter window', () => {
    expect(localCleanupPolicy({ ...base, tierMode: 'parquet', tierRetainLocalDays: 7 }, 5, 100 * DAY)).toEqual({ cutoffMs: 93 * DAY, maxSeq: 5, tieredOnly: true });
    expect(localCleanupPolicy({ ...base, tierMode: 'parquet', tierRetainLocalDays: 0 }, 0, 100 * DAY)).toEqual({ cutoffMs: 100 * DAY, maxSeq: 0, tieredOnly: true });
    expect(localCleanupPolicy({ ...base, retentionDays: 3, tierMode: 'iceberg', tierRetainLocalDays: 7 }, 9, 100 * DAY)).toEqual({ cutoffMs: 97 * DAY, maxSeq: 9, tieredOnly: true });
  });
});
