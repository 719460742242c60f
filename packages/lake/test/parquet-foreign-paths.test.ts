// Goal: a Parquet location's log (commit markers, loose or packed; compaction markers; checkpoints) names only the location's own data files: an entry naming another object of the bucket (another cluster's tier, a marker, a file of another day) is refused with AUDIT_TABLE_INVALID naming the marker and the key, so no reader fetches it with the node's credentials and serves its rows as the location's (a review edited a marker and another cluster's events came back in this node's search).
import type { StoredEvent } from '@auditlake/model';
import { describe, expect, it, onTestFinished } from 'vitest';
import { useEmbeddedS3 } from '../src/testing/index.js';
import {
  checkpointKey,
  COMMITS_DIR,
  commitParquetBatch,
  COMPACTIONS_DIR,
  dataFileFault,
  eventDate,
  ParquetLogCache,
  ParquetTierSource,
  parseCheckpoint,
  writeParquetCheckpoint,
  type ObjectStore,
  type S3Location,
} from '../src/index.js';

const BUCKET = 'pqforeign';
const T0 = Date.UTC(2026, 4, 1);
const CREDENTIALS = { accessKeyId: 'ALPARQUETFOREIGN0001', secretAccessKey: 'parquet-foreign-secret-0123456789abcde' };
const s3 = useEmbeddedS3('parquet-foreign-', BUCKET, CREDENTIALS);
const fence = { term: 1, mayCommit: () => true };

function events(firstSeq: number, count: number, userId = 'ours'): StoredEvent[] {
  return Array.from({ length: count }, (_, i) => {
    const seq = firstSeq + i;
    return { eventId: `${userId}-${seq}`, userId, source: 'trino', action: 'data:Select', resource: 'r', decision: 'ALLOW', tables: ['t'], query: `q${seq}`, details: '', timestamp: T0 + seq, ingestTs: T0 + seq, seq, term: 1 };
  });
}

function source(location: S3Location): ParquetTierSource {
  const tier = new ParquetTierSource(s3.connections, { mode: 'parquet', path: `s3://${location.bucket}/${location.prefix}`, connectionId: 's3' });
  onTestFinished(() => tier.close());
  return tier;
}

/** Our location with one commit, and another cluster's location beside it with one file. */
async function locations(name: string): Promise<{ objects: ObjectStore; ours: S3Location; theirFile: string }> {
  const objects = s3.connections.bucket('s3', BUCKET);
  const ours = { bucket: BUCKET, prefix: `${name}/audit` };
  const theirs = { bucket: BUCKET, prefix: `${name}/other-team` };
  await commitParquetBatch(objects, ours, events(1, 3), { term: 1, nowMs: T0, afterSeq: 0, mayCommit: () => true });
  const their = await commitParquetBatch(objects, theirs, events(1, 2, 'other-cluster-user'), { term: 1, nowMs: T0, afterSeq: 0, mayCommit: () => true });
  return { objects, ours, theirFile: their.marker.files[0]!.key };
}

/** Edits the JSON object at `key` in place, as a writer to the bucket could. */
async function edit(objects: ObjectStore, key: string, change: (value: Record<string, unknown>) => void): Promise<void> {
  const value = JSON.parse(new TextDecoder().decode(await objects.get(key))) as Record<string, unknown>;
  change(value);
  await objects.put(key, JSON.stringify(value));
}

describe('Parquet log entries outside the location', () => {
  it('dataFileFault takes only the location\'s data file names, of their own day', () => {
    const location = { bucket: BUCKET, prefix: 'x/audit' };
    expect(dataFileFault(location, { key: 'x/audit/event_date=2026-05-01/part-0000000000000001-t1-ab.parquet', eventDate: '2026-05-01' })).toBeUndefined();
    expect(dataFileFault(location, { key: 'x/audit/event_date=2026-05-01/compacted-t1-ab-0.parquet', eventDate: '2026-05-01' })).toBeUndefined();
    expect(dataFileFault(location, { key: 'x/audit/event_date=2026-05-01/rewritten-t1-ab-0.parquet' })).toBeUndefined();
    // A day past year 9999, as versions that took such times named it.
    expect(dataFileFault(location, { key: 'x/audit/event_date=+010000-01/part-0000000000000007-t1-ab.parquet', eventDate: '+010000-01' })).toBeUndefined();
    expect(eventDate(Date.UTC(10000, 0, 1))).toBe('+010000-01');
    // A checkpoint folding a compaction of such a day reads too (a third review: its generations were refused).
    const objects = s3.connections.bucket('s3', BUCKET);
    const checkpoint = { format: 'auditlake-parquet-checkpoint/1', watermark: { seq: 5, ingestTs: T0 }, files: [], generations: { '+010000-01': 1, '2026-05-01': 2 }, erasureSeqs: [], replaced: [] };
    expect(parseCheckpoint(objects, location, checkpointKey(location, 5), new TextEncoder().encode(JSON.stringify(checkpoint))).generations).toEqual({ '+010000-01': 1, '2026-05-01': 2 });
    expect(() => parseCheckpoint(objects, location, checkpointKey(location, 5), new TextEncoder().encode(JSON.stringify({ ...checkpoint, generations: { '2026-5-1': 1 } })))).toThrow(/generation of 2026-5-1 is not a day's count/);
    expect(dataFileFault(location, { key: 'x/other-team/event_date=2026-05-01/part-1.parquet', eventDate: '2026-05-01' })).toMatch(/which is not under the location/);
    expect(dataFileFault(location, { key: 'x/audit-old/event_date=2026-05-01/part-1.parquet', eventDate: '2026-05-01' })).toMatch(/not under the location/);
    expect(dataFileFault(location, { key: `x/audit/${COMMITS_DIR}/0000000000000000.json`, eventDate: '2026-05-01' })).toMatch(/not one of the location's data files/);
    expect(dataFileFault(location, { key: 'x/audit/event_date=2026-05-01/../../other-team/part-1.parquet', eventDate: '2026-05-01' })).toMatch(/not one of the location's data files/);
    expect(dataFileFault(location, { key: 'x/audit/event_date=2026-05-01/part-1.parquet', eventDate: '2026-05-02' })).toMatch(/as a file of "2026-05-02"/);
    expect(dataFileFault(location, { key: 42 })).toMatch(/names 42, which is not a key/);
    // A location at the bucket's root: every key is under it, only data file names pass.
    expect(dataFileFault({ bucket: BUCKET, prefix: '' }, { key: 'event_date=2026-05-01/part-1.parquet', eventDate: '2026-05-01' })).toBeUndefined();
    expect(dataFileFault({ bucket: BUCKET, prefix: '' }, { key: 'finance/ledger.parquet' })).toMatch(/not one of the location's data files/);
  });

  it('refuses a commit marker naming another cluster\'s file, and never reads it', async () => {
    const { objects, ours, theirFile } = await locations('commit');
    const markerKey = `${ours.prefix}/${COMMITS_DIR}/0000000000000000.json`;
    expect((await source(ours).listFiles()).map((f) => f.key)).not.toContain(theirFile);
    await edit(objects, markerKey, (marker) => (marker['files'] as unknown[]).push({ key: theirFile, eventDate: '2026-05-01', rows: 2, bytes: 1000, tsMin: T0, tsMax: T0 + 2 }));
    await expect(source(ours).listFiles()).rejects.toMatchObject({
      code: 'AUDIT_TABLE_INVALID',
      message: expect.stringContaining(`the commit marker ${objects.url(markerKey)} names ${theirFile}, which is not under the location`),
    });
  });

  it('refuses such a marker written after a reader first read the log, when that reader reads on (a second review: only first reads were checked)', async () => {
    const { objects, ours, theirFile } = await locations('incremental');
    const reader = source(ours);
    expect(await reader.listFiles()).toHaveLength(1);
    const next = await commitParquetBatch(objects, ours, events(4, 1), { term: 1, nowMs: T0, afterSeq: 3, mayCommit: () => true });
    const markerKey = `${ours.prefix}/${COMMITS_DIR}/0000000000000003.json`;
    expect(next.marker.files).toHaveLength(1);
    await edit(objects, markerKey, (marker) => (marker['files'] as unknown[]).push({ key: theirFile, eventDate: '2026-05-01', rows: 2, bytes: 1000, tsMin: T0, tsMax: T0 + 2 }));
    await expect(reader.listFiles()).rejects.toMatchObject({ code: 'AUDIT_TABLE_INVALID', message: expect.stringContaining(`the commit marker ${objects.url(markerKey)} names ${theirFile}`) });
  });

  it('refuses a compaction marker and a checkpoint naming another cluster\'s file', async () => {
    const compacted = await locations('compaction');
    const forged = { key: compacted.theirFile, eventDate: '2026-05-01', rows: 2, bytes: 1000, tsMin: T0, tsMax: T0 + 2 };
    const compactionKey = `${compacted.ours.prefix}/${COMPACTIONS_DIR}/2026-05-01/0000000000000001.json`;
    await compacted.objects.put(compactionKey, JSON.stringify({ format: 'auditlake-parquet-compaction/1', term: 1, committedAtMs: T0, eventDate: '2026-05-01', generation: 1, replaced: [], files: [forged] }));
    await expect(source(compacted.ours).listFiles()).rejects.toMatchObject({ code: 'AUDIT_TABLE_INVALID', message: expect.stringContaining(`the compaction marker ${compacted.objects.url(compactionKey)} names ${compacted.theirFile}`) });

    const checkpointed = await locations('checkpoint');
    const written = await writeParquetCheckpoint({ objects: checkpointed.objects, location: checkpointed.ours, fence, now: () => T0, log: new ParquetLogCache() }, 1);
    expect(written).toBeDefined();
    const key = checkpointKey(checkpointed.ours, 3);
    await edit(checkpointed.objects, key, (checkpoint) => (checkpoint['files'] as unknown[]).push({ ...forged, key: checkpointed.theirFile }));
    await expect(source(checkpointed.ours).listFiles()).rejects.toMatchObject({ code: 'AUDIT_TABLE_INVALID', message: expect.stringContaining(`names ${checkpointed.theirFile}, which is not under the location`) });
    // Nor may its replaced files (deleted once their grace is over) name anything else.
    await edit(checkpointed.objects, key, (checkpoint) => {
      (checkpoint['files'] as unknown[]).pop();
      (checkpoint['replaced'] as unknown[]).push({ key: `${checkpointed.ours.prefix}/${COMMITS_DIR}/0000000000000000.json`, committedAtMs: T0 });
    });
    await expect(source(checkpointed.ours).listFiles()).rejects.toMatchObject({ code: 'AUDIT_TABLE_INVALID', message: expect.stringMatching(/a replaced file names .*_auditlake\/commits\/0000000000000000\.json, which is not one of the location's data files/) });
  });
});
